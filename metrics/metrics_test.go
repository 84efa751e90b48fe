package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// value reads the metric name with exactly labels from reg: a counter's or
// a gauge's value, a histogram's count of samples; -1 when absent.
func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			same := len(m.GetLabel()) == len(labels)
			for _, l := range m.GetLabel() {
				same = same && labels[l.GetName()] == l.GetValue()
			}
			if !same {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return -1
}

// waitValue waits until cond holds of the metric's value.
func waitValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string, what string, cond func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v := value(t, reg, name, labels)
		if cond(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v: want %s", name, labels, v, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func atLeast1(v float64) bool { return v >= 1 }

// TestMetricsOfARealScheduler runs a leader-mode Cron on embedded etcd with
// a job that succeeds, one that fails and one that is paused, and reads the
// metrics a Prometheus server would scrape.
func TestMetricsOfARealScheduler(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	reg := prometheus.NewRegistry()
	obs, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	c := cronx.New(cronx.WithSeconds(), cronx.WithEtcd(cli), cronx.WithName("m"), cronx.WithObserver(obs),
		cronx.WithElection(election.WithIdentity("a"), election.WithTTL(2*time.Second)))
	for name, job := range map[string]func(context.Context) error{
		"ok":     func(context.Context) error { return nil },
		"bad":    func(context.Context) error { return errors.New("boom") },
		"paused": func(context.Context) error { return nil },
	} {
		if _, err := c.AddJob("* * * * * *", cronx.Named(name, cronx.ContextFunc(job))); err != nil {
			t.Fatal(err)
		}
	}
	c.Start()
	stopped := false
	defer func() {
		if !stopped {
			<-c.Stop().Done()
		}
	}()

	sched := map[string]string{"scheduler": "m"}
	waitValue(t, reg, "baton_scheduler_leader", sched, "1 while leading", func(v float64) bool { return v == 1 })
	waitValue(t, reg, "baton_scheduler_leadership_changes_total", map[string]string{"scheduler": "m", "change": "gained"}, "1", func(v float64) bool { return v == 1 })
	waitValue(t, reg, "baton_job_runs_total", map[string]string{"scheduler": "m", "job": "ok", "outcome": "success"}, "≥ 1", atLeast1)
	waitValue(t, reg, "baton_job_runs_total", map[string]string{"scheduler": "m", "job": "bad", "outcome": "failure"}, "≥ 1", atLeast1)
	if err := c.Pause(context.Background(), "paused"); err != nil {
		t.Fatal(err)
	}
	waitValue(t, reg, "baton_job_ticks_not_run_total", map[string]string{"scheduler": "m", "job": "paused", "reason": "paused"}, "≥ 1", atLeast1)
	for _, h := range []string{"baton_job_run_duration_seconds", "baton_job_tick_lateness_seconds", "baton_claim_latency_seconds"} {
		waitValue(t, reg, h, sched, "samples", atLeast1)
	}
	waitValue(t, reg, "baton_etcd_session_up", sched, "1", func(v float64) bool { return v == 1 })
	if v := value(t, reg, "baton_job_runs_total", map[string]string{"scheduler": "m", "job": "ok", "outcome": "failure"}); v > 0 {
		t.Errorf("job ok counted %v failures", v)
	}
	// The outcomes etcd has, from the runs' records.
	waitValue(t, reg, "baton_job_last_success_timestamp_seconds", map[string]string{"scheduler": "m", "job": "ok"}, "a time", func(v float64) bool { return v > 1e9 })
	waitValue(t, reg, "baton_job_last_failure_timestamp_seconds", map[string]string{"scheduler": "m", "job": "bad"}, "a time", func(v float64) bool { return v > 1e9 })
	waitValue(t, reg, "baton_job_consecutive_failures", map[string]string{"scheduler": "m", "job": "bad"}, "≥ 1", atLeast1)
	for _, job := range []string{"ok", "bad"} {
		if v := value(t, reg, "baton_job_period_seconds", map[string]string{"scheduler": "m", "job": job}); v != 1 {
			t.Errorf("job %s: period %vs, want 1s", job, v)
		}
	}
	for job, name := range map[string]string{"ok": "baton_job_last_failure_timestamp_seconds", "bad": "baton_job_last_success_timestamp_seconds"} {
		if v := value(t, reg, name, map[string]string{"scheduler": "m", "job": job}); v != 0 {
			t.Errorf("job %s: %s %v, want 0 (none)", job, name, v)
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}

	<-c.Stop().Done()
	stopped = true
	waitValue(t, reg, "baton_scheduler_leader", sched, "0 once stopped", func(v float64) bool { return v == 0 })
	waitValue(t, reg, "baton_scheduler_leadership_changes_total", map[string]string{"scheduler": "m", "change": "lost"}, "1", func(v float64) bool { return v == 1 })
}

// TestDroppedEventsAreCounted: events an observer's full queue dropped are
// counted.
func TestDroppedEventsAreCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	obs, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	obs.OnDropped(3)
	if v := value(t, reg, "baton_observer_events_dropped_total", map[string]string{}); v != 3 {
		t.Errorf("baton_observer_events_dropped_total = %v, want 3", v)
	}
}

// TestNewTwiceOnOneRegistryShares: a second New on a registry reuses its
// metrics; a registry with a different metric of one of the names is an
// error, as is a nil one.
func TestNewTwiceOnOneRegistryShares(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(reg)
	if err != nil {
		t.Fatalf("second New on one registry: %v", err)
	}
	a.OnTickNotRun(cronx.TickNotRun{Scheduler: "s", Job: "j", Reason: cronx.ReasonPaused})
	b.OnTickNotRun(cronx.TickNotRun{Scheduler: "s", Job: "j", Reason: cronx.ReasonPaused})
	if v := value(t, reg, "baton_job_ticks_not_run_total", map[string]string{"scheduler": "s", "job": "j", "reason": "paused"}); v != 2 {
		t.Errorf("two observers of one registry counted %v, want 2", v)
	}

	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "baton_job_runs_total", Help: "not ours"}))
	if _, err := New(clash); err == nil {
		t.Error("New on a registry with a different baton_job_runs_total: no error")
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil): no error")
	}
}

