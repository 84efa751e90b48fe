package metrics

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/prometheus/client_golang/prometheus"
)

// series returns name's series whose labels include match, as
// "label=value → metric value" of label.
func series(t *testing.T, reg *prometheus.Registry, name string, match map[string]string, label string) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				if want, ok := match[l.GetName()]; ok && want != l.GetValue() {
					continue metrics
				}
				if l.GetName() == label {
					key = l.GetValue()
				}
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			out = append(out, fmt.Sprintf("%s=%v", key, v))
		}
	}
	slices.Sort(out)
	return out
}

// atZero is each of keys at 0, as series says it.
func atZero(keys ...string) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k+"=0")
	}
	slices.Sort(out)
	return out
}

// waitSeries waits until name's series are want.
func waitSeries(t *testing.T, reg *prometheus.Registry, name string, match map[string]string, label string, want []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := series(t, reg, name, match, label)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s%v by %s: %v, want %v", name, match, label, got, want)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSeriesExistFromRegistration: once a job is added, before any run or
// tick, each of its outcomes and each reason its ticks can be reported
// with is a series at 0, and so are its scheduler's gauges and counters,
// so that increase() sees the first failure, the first tick not run. The
// reasons are those of its mode and overlap policy: no_leader in leader
// mode, claimed_elsewhere in claim mode, overlap under Forbid; a job's
// hooks are series of their failures.
func TestSeriesExistFromRegistration(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	reg := prometheus.NewRegistry()
	obs, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	leader := cronx.New(cronx.WithEtcd(cli), cronx.WithName("lead"), cronx.WithObserver(obs),
		cronx.WithElection(election.WithIdentity("a")))
	claim := cronx.New(cronx.WithEtcd(cli), cronx.WithName("claim"), cronx.WithMode(cronx.ClaimMode), cronx.WithObserver(obs),
		cronx.WithElection(election.WithIdentity("a")))
	local := cronx.New(cronx.WithObserver(obs))
	for _, add := range []struct {
		c    *cronx.Cron
		name string
		opts []cronx.JobOption
	}{
		{leader, "plain", nil},
		{leader, "forbid", []cronx.JobOption{cronx.WithOverlap(cronx.Forbid)}},
		{leader, "buffered", []cronx.JobOption{cronx.WithOverlap(cronx.BufferAll)}},
		{claim, "plain", nil},
		{claim, "replace", []cronx.JobOption{cronx.WithOverlap(cronx.Replace)}},
		{leader, "hooked", []cronx.JobOption{cronx.WithOnFailure(func(context.Context, cronx.Info, error) error { return nil })}},
		{leader, "recovers", []cronx.JobOption{cronx.WithRecovery(1)}},
	} {
		if _, err := add.c.AddJob("@yearly", cronx.Named(add.name, cronx.FuncJob(func() {}), add.opts...)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := local.AddFunc("@yearly", func() {}); err != nil {
		t.Fatal(err)
	}

	jobsOf := map[string][]string{"lead": {"buffered", "forbid", "hooked", "plain", "recovers"}, "claim": {"plain", "replace"}}
	common := []string{"misfire_skipped", "paused", "overtaken", "etcd_unavailable", "etcd_refused"}
	for _, tc := range []struct {
		scheduler, job string
		reasons        []string
	}{
		{"lead", "plain", append([]string{"no_leader", "runner_lost"}, common...)},
		{"lead", "forbid", append([]string{"no_leader", "runner_lost", "overlap"}, common...)},
		{"lead", "buffered", append([]string{"no_leader", "runner_lost", "buffer_full"}, common...)},
		{"claim", "plain", append([]string{"claimed_elsewhere"}, common...)},
		{"claim", "replace", append([]string{"claimed_elsewhere"}, common...)},
		{"", "", nil},
	} {
		job := map[string]string{"scheduler": tc.scheduler, "job": tc.job}
		waitSeries(t, reg, "baton_job_runs_total", job, "outcome", atZero("success", "failure"))
		waitSeries(t, reg, "baton_job_ticks_not_run_total", job, "reason", atZero(tc.reasons...))
	}
	// A job's hooks are series of their failures; a job without is none.
	waitSeries(t, reg, "baton_job_hook_failures_total", map[string]string{"scheduler": "lead", "job": "hooked"}, "hook", atZero("on_failure"))
	// A job that buffers its ticks counts them; another has no such series.
	waitSeries(t, reg, "baton_job_ticks_buffered_total", map[string]string{"scheduler": "lead"}, "job", atZero("buffered"))
	waitSeries(t, reg, "baton_job_hook_failures_total", map[string]string{"scheduler": "lead", "job": "plain"}, "hook", nil)
	// A job that recovers its runs counts them from 0; one that does not, none.
	waitSeries(t, reg, "baton_job_recovered_runs_total", map[string]string{"scheduler": "lead", "job": "recovers"}, "job", atZero("recovers"))
	waitSeries(t, reg, "baton_job_recovered_runs_total", map[string]string{"scheduler": "lead", "job": "plain"}, "job", nil)
	for _, s := range []string{"lead", "claim", ""} {
		for _, h := range []string{"baton_job_run_duration_seconds", "baton_job_tick_lateness_seconds"} {
			waitSeries(t, reg, h, map[string]string{"scheduler": s}, "scheduler", atZero(s))
		}
	}
	for _, s := range []string{"lead", "claim"} {
		for _, m := range []string{"baton_claim_latency_seconds", "baton_etcd_writes_refused", "baton_etcd_found_empty_total"} {
			waitSeries(t, reg, m, map[string]string{"scheduler": s}, "scheduler", atZero(s))
		}
	}
	// A coordinated job's outcome and period, from its registration; a
	// job without etcd has no outcome.
	for _, s := range []string{"lead", "claim"} {
		for _, m := range []string{"baton_job_last_success_timestamp_seconds", "baton_job_last_failure_timestamp_seconds", "baton_job_consecutive_failures",
			"baton_job_caught_up_runs_total", "baton_job_ended_timestamp_seconds"} {
			waitSeries(t, reg, m, map[string]string{"scheduler": s}, "job", atZero(jobsOf[s]...))
		}
		if v := value(t, reg, "baton_job_period_seconds", map[string]string{"scheduler": s, "job": "plain"}); v < 365*24*3600 || v > 366*24*3600 {
			t.Errorf("scheduler %s: the period of a @yearly job is %vs", s, v)
		}
	}
	for _, s := range []string{"lead", "claim", ""} {
		waitSeries(t, reg, "baton_observer_panics_total", map[string]string{"scheduler": s}, "scheduler", atZero(s))
	}
	// Leadership is leader mode's only; the session is up or down once
	// known, not before.
	waitSeries(t, reg, "baton_scheduler_leader", nil, "scheduler", atZero("lead"))
	waitSeries(t, reg, "baton_scheduler_leadership_changes_total", nil, "change", atZero("gained", "lost"))
	waitSeries(t, reg, "baton_etcd_session_up", nil, "scheduler", nil)
}

// TestJobAddedLeavesValuesAlone: a job added to a scheduler that leads and
// whose writes etcd refuses (a reload) makes its own series without
// resetting the scheduler's; refusal and acceptance set the refused gauge.
func TestJobAddedLeavesValuesAlone(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	obs, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	added := cronx.JobAdded{Scheduler: "s", Job: "a", Coordinated: true, Mode: cronx.LeaderMode, Reasons: []cronx.Reason{cronx.ReasonPaused}}
	obs.OnJobAdded(added)
	obs.OnLeadershipGained(cronx.Leadership{Scheduler: "s"})
	obs.OnRunEnded(cronx.RunEnded{RunStarted: cronx.RunStarted{Scheduler: "s", Job: "a"}, Outcome: cronx.Failed})
	obs.OnEtcdRefused(cronx.EtcdRefusal{Scheduler: "s"})
	obs.OnJobAdded(added)
	added.Job = "b"
	obs.OnJobAdded(added)
	s := map[string]string{"scheduler": "s"}
	for name, want := range map[string][]string{
		"baton_scheduler_leader":    {"s=1"},
		"baton_etcd_writes_refused": {"s=1"},
	} {
		if got := series(t, reg, name, s, "scheduler"); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if got, want := series(t, reg, "baton_job_runs_total", map[string]string{"job": "a"}, "outcome"), []string{"failure=1", "success=0"}; !slices.Equal(got, want) {
		t.Errorf("runs of a: %v, want %v", got, want)
	}
	if got := series(t, reg, "baton_scheduler_leadership_changes_total", s, "change"); !slices.Equal(got, []string{"gained=1", "lost=0"}) {
		t.Errorf("leadership changes: %v, want gained=1 lost=0", got)
	}
	obs.OnEtcdAccepted(cronx.EtcdRefusal{Scheduler: "s"})
	if got := series(t, reg, "baton_etcd_writes_refused", s, "scheduler"); !slices.Equal(got, []string{"s=0"}) {
		t.Errorf("refused once etcd accepts writes: %v, want s=0", got)
	}
}

// TestBufferedTicksAreCounted: each tick a replica buffers counts once for
// its job, from the 0 its registration made.
func TestBufferedTicksAreCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	obs, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	obs.OnJobAdded(cronx.JobAdded{Scheduler: "s", Job: "a", Coordinated: true, Mode: cronx.LeaderMode, Reasons: []cronx.Reason{cronx.ReasonBufferFull}})
	obs.OnJobAdded(cronx.JobAdded{Scheduler: "s", Job: "b", Coordinated: true, Mode: cronx.LeaderMode, Reasons: []cronx.Reason{cronx.ReasonPaused}})
	s := map[string]string{"scheduler": "s"}
	if got := series(t, reg, "baton_job_ticks_buffered_total", s, "job"); !slices.Equal(got, []string{"a=0"}) {
		t.Errorf("before any tick buffered: %v, want a=0", got)
	}
	obs.OnTickBuffered(cronx.TickBuffered{Scheduler: "s", Job: "a"})
	obs.OnTickBuffered(cronx.TickBuffered{Scheduler: "s", Job: "a"})
	if got := series(t, reg, "baton_job_ticks_buffered_total", s, "job"); !slices.Equal(got, []string{"a=2"}) {
		t.Errorf("two ticks of a buffered: %v, want a=2", got)
	}
}
