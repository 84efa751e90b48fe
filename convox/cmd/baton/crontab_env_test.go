package main

import (
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
)

// TestRunEnvMarksACaughtUpRun: a caught-up run's command gets
// BATON_CAUGHT_UP=1, as a backfilled run's gets BATON_BACKFILL=1; other
// runs get neither.
func TestRunEnvMarksACaughtUpRun(t *testing.T) {
	j := crontabJob{entry: crontabEntry{name: "nightly"}}
	tick := time.Date(2030, 1, 1, 2, 0, 0, 0, time.UTC)
	if env := j.runEnv(cronx.Info{Job: "nightly", Tick: tick, CaughtUp: true}); !slices.Contains(env, "BATON_CAUGHT_UP=1") {
		t.Errorf("a caught-up run's environment: %q, want BATON_CAUGHT_UP=1", env)
	}
	for _, info := range []cronx.Info{{Job: "nightly", Tick: tick}, {Job: "nightly", Tick: tick, Backfill: true}} {
		env := j.runEnv(info)
		if slices.ContainsFunc(env, func(v string) bool { return len(v) > 16 && v[:16] == "BATON_CAUGHT_UP=" }) {
			t.Errorf("run %+v: environment %q has BATON_CAUGHT_UP", info, env)
		}
	}
}
