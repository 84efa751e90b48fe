package cronx

import (
	"context"
	"errors"
	"time"

	"github.com/batonhq/baton/election"
)

// The coordinator's events, in one place. Emitting never waits: events go
// to the observers' queues (observer.go) and ticks not run to the tally
// (notrun.go).

// jobAdded is the event of a job named name added with policy p.
func (c *Cron) jobAdded(name string, p *jobPolicy) JobAdded {
	ev := JobAdded{Job: name}
	if co := c.coord; co != nil {
		ev.Scheduler, ev.Coordinated, ev.Mode = co.name, true, co.mode
	}
	ev.Reasons = reasonsOf(ev.Coordinated, ev.Mode, p.overlap)
	return ev
}

// runStarted is the event of a run of r, claimed as claim, starting now.
func (co *coordinator) runStarted(r run, claim election.Claim, claimLatency time.Duration) RunStarted {
	start := co.clock.Now()
	ev := RunStarted{Scheduler: co.name, Job: r.job, Tick: r.tick, Instance: co.identity, Fence: claim.Fence,
		Triggered: r.triggered != 0, Start: start, ClaimLatency: claimLatency}
	if r.triggered == 0 {
		// From the run's intended start: a jittered run is meant to start
		// its delay after the tick.
		ev.Lateness = start.Sub(r.tick.Add(r.delay))
	}
	return ev
}

// runEnded is the event of a run that started as started and returned err
// at end.
func runEnded(started RunStarted, end time.Time, err error) RunEnded {
	ev := RunEnded{RunStarted: started, Duration: end.Sub(started.Start), Err: err}
	if err != nil {
		ev.Outcome = Failed
	}
	return ev
}

// notRun reports a tick of job that this replica did not run, and counts
// it in etcd unless it ran elsewhere.
func (co *coordinator) notRun(job string, tick time.Time, reason Reason, err error) {
	if len(co.obs) > 0 {
		co.obs.emit(TickNotRun{Scheduler: co.name, Job: job, Tick: tick, Instance: co.identity, Reason: reason, Err: err})
	}
	if reason == ReasonClaimedElsewhere {
		return
	}
	// In claim mode another replica may have run a tick that this one
	// could not claim on its own account.
	strict := co.mode == ClaimMode &&
		(reason == ReasonMisfireSkipped || reason == ReasonOvertaken || reason == ReasonEtcdUnavailable || reason == ReasonEtcdRefused)
	co.tally.add(job, notRunEntry{tick: tick.UnixNano(), hour: hourOf(tick), reason: reason, n: 1, strict: strict})
}

// leadershipChanged reports a term gained, or lost with cause (nil when the
// Cron stopped it).
func (co *coordinator) leadershipChanged(term election.Term, gained bool, cause error) {
	ev := Leadership{Scheduler: co.name, Instance: co.identity, Fence: term.Fence, Time: co.clock.Now(), Err: cause}
	if gained {
		co.sessionUp()
		co.obs.emit(leadershipGained(ev))
		return
	}
	co.obs.emit(leadershipLost(ev))
	if errors.Is(cause, election.ErrSessionExpired) || errors.Is(cause, election.ErrLeaseLost) {
		co.sessionLost(cause)
	}
}

// sessionLost reports that this replica's session with etcd was lost, once
// until one is regained.
func (co *coordinator) sessionLost(cause error) {
	if co.sessionDown.CompareAndSwap(false, true) {
		co.obs.emit(sessionLost{Scheduler: co.name, Instance: co.identity, Time: co.clock.Now(), Err: cause})
	}
}

// sessionUp reports a session granted, as regained after a loss.
func (co *coordinator) sessionUp() {
	if co.sessionDown.CompareAndSwap(true, false) {
		co.obs.emit(sessionRegained{Scheduler: co.name, Instance: co.identity, Time: co.clock.Now()})
	}
}

// watchSession reports s lost when it ends otherwise than by Close.
func (co *coordinator) watchSession(s *election.Session) {
	co.sessionUp()
	co.recheckEmpty()
	context.AfterFunc(s.Context(), func() {
		if cause := context.Cause(s.Context()); !errors.Is(cause, election.ErrSessionClosed) {
			co.sessionLost(cause)
		}
	})
}

// runLocal runs job, named name (empty unless Named), for tick without
// coordination, telling the observers.
func (c *Cron) runLocal(name string, job Job, tick time.Time) {
	start := c.clock.Now()
	started := RunStarted{Job: name, Tick: tick, Start: start, Lateness: start.Sub(tick)}
	c.observers.emit(started)
	err := runJob(context.Background(), job) // as job.Run would, keeping the error
	c.observers.emit(runEnded(started, c.clock.Now(), err))
}
