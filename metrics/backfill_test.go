package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/prometheus/client_golang/prometheus"
)

// TestBackfillMetrics: a job's backfill gauges are at 0 from its
// registration, and count the backfill's ticks and those done; its runs
// count as runs, and are not late however old their ticks.
func TestBackfillMetrics(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	reg := prometheus.NewRegistry()
	obs, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	c := cronx.New(cronx.WithSeconds(), cronx.WithEtcd(srv.Client(t)), cronx.WithName("mbf"), cronx.WithObserver(obs),
		cronx.WithElection(election.WithIdentity("a"), election.WithTTL(2*time.Second)))
	if _, err := c.AddJob("0 0 * * * *", cronx.Named("hourly", cronx.FuncJob(func() {}))); err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
	job := map[string]string{"scheduler": "mbf", "job": "hourly"}
	waitSeries(t, reg, "baton_job_backfill_ticks", job, "job", atZero("hourly"))
	waitSeries(t, reg, "baton_job_backfill_ticks_done", job, "job", atZero("hourly"))
	waitValue(t, reg, "baton_scheduler_leader", map[string]string{"scheduler": "mbf"}, "1 while leading", func(v float64) bool { return v == 1 })

	to := time.Now().Truncate(time.Hour)
	if _, err := c.Backfill(context.Background(), "hourly", to.Add(-3*time.Hour), to, 0); err != nil {
		t.Fatal(err)
	}
	is3 := func(v float64) bool { return v == 3 }
	waitValue(t, reg, "baton_job_backfill_ticks", job, "3", is3)
	waitValue(t, reg, "baton_job_backfill_ticks_done", job, "3", is3)
	waitValue(t, reg, "baton_job_runs_total", map[string]string{"scheduler": "mbf", "job": "hourly", "outcome": "success"}, "3", is3)
	if n := value(t, reg, "baton_job_tick_lateness_seconds", map[string]string{"scheduler": "mbf"}); n != 0 {
		t.Errorf("%v lateness samples of backfilled runs, want none", n)
	}
}
