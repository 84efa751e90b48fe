package statuspage

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
)

// TestStripDrawsTheLastDay: a job's strip has a mark at each run of the
// last day that the history holds, green or red with its time, replica and
// error on hover, and an amber band over each hour with ticks not run,
// with the counts by reason on hover; what is older than a day is not
// drawn.
func TestStripDrawsTheLastDay(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	j := newJob(cronx.JobStatus{Name: "report", Spec: "@hourly", History: []cronx.Record{
		{Tick: now.Add(-30 * time.Hour), Instance: "web-1"},
		{Tick: now.Add(-12 * time.Hour), Instance: "web-1", Duration: time.Second},
		{Tick: now.Add(-time.Hour), Instance: "web-2", Error: "exit status 3"},
	}, NotRunHours: []cronx.NotRunHour{
		{Hour: now.Add(-26 * time.Hour), Counts: map[cronx.Reason]int{cronx.ReasonPaused: 9}},
		{Hour: now.Add(-6 * time.Hour), Counts: map[cronx.Reason]int{cronx.ReasonPaused: 2, cronx.ReasonOverlap: 1}},
	}}, now)
	snap := &Snapshot{Prefix: "/baton", Schedulers: []Scheduler{{Name: "crontab", Jobs: []Job{j}}}}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, view{Prefix: "/baton", At: now, Snapshot: snap}); err != nil {
		t.Fatal(err)
	}
	body := buf.String()
	rect := regexp.MustCompile(`<rect class="strip-(\w+)" x="(\d+)" y="0" width="(\d+)" height="18" fill="[^"]+"><title>([^<]*)</title></rect>`)
	var got []string
	for _, m := range rect.FindAllStringSubmatch(body, -1) {
		got = append(got, strings.Join(m[1:], " | "))
	}
	hour := func(d time.Duration) string { return now.Add(d).Local().Format("15:04") }
	want := []string{
		"day | 0 | 288 | last day: 1 ran, 1 failed (of the runs kept), 3 not run",
		fmt.Sprintf("notrun | 216 | 12 | %s–%s: 3 not run: overlap 1, paused 2", hour(-6*time.Hour), hour(-5*time.Hour)),
		"ok | 144 | 3 | " + stamp(now.Add(-12*time.Hour)) + " · web-1 · ok · 1s",
		"failed | 276 | 3 | " + stamp(now.Add(-time.Hour)) + " · web-2 · failed: exit status 3 · 0s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the strip's shapes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(body, `<svg class="strip" width="288" height="18" viewBox="0 0 288 18" role="img" aria-label="last day: 1 ran, 1 failed (of the runs kept), 3 not run">`) {
		t.Errorf("no strip's svg in:\n%s", body)
	}
}

// thousandJobs is a snapshot of a thousand jobs, each with a full history
// and ticks not run in every hour of the day.
func thousandJobs(now time.Time) *Snapshot {
	var jobs []Job
	for i := range 1000 {
		st := cronx.JobStatus{Name: fmt.Sprintf("job-%04d", i), Spec: "*/5 * * * *", LastTick: now.Add(-time.Minute)}
		for k := range 10 {
			r := cronx.Record{Tick: now.Add(-time.Duration(k*5+1) * time.Minute), Instance: "web-1", Duration: time.Second}
			if k%3 == 0 {
				r.Error = "exit status 1"
			}
			st.History = append([]cronx.Record{r}, st.History...)
		}
		for h := range 24 {
			st.NotRunHours = append(st.NotRunHours, cronx.NotRunHour{Hour: now.Truncate(time.Hour).Add(-time.Duration(23-h) * time.Hour),
				Counts: map[cronx.Reason]int{cronx.ReasonPaused: 3, cronx.ReasonNoLeader: 1}})
		}
		jobs = append(jobs, newJob(st, now))
	}
	return &Snapshot{Prefix: "/baton", Schedulers: []Scheduler{{Name: "crontab", Jobs: jobs}}}
}

// BenchmarkPageOfAThousandJobs renders the page of a thousand jobs, each
// with its strip of ten runs and twenty-four hours of ticks not run.
func BenchmarkPageOfAThousandJobs(b *testing.B) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	snap := thousandJobs(now)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := pageTemplate.Execute(&buf, view{Prefix: "/baton", At: now, Snapshot: snap}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes/page")
}
