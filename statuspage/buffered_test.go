package statuspage

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestBufferedTicksAreShown: the ticks of a BufferOne or BufferAll job that
// wait for the run in progress are counted, from the oldest, on the page
// and in baton status's table.
func TestBufferedTicksAreShown(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	oldest := now.Add(-2 * time.Minute)
	snap := &Snapshot{Prefix: "/baton", Schedulers: []Scheduler{{Name: "crontab", Jobs: []Job{
		{Name: "report", Spec: "@every 1m", Running: []string{"web-1"}, Buffered: []time.Time{oldest, now.Add(-time.Minute)}},
		{Name: "sweep", Spec: "@hourly"},
	}}}}
	var page bytes.Buffer
	if err := pageTemplate.Execute(&page, view{Prefix: "/baton", At: now, Snapshot: snap}); err != nil {
		t.Fatal(err)
	}
	body := page.String()
	report := body[strings.Index(body, `data-job="report"`):strings.Index(body, `data-job="sweep"`)]
	if want := `<span class="buffered">2 buffered, from ` + stamp(oldest) + `</span>`; !strings.Contains(report, want) {
		t.Errorf("report's row lacks %q:\n%s", want, report)
	}
	if strings.Contains(body[strings.Index(body, `data-job="sweep"`):], "buffered") {
		t.Error("sweep, with no tick waiting, is shown with buffered ticks")
	}
	var text bytes.Buffer
	snap.writeJobs(&text)
	if want := "web-1 (2 buffered, from " + local(oldest) + ")"; !strings.Contains(text.String(), want) {
		t.Errorf("baton status's table lacks %q:\n%s", want, text.String())
	}
}
