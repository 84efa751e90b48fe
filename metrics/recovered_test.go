package metrics

import (
	"testing"

	"github.com/batonhq/baton/cronx"
	"github.com/prometheus/client_golang/prometheus"
)

// TestRecoveredRunsAreCounted: a run again of a tick whose runner died
// counts in baton_job_recovered_runs_total; a tick's first run does not.
func TestRecoveredRunsAreCounted(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	obs, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	obs.OnJobAdded(cronx.JobAdded{Scheduler: "s", Job: "j", Coordinated: true, Mode: cronx.LeaderMode, Recovers: true})
	obs.OnRunStarted(cronx.RunStarted{Scheduler: "s", Job: "j"})
	obs.OnRunStarted(cronx.RunStarted{Scheduler: "s", Job: "j", Recovered: 1})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "baton_job_recovered_runs_total" {
			continue
		}
		if n := len(mf.GetMetric()); n != 1 {
			t.Fatalf("%d series, want 1", n)
		}
		if v := mf.GetMetric()[0].GetCounter().GetValue(); v != 1 {
			t.Errorf("baton_job_recovered_runs_total = %v, want 1", v)
		}
		return
	}
	t.Error("no baton_job_recovered_runs_total")
}
