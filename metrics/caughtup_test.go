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

// TestEndedJobsHaveTheirEnd: a job's end time is its gauge from its
// registration, and a job found at its maximum of runs gets the time it
// was found; a job with neither stays at 0.
func TestEndedJobsHaveTheirEnd(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	obs, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)
	obs.OnJobAdded(cronx.JobAdded{Scheduler: "s", Job: "until", Coordinated: true, EndAt: end})
	obs.OnJobAdded(cronx.JobAdded{Scheduler: "s", Job: "thrice", Coordinated: true})
	obs.OnJobAdded(cronx.JobAdded{Scheduler: "s", Job: "forever", Coordinated: true})
	found := time.Date(2026, 3, 2, 9, 0, 40, 0, time.UTC)
	obs.OnJobEnded(cronx.JobEnded{Scheduler: "s", Job: "thrice", Time: found, MaxRuns: 3})
	for job, want := range map[string]float64{"until": float64(end.Unix()), "thrice": float64(found.Unix()), "forever": 0} {
		if v := value(t, reg, "baton_job_ended_timestamp_seconds", map[string]string{"scheduler": "s", "job": job}); v != want {
			t.Errorf("%s: %v, want %v", job, v, want)
		}
	}
}
