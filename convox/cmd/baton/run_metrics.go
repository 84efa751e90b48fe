package main

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
)

// runMetrics tells the metrics of `baton run --http` what the runner does,
// as a Cron tells its observers: the terms of --leader NAME (scheduler NAME
// in baton_scheduler_leader and the leadership changes), and each run of
// COMMAND (job NAME, the lock's name or KEY, in baton_job_runs_total and
// the duration histogram). A nil *runMetrics, without --http, does nothing.
type runMetrics struct {
	obs      cronx.Observer
	name     string
	identity string
}

func (m *runMetrics) gained(term election.Term) {
	if m == nil || m.obs.OnLeadershipGained == nil {
		return
	}
	m.obs.OnLeadershipGained(cronx.Leadership{Scheduler: m.name, Instance: m.identity, Fence: term.Fence, Time: time.Now()})
}

func (m *runMetrics) lost(term election.Term, cause error) {
	if m == nil || m.obs.OnLeadershipLost == nil {
		return
	}
	m.obs.OnLeadershipLost(cronx.Leadership{Scheduler: m.name, Instance: m.identity, Fence: term.Fence, Time: time.Now(), Err: cause})
}

// started reports COMMAND started under fence, at its own tick: baton run
// has no schedule, so a run is never late.
func (m *runMetrics) started(fence election.Fence) cronx.RunStarted {
	now := time.Now()
	if m == nil {
		return cronx.RunStarted{}
	}
	ev := cronx.RunStarted{Scheduler: m.name, Job: m.name, Tick: now, Instance: m.identity, Fence: fence, Start: now}
	if m.obs.OnJobAdded != nil {
		// Both outcomes at 0 while COMMAND runs, so that its failure is
		// an increase. baton run reports no tick not run.
		m.obs.OnJobAdded(cronx.JobAdded{Scheduler: m.name, Job: m.name})
	}
	if m.obs.OnRunStarted != nil {
		m.obs.OnRunStarted(ev)
	}
	return ev
}

// ended reports how COMMAND's run ended: a success only if it exited 0 by
// itself.
func (m *runMetrics) ended(ev cronx.RunStarted, code int, how outcome, cause error) {
	if m == nil || m.obs.OnRunEnded == nil {
		return
	}
	end := cronx.RunEnded{RunStarted: ev, Duration: time.Since(ev.Start)}
	switch {
	case how != exited:
		end.Outcome, end.Err = cronx.Failed, fmt.Errorf("stopped: %w", cause)
	case code != 0:
		end.Outcome, end.Err = cronx.Failed, fmt.Errorf("exit status %d", code)
	}
	m.obs.OnRunEnded(end)
}

// causeOf is why exec stopped COMMAND: the fence lost, or baton asked to stop.
func causeOf(fenced, stopping context.Context, how outcome) error {
	switch how {
	case lost:
		return context.Cause(fenced)
	case signaled:
		return context.Cause(stopping)
	}
	return nil
}