// TestEveryReasonIsALabel: each reason has its own label value.
func TestEveryReasonIsALabel(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range cronx.Reasons() {
		s := r.String()
		if seen[s] || s == "unknown" {
			t.Errorf("reason %d: label %q", int(r), s)
		}
		seen[s] = true
	}
	if fmt.Sprint(len(seen)) != "10" {
		t.Errorf("%d reasons, want 10", len(seen))
	}
}

// TestObserverPanicsAreCounted: a panic of another observer of the Cron is
// counted, by scheduler.
func TestObserverPanicsAreCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	obs, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	panicky := cronx.Observer{OnJobAdded: func(cronx.JobAdded) { panic("boom") }}
	c := cronx.New(cronx.WithObserver(obs, panicky), cronx.WithLogger(cronx.PrintfLogger(nopPrintf{})))
	for _, spec := range []string{"@yearly", "@monthly"} {
		if _, err := c.AddFunc(spec, func() {}); err != nil {
			t.Fatal(err)
		}
	}
	waitValue(t, reg, "baton_observer_panics_total", map[string]string{"scheduler": ""}, "2", func(v float64) bool { return v == 2 })
}

type nopPrintf struct{}

func (nopPrintf) Printf(string, ...any) {}

// TestRunsAtStartAreCounted: a job that runs at start has its counter of
// runs at start asked for at 0 from its registration, one that does not
// has none, and each run asked for counts.
func TestRunsAtStartAreCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	obs, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	obs.OnJobAdded(cronx.JobAdded{Scheduler: "s", Job: "migrate", Coordinated: true, RunsAtStart: true})
	obs.OnJobAdded(cronx.JobAdded{Scheduler: "s", Job: "report", Coordinated: true})
	migrate := map[string]string{"scheduler": "s", "job": "migrate"}
	if v := value(t, reg, "baton_job_start_runs_asked_total", migrate); v != 0 {
		t.Errorf("born at %v, want 0", v)
	}
	if n := seriesCount(t, reg, "baton_job_start_runs_asked_total"); n != 1 {
		t.Errorf("%d series, want migrate's alone", n)
	}
	obs.OnStartAsked(cronx.StartAsked{Scheduler: "s", Job: "migrate", Release: "r2"})
	if v := value(t, reg, "baton_job_start_runs_asked_total", migrate); v != 1 {
		t.Errorf("%v after one run asked for, want 1", v)
	}
}

// seriesCount counts the series of the metric name.
func seriesCount(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}
