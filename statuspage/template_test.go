package statuspage

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestPageShowsTicksNotRunByReason: the counts of a job's ticks not run
// are shown by reason, in the order of cronx.Reasons, and "none" without.
func TestPageShowsTicksNotRunByReason(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	snap := &Snapshot{Prefix: "/baton", Schedulers: []Scheduler{{Name: "crontab", Jobs: []Job{
		{Name: "report", Spec: "@hourly", NotRun: map[string]int{"paused": 2, "no_leader": 1}},
		{Name: "sweep", Spec: "@hourly"},
	}}}}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, view{Prefix: "/baton", At: now, Snapshot: snap}); err != nil {
		t.Fatal(err)
	}
	body := buf.String()
	report := body[strings.Index(body, `data-job="report"`):strings.Index(body, `data-job="sweep"`)]
	if want := `<td class="notrun"><ul><li><span class="failed">1</span> no_leader</li><li><span class="failed">2</span> paused</li></ul></td>`; !strings.Contains(report, want) {
		t.Errorf("report's row lacks %q:\n%s", want, report)
	}
	sweep := body[strings.Index(body, `data-job="sweep"`):]
	if want := `<td class="notrun"><span class="none">none</span></td>`; !strings.Contains(sweep, want) {
		t.Errorf("sweep's row lacks %q:\n%s", want, sweep)
	}
	if strings.Contains(body, `http-equiv="refresh"`) {
		t.Error("a page with Refresh 0 reloads itself")
	}
}

// TestPageShowsNoCommandLine: a run's error, which may hold a command
// line, is shown cut to one short line, and in no attribute either.
func TestPageShowsNoCommandLine(t *testing.T) {
	secret := "sh -c ./deploy --token=" + strings.Repeat("é", 100)
	snap := &Snapshot{Prefix: "/baton", Schedulers: []Scheduler{{Name: "crontab", Jobs: []Job{
		{Name: "deploy", Spec: "@hourly", History: []Run{{Tick: time.Now(), Instance: "web-1", Error: "start " + secret + ": argument list too long"}}},
	}}}}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, view{Prefix: "/baton", At: time.Now(), Snapshot: snap}); err != nil {
		t.Fatal(err)
	}
	body := buf.String()
	if strings.Contains(body, "title=") || strings.Contains(body, "éééééééééééééééééééééééééééé") {
		t.Errorf("the page shows the command line:\n%s", body)
	}
	if !strings.Contains(body, "failed: start sh -c ./deploy --token=") || !utf8.ValidString(body) {
		t.Errorf("the page does not show the start of the error, or cuts a character:\n%s", body)
	}
}

func TestWhen(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{2 * time.Second, "in 2s"},
		{-90 * time.Second, "2m ago"},
		{15 * time.Hour, "in 15h"},
		{15*time.Hour + 20*time.Minute, "in 15h20m"},
		{-72 * time.Hour, "3d ago"},
	} {
		if got := when(now.Add(tc.d), now); got != tc.want {
			t.Errorf("when(now%+v) = %q, want %q", tc.d, got, tc.want)
		}
	}
	if got := when(time.Time{}, now); got != "" {
		t.Errorf("when(zero) = %q, want empty", got)
	}
}
