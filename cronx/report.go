package cronx

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/emptyetcd"
	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// reporter tells what happens to a coordinated scheduler: events to the
// observers' queues (observer.go), ticks not run to the tally (notrun.go),
// etcd's refusals (refused.go) and an emptied etcd (emptyetcd.Watch).
// Reporting never waits. Its one state of its own, whether a session was
// lost and none regained since, is atomic.
type reporter struct {
	sc          *scope
	obs         observers    // the Cron's
	tally       *notRunTally // ticks not run, to count in etcd
	refusals    *refusals    // whether etcd refuses this replica's claims
	outcomes    outcomesTold // the jobs' outcomes told (outcome.go)
	sessionDown atomic.Bool  // a session was lost and none regained since
	// emptyCheck asks the empty-etcd watch to look again.
	emptyCheck chan struct{}
}

// observed reports whether anyone listens to events: a run's events are
// made only then.
func (rp *reporter) observed() bool { return len(rp.obs) > 0 }

// emit passes ev on to the observers.
func (rp *reporter) emit(ev any) { rp.obs.emit(ev) }

// runStarted is the event of a run of r, claimed as claim, starting now.
func (rp *reporter) runStarted(r *run, claim election.Claim, claimLatency time.Duration) RunStarted {
	start := rp.sc.clock.Now()
	ev := RunStarted{Scheduler: rp.sc.name, Job: r.job.name, Tick: r.tick, Instance: rp.sc.identity, Fence: claim.Fence,
		Triggered: r.triggered(), Backfill: r.bf != nil, Start: start, ClaimLatency: claimLatency, CaughtUp: r.catchUp, Recovered: r.recovered}
	if r.scheduled() && r.recovered == 0 { // mutation:recovered-no-lateness
		// From the run's intended start: a jittered run is meant to start
		// its delay after the tick. A run again of a tick whose runner
		// died (recovery.go) is as late as the lost run lasted: no sample.
		ev.Lateness = start.Sub(r.tick.Add(r.delay))
	}
	return ev
}

// backfillProgressed tells the observers that a backfill of job is at v.
func (rp *reporter) backfillProgressed(job string, v jobkeys.Backfill) {
	if !rp.observed() {
		return
	}
	rp.emit(BackfillProgress{Scheduler: rp.sc.name, Job: job, From: time.Unix(0, v.From), To: time.Unix(0, v.To),
		Ticks: v.Ticks, Done: v.Done, Finished: v.Finished, Refused: v.Refused})
}

// notRun reports a tick of job that this replica did not run, and counts
// it in etcd unless it ran elsewhere.
func (rp *reporter) notRun(job string, tick time.Time, reason Reason, err error) {
	sc := rp.sc
	if rp.observed() {
		rp.obs.emit(TickNotRun{Scheduler: sc.name, Job: job, Tick: tick, Instance: sc.identity, Reason: reason, Err: err})
	}
	if reason == ReasonClaimedElsewhere {
		return
	}
	// In claim mode another replica may have run a tick that this one
	// could not claim on its own account.
	strict := sc.mode == ClaimMode &&
		(reason == ReasonMisfireSkipped || reason == ReasonOvertaken || reason == ReasonEtcdUnavailable || reason == ReasonEtcdRefused)
	rp.tally.add(job, notRunEntry{tick: tick.UnixNano(), hour: hourOf(tick), reason: reason, n: 1, strict: strict})
}

// noLeader reports the ticks of job that fell while nobody led, counted
// by hour in hours.
func (rp *reporter) noLeader(job string, ticks []time.Time, hours []notRunEntry) {
	sc := rp.sc
	if rp.observed() {
		for _, t := range ticks {
			rp.obs.emit(TickNotRun{Scheduler: sc.name, Job: job, Tick: t, Instance: sc.identity, Reason: ReasonNoLeader})
		}
	}
	rp.tally.add(job, hours...)
}

// leadershipChanged reports a term gained, or lost with cause (nil when the
// Cron stopped it).
func (rp *reporter) leadershipChanged(term election.Term, gained bool, cause error) {
	sc := rp.sc
	ev := Leadership{Scheduler: sc.name, Instance: sc.identity, Fence: term.Fence, Time: sc.clock.Now(), Err: cause}
	if gained {
		rp.sessionUp()
		rp.obs.emit(leadershipGained(ev))
		return
	}
	rp.obs.emit(leadershipLost(ev))
	if errors.Is(cause, election.ErrSessionExpired) || errors.Is(cause, election.ErrLeaseLost) {
		rp.sessionLost(cause)
	}
}

// sessionLost reports that this replica's session with etcd was lost, once
// until one is regained.
func (rp *reporter) sessionLost(cause error) {
	if rp.sessionDown.CompareAndSwap(false, true) {
		rp.obs.emit(sessionLost{Scheduler: rp.sc.name, Instance: rp.sc.identity, Time: rp.sc.clock.Now(), Err: cause})
	}
}

// sessionUp reports a session granted, as regained after a loss.
func (rp *reporter) sessionUp() {
	if rp.sessionDown.CompareAndSwap(true, false) {
		rp.obs.emit(sessionRegained{Scheduler: rp.sc.name, Instance: rp.sc.identity, Time: rp.sc.clock.Now()})
	}
}

// watchSession reports s lost when it ends otherwise than by Close.
func (rp *reporter) watchSession(s *election.Session) {
	rp.sessionUp()
	rp.recheckEmpty()
	context.AfterFunc(s.Context(), func() {
		if cause := context.Cause(s.Context()); !errors.Is(cause, election.ErrSessionClosed) {
			rp.sessionLost(cause)
		}
	})
}

// watchEmpty logs an error each time etcd, through client, is found to
// have come back empty (emptyetcd.Watch), until the returned function is
// called, which stops the watch and waits for it. It looks when it starts
// and at each recheckEmpty: when this replica begins a term or gets a new
// runners' session. An etcd that lost its data lost every lease, so a new
// term or session follows on some replica; a follower that only waits sends
// nothing.
func (rp *reporter) watchEmpty(ctx context.Context, client *clientv3.Client) (stop func()) {
	if client == nil {
		return func() {}
	}
	sc := rp.sc
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		emptyetcd.Watch(ctx, client, sc.prefix, sc.identity, rp.emptyCheck, func(e emptyetcd.Event) {
			sc.logger.Error(errors.New(e.Why), "cronx: etcd came back empty; lost with its data: "+emptyetcd.Lost,
				"scheduler", sc.name, "instance", sc.identity)
			rp.obs.emit(EtcdEmpty{Scheduler: sc.name, Instance: sc.identity, Why: e.Why})
		})
	}()
	return func() { cancel(); <-done }
}

// recheckEmpty asks the empty-etcd watch to look again; it never blocks,
// and asks made while a look is pending count once.
func (rp *reporter) recheckEmpty() {
	select {
	case rp.emptyCheck <- struct{}{}:
	default:
	}
}
