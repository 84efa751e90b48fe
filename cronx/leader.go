package cronx

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/batonhq/baton/election"
)

// host is what coordination needs of its Cron: no more, so that the parts
// of coordination do not reach into the run loop.
type host interface {
	// requestResync asks the run loop to recompute every entry's next run.
	requestResync()
	// entryByName returns the entry of the job named name.
	entryByName(name string) (Entry, bool)
	// Entries returns a snapshot of the entries.
	Entries() []Entry
	// now reads the Cron's clock in the Cron's time zone.
	now() time.Time
}

// coordinator is the leader loop of a coordinated Cron: it connects,
// campaigns (leader mode) or watches for triggers (claim mode), and fires
// ticks while this replica schedules. It delegates claiming to its claimer,
// the bookkeeping of runs to its recorder, specs to its publisher and what
// happens to its reporter. Its mutex guards the Start under way and the
// current term.
type coordinator struct {
	*scope
	writes  writes // what it writes to etcd for a tick, a run's end and a term
	host    host
	runs    *runs // the Cron's runs, from firing to record
	conn    *connection
	elector *election.Elector // given to New; else one per Start
	claims  *claimer
	rec     *recorder
	specs   *publisher
	rep     *reporter
	lost    *lostClaims // ticks a lost predecessor claimed
	// unclaimed are ticks fired and given up before their runs started
	// (catchup.go).
	unclaimed unclaimedTicks
	work      jobWaiter // claims, runs and bookkeeping in progress, which the client outlives

	mu   sync.Mutex
	act  *activation // the last Start; nil before the first
	term *termState  // leader mode: the current term, nil when not leading
}

// activation is one Start of a coordinator, until its Stop.
type activation struct {
	ctx      context.Context // cancelled on Stop
	cancel   context.CancelFunc
	resigned chan struct{} // closed when the campaign has ended
	done     chan struct{} // closed when the background work has ended
}

// stopped reports whether Stop came; its caller holds the coordinator's
// mutex.
func (a *activation) stopped() bool { return a == nil || a.ctx.Err() != nil }

// termState is one term of leadership and its context, which ends with it.
type termState struct {
	term election.Term
	ctx  context.Context
}

// scheduling reports whether this replica fires ticks now.
func (co *coordinator) scheduling() bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.mode == ClaimMode {
		// Until a client from the environment is made, no claim can be
		// sent; connecting asks for a resync, which catches up.
		return !co.act.stopped() && co.conn.etcd() != nil
	}
	return co.term != nil // mutation:follower-schedules
}

