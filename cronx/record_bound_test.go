package cronx

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestRecordedErrorIsBounded: a run's error as long as a command line of
// 100 KiB is recorded cut to maxRecordedError bytes, on a character's
// boundary; a short one is recorded whole.
func TestRecordedErrorIsBounded(t *testing.T) {
	rc := &recorder{co: &coordinator{scope: &scope{identity: "web-1"}}}
	long := "start sh -c " + strings.Repeat("é", 50<<10)
	rec := rc.record1(finishItem{err: errors.New(long)})
	if len(rec.Error) > maxRecordedError || !utf8.ValidString(rec.Error) ||
		!strings.HasSuffix(rec.Error, "...") || !strings.HasPrefix(long, strings.TrimSuffix(rec.Error, "...")) {
		t.Errorf("recorded %d bytes (valid UTF-8: %v): %.80q", len(rec.Error), utf8.ValidString(rec.Error), rec.Error)
	}
	if rec := rc.record1(finishItem{err: errors.New("exit status 3")}); rec.Error != "exit status 3" {
		t.Errorf("a short error is recorded as %q", rec.Error)
	}
}
