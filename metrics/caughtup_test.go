package metrics

import (
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/prometheus/client_golang/prometheus"
)

// TestCaughtUpRunsAreCounted: a run of a missed tick, run late within its
// job's catch-up window, counts in baton_job_caught_up_runs_total; a run
// on time does not.
func TestCaughtUpRunsAreCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	obs, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	obs.OnJobAdded(cronx.JobAdded{Scheduler: "s", Job: "nightly", Coordinated: true, Mode: cronx.LeaderMode})
	labels := map[string]string{"scheduler": "s", "job": "nightly"}
	if v := value(t, reg, "baton_job_caught_up_runs_total", labels); v != 0 {
		t.Fatalf("before any run: %v", v)
	}
	obs.OnRunStarted(cronx.RunStarted{Scheduler: "s", Job: "nightly"})
	obs.OnRunStarted(cronx.RunStarted{Scheduler: "s", Job: "nightly", CaughtUp: true, Lateness: 90 * time.Minute})
	if v := value(t, reg, "baton_job_caught_up_runs_total", labels); v != 1 {
		t.Errorf("after a run on time and a run caught up: %v, want 1", v)
	}
}