// start begins coordinating: in leader mode a campaign, in claim mode the
// trigger watch. It never blocks.
func (co *coordinator) start() {
	co.mu.Lock()
	defer co.mu.Unlock()
	if !co.act.stopped() {
		return
	}
	var prev chan struct{}
	if co.act != nil {
		prev = co.act.done
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &activation{ctx: ctx, cancel: cancel, resigned: make(chan struct{}), done: make(chan struct{})}
	co.act = a
	gen := co.conn.begin()
	go func() {
		defer close(a.done)
		if prev != nil {
			// A Stop then Start: the last run's client and session go first.
			<-prev
		}
		ownsClient := co.conn.connect(ctx, gen)
		co.loadOutcomes(func() []string { return namesOf(co.host) })
		defer co.rep.watchEmpty(ctx, co.conn.etcd())()
		co.campaign(ctx)
		close(a.resigned)
		// Markers of runs still going must outlive the campaign, so the
		// runners' session is closed only once every run has returned.
		<-co.work.idle().Done()
		stopped := co.markStopped()
		co.claims.sessions.Close()
		co.claims.ttl.reset() // a Start asks again
		stopped()
		if ownsClient {
			co.conn.closeMade()
		}
	}()
}

// campaign schedules while this replica may: in leader mode for each term it
// wins, in claim mode until Stop. It returns once ctx is done and, in leader
// mode, the leader has resigned.
func (co *coordinator) campaign(ctx context.Context) {
	cli := co.conn.etcd()
	if cli == nil {
		<-ctx.Done() // fail closed: no claim, no run
		return
	}
	if co.mode == ClaimMode {
		co.specs.publishAll()
		co.host.requestResync()
		co.resumeBuffers(ctx, nil)
		co.watchBackfills(ctx, nil)
		co.watchTriggers(ctx, nil)
		return
	}
	e := co.elector
	if e == nil {
		var err error
		if e, err = election.New(cli, co.name, co.eopts...); err != nil {
			co.logger.Error(err, "cronx: cannot campaign; no job will run", "scheduler", co.name)
			<-ctx.Done()
			return
		}
	}
	if err := e.Run(ctx, co.lead); err != nil && !errors.Is(err, context.Canceled) {
		co.logger.Error(err, "cronx: campaign ended", "scheduler", co.name)
	}
}

// lead is the Cron's work for one term: schedule until the term ends.
func (co *coordinator) lead(ctx context.Context, term election.Term) {
	co.rep.leadershipChanged(term, true, nil)
	co.rep.recheckEmpty() // a term follows every lost lease, a wiped etcd's too
	// The gap is read as the term began, so that its claims do not hide it
	// (gap.go); the records of ticks a term before left are settled before
	// any claim of this term, so that each job's claim key tells what was
	// claimed (tickrecord.go).
	(&gapReport{scope: co.scope, client: co.conn.etcd(), host: co.host, work: &co.work, rep: co.rep}).report(ctx, term.Elected)
	co.settlePending(ctx) // mutation:tick-records-left-unsettled
	ts := &termState{term: term, ctx: ctx}
	// Until it starts, a run is its term's: a term that ends gives it up,
	// and the successor claims its tick.
	context.AfterFunc(ctx, func() { co.runs.abandonTerm(ts, context.Cause(ctx)) })
	co.mu.Lock()
	co.term = ts
	co.mu.Unlock()
	// The term's first tick finds a lease for its markers rather than
	// waiting for one (session.go): the process's first term grants it,
	// and it is kept.
	co.work.add()
	go func() {
		defer co.work.done()
		co.claims.sessions.Reserve(ctx, markerLeaseKeys, 0) // mutation:marker-lease-on-demand
	}()
	notice(co.logger, "cronx: leading", "scheduler", co.name, "instance", co.identity, "fence", term.Revision)
	co.host.requestResync()
	co.specs.publishAll()
	co.resumeBuffers(ctx, ts) // mutation:buffer-resume
	co.watchBackfills(ctx, ts)
	recovery{co}.termStarted(ctx)
	co.watchTriggers(ctx, ts)
	co.mu.Lock()
	co.term = nil
	co.mu.Unlock()
	co.host.requestResync()
	co.mu.Lock()
	stopping := co.act.stopped()
	co.mu.Unlock()
	var cause error
	if !stopping {
		cause = context.Cause(ctx)
		notice(co.logger, "cronx: no longer leading", "scheduler", co.name, "instance", co.identity, "fence", term.Revision, "cause", cause)
		// etcd refuses the keepalives of a user that may not write the
		// lease's keys: no claim may have told it yet.
		co.rep.refusals.refused(cause)
	} else {
		notice(co.logger, "cronx: no longer leading: stopped", "scheduler", co.name, "instance", co.identity, "fence", term.Revision)
	}
	co.rep.leadershipChanged(term, false, cause)
}

// stop stops coordinating and waits, briefly, for the leader to resign, so
// that a process that exits once Stop's context is done has handed over.
// Runs in progress go on, under their claims. It returns a channel closed
// once the background work of the last Start has ended: after it, the
// coordinator no longer uses the client.
func (co *coordinator) stop() <-chan struct{} {
	co.mu.Lock()
	a := co.act
	if a == nil {
		co.mu.Unlock()
		done := make(chan struct{})
		close(done) // never started
		return done
	}
	done, resigned := a.done, a.resigned
	if a.stopped() {
		co.mu.Unlock()
		return done
	}
	a.cancel()
	co.conn.retire()
	co.mu.Unlock()
	if co.mode == ClaimMode {
		return done // no leader to resign
	}
	t := time.NewTimer(resignWait)
	defer t.Stop()
	select {
	case <-resigned:
	case <-t.C:
		co.logger.Info("cronx: resignation not confirmed; the lease will expire", "scheduler", co.name)
	}
	return done
}

// fireTick fires r, a tick of e, claimed and run in the background, if this
// replica schedules: in leader mode under the current term.
func (co *coordinator) fireTick(r *run, e *Entry, catchUp bool) {
	if co.mode == LeaderMode {
		r.term = co.currentTerm()
		if r.term == nil { // mutation:follower-fires
			// The term ended as the tick came due (the wake of the resync
			// that follows it): this replica's next takeover catches it up.
			co.unclaimed.note(r)
			return
		}
	} else {
		co.claims.fired.note(e.name, r.tick)
	}
	r.catchUp, r.fired = catchUp, !e.Prev.IsZero()
	r.delay = jitterOf(e.name, r.tick, e.policy.jitter)
	r.prev = r.tick.UnixNano() - 1
	if prev := e.given(); !prev.IsZero() && prev.Before(r.tick) {
		r.prev = prev.UnixNano()
	}
	if !catchUp && co.clock.Now().After(co.deadline(r)) {
		// The loop woke up past the misfire deadline: the process stalled
		// or its clock jumped.
		co.rep.notRun(e.name, r.tick, ReasonMisfireSkipped, nil)
		return
	}
	r.goCoordinated()
}

// mayRetry reports whether a failed run of r may be tried again: the Cron
// runs and, in leader mode, r's term holds.
func (co *coordinator) mayRetry(r *run) bool {
	return co.runCtx().Err() == nil && (r.term == nil || r.term.ctx.Err() == nil)
}

// runCtx is the context of the coordination's run, which ends on Stop.
func (co *coordinator) runCtx() context.Context {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.act == nil {
		return context.Background()
	}
	return co.act.ctx
}

// currentTerm returns the current term, nil when not leading.
func (co *coordinator) currentTerm() *termState {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.term
}

// publishing returns the context under which this replica publishes specs
// now (the term's in leader mode), and false when it does not publish: a
// follower, a stopped Cron, or etcd not reached yet.
func (co *coordinator) publishing() (context.Context, bool) {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.act.stopped() || co.conn.etcd() == nil || co.mode == LeaderMode && co.term == nil {
		return nil, false
	}
	ctx := co.act.ctx
	if co.mode == LeaderMode {
		ctx = co.term.ctx
	}
	if ctx.Err() != nil {
		return nil, false
	}
	return ctx, true
}

// sleep waits d of real time, or until ctx ends: etcd answers on real
// time, whatever the Cron's clock.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
