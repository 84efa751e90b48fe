package statuspage

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
)

// TestAnEndedJobIsShownAsSuch: a job at its maximum of runs is shown done,
// one past its end time ended, both with no next run; one before its start
// has its first tick at the start; a job with bounds yet to come runs on.
func TestAnEndedJobIsShownAsSuch(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)
	jobs := []Job{
		newJob(cronx.JobStatus{Name: "thrice", Spec: "0 * * * *", Runs: 3, MaxRuns: 3}, now),
		newJob(cronx.JobStatus{Name: "until", Spec: "0 * * * *", Runs: 5, EndAt: now.Add(-time.Hour)}, now),
		newJob(cronx.JobStatus{Name: "soon", Spec: "0 * * * *", Runs: 1, EndAt: now.Add(20 * time.Minute)}, now),
		newJob(cronx.JobStatus{Name: "later", Spec: "0 * * * *", Runs: 1, StartAt: now.Add(48 * time.Hour)}, now),
		newJob(cronx.JobStatus{Name: "onward", Spec: "0 * * * *", Runs: 1, MaxRuns: 3}, now),
	}
	for _, tc := range []struct {
		job   Job
		ended string
		next  time.Time
	}{
		{jobs[0], "done: 3 of 3 runs", time.Time{}},
		{jobs[1], "ended 2026-03-02T08:30:00Z", time.Time{}},
		{jobs[2], "", time.Time{}}, // its next tick, at 10:00, is past its end
		{jobs[3], "", now.Add(48 * time.Hour).Truncate(time.Hour).Add(time.Hour)},
		{jobs[4], "", now.Truncate(time.Hour).Add(time.Hour)},
	} {
		if got := tc.job.EndedAs(); got != tc.ended || !tc.job.Next.Equal(tc.next) {
			t.Errorf("%s: ended %q next %v, want %q and %v", tc.job.Name, got, tc.job.Next, tc.ended, tc.next)
		}
	}
	snap := &Snapshot{Prefix: "/baton", Schedulers: []Scheduler{{Name: "crontab", Jobs: jobs}}}
	var page bytes.Buffer
	if err := pageTemplate.Execute(&page, view{Prefix: "/baton", At: now, Snapshot: snap}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<td class="next"><span class="ended">done: 3 of 3 runs</span></td>`, `<td class="next"><span class="ended">ended 2026-03-02T08:30:00Z</span></td>`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	var text bytes.Buffer
	if err := snap.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"done: 3 of 3 runs", "ended 2026-03-02T08:30:00Z"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("baton status lacks %q:\n%s", want, text.String())
		}
	}
}
