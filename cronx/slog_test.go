package cronx

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestSlogLoggerLevels(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := SlogLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	l.Info("wake", "now", 1)
	if buf.Len() != 0 {
		t.Fatalf("routine message logged above debug: %s", buf.String())
	}
	notice(l, "cronx: leading", "scheduler", "s")
	if out := buf.String(); !strings.Contains(out, `level=INFO msg="cronx: leading" scheduler=s`) {
		t.Fatalf("a notice is not at info level: %q", out)
	}
	buf.Reset()
	l.Error(errors.New("boom"), "panic", "job", "report")
	out := buf.String()
	for _, want := range []string{"level=ERROR", "msg=panic", "err=boom", "job=report"} {
		if !strings.Contains(out, want) {
			t.Errorf("error line %q lacks %q", out, want)
		}
	}
}
