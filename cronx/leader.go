package cronx

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	clientv3 "go.etcd.io/etcd/client/v3"
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
// ticks while this replica schedules. It delegates claiming to its claimer
// and the bookkeeping of runs and specs to its recorder.
type coordinator struct {
	host     host
	clock    clock.Clock
	cronRuns *jobWaiter // the Cron's runs, which Stop's context waits for
	name     string     // scheduler name
	mode     Mode
	misfire  Misfire
	grace    time.Duration
	eopts    []election.Option
	identity string
	prefix   string // P
	keys     layout
	logger   Logger

	ownsClient bool                // made from the environment
	conn       election.Connection // the environment's, when ownsClient
	gen        int                 // counts Starts
	clientGen  int                 // the Start that made client, when ownsClient
	connErr    error               // why the last connection attempt failed
	client     *clientv3.Client
	elector    *election.Elector

	mu       sync.Mutex
	term     *termState      // leader mode: the current term, nil when not leading
	ctx      context.Context // cancelled on Stop
	cancel   context.CancelFunc
	started  bool
	resigned chan struct{} // closed when the campaign has ended
	done     chan struct{} // closed when the background work has ended
	runs     jobWaiter     // claims, runs and bookkeeping in progress, which the client outlives

	claims *claimer
	rec    *recorder

	obs         observers    // the Cron's
	tally       *notRunTally // ticks not run, to count in etcd
	sessionDown atomic.Bool  // a session was lost and none regained since
	refusals    *refusals    // whether etcd refuses this replica's claims (refused.go)
	// emptyCheck asks the empty-etcd watch to look again (emptyetcd.go).
	emptyCheck chan struct{}
}

// termState is one term of leadership and its context, which ends with it.
type termState struct {
	term election.Term
	ctx  context.Context
}

// etcd returns the client, nil until one is made from the environment.
func (co *coordinator) etcd() *clientv3.Client {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.client
}

// scheduling reports whether this replica fires ticks now.
func (co *coordinator) scheduling() bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.mode == ClaimMode {
		// Until a client from the environment is made, no claim can be
		// sent; connecting asks for a resync, which catches up.
		return co.started && co.client != nil
	}
	return co.term != nil // mutation:follower-schedules
}

// start begins coordinating: in leader mode a campaign, in claim mode the
// trigger watch. It never blocks.
func (co *coordinator) start() {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.started {
		return
	}
	co.started = true
	co.ctx, co.cancel = context.WithCancel(context.Background())
	ctx, resigned, done := co.ctx, make(chan struct{}), make(chan struct{})
	prev := co.done
	co.resigned, co.done = resigned, done
	co.gen++
	gen := co.gen
	go func() {
		defer close(done)
		if prev != nil {
			// A Stop then Start: the last run's client and session go first.
			<-prev
		}
		ownsClient := co.connect(ctx, gen)
		defer co.watchEmpty(ctx)()
		co.campaign(ctx)
		close(resigned)
		// Markers of runs still going must outlive the campaign, so the
		// runners' session is closed only once every run has returned.
		<-co.runs.idle().Done()
		co.claims.closeSession()
		if ownsClient {
			co.mu.Lock()
			cli := co.client
			co.client = nil
			co.mu.Unlock()
			cli.Close()
		}
	}()
}

// campaign schedules while this replica may: in leader mode for each term it
// wins, in claim mode until Stop. It returns once ctx is done and, in leader
// mode, the leader has resigned.
func (co *coordinator) campaign(ctx context.Context) {
	cli := co.etcd()
	if cli == nil {
		<-ctx.Done() // fail closed: no claim, no run
		return
	}
	if co.mode == ClaimMode {
		co.rec.publishAll()
		co.host.requestResync()
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
	co.leadershipChanged(term, true, nil)
	co.recheckEmpty() // a term follows every lost lease, a wiped etcd's too
	// Before the term can claim, so that its claims do not hide the gap;
	// and before it counts as scheduling, which promises a resync.
	co.reportGap(ctx)
	co.mu.Lock()
	co.term = &termState{term: term, ctx: ctx}
	co.mu.Unlock()
	notice(co.logger, "cronx: leading", "scheduler", co.name, "instance", co.identity, "fence", term.Revision)
	co.host.requestResync()
	co.rec.publishAll()
	co.watchTriggers(ctx, &term)
	co.mu.Lock()
	ts := co.term
	co.term = nil
	co.mu.Unlock()
	// Before the resignation, so the successor finds the ticks unclaimed.
	co.claims.withdrawAll(ts)
	co.host.requestResync()
	co.mu.Lock()
	stopping := co.ctx.Err() != nil
	co.mu.Unlock()
	var cause error
	if !stopping {
		cause = context.Cause(ctx)
		notice(co.logger, "cronx: no longer leading", "scheduler", co.name, "instance", co.identity, "fence", term.Revision, "cause", cause)
		// etcd refuses the keepalives of a user that may not write the
		// lease's keys: no claim may have told it yet.
		co.refusals.refused(cause)
	} else {
		notice(co.logger, "cronx: no longer leading: stopped", "scheduler", co.name, "instance", co.identity, "fence", term.Revision)
	}
	co.leadershipChanged(term, false, cause)
}

// stop stops coordinating and waits, briefly, for the leader to resign, so
// that a process that exits once Stop's context is done has handed over.
// Runs in progress see their context cancelled; Stop's context waits for
// them. It returns a channel closed once the background work of the last
// Start has ended: after it, the coordinator no longer uses the client.
func (co *coordinator) stop() <-chan struct{} {
	co.mu.Lock()
	done := co.done
	if done == nil {
		done = make(chan struct{})
		close(done) // never started
	}
	if !co.started {
		co.mu.Unlock()
		return done
	}
	co.started = false
	co.cancel()
	resigned := co.resigned
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
	ctx := co.ctx
	if co.mode == LeaderMode && co.term != nil {
		ctx = co.term.ctx
	}
	if !co.started || co.client == nil || co.mode == LeaderMode && co.term == nil || ctx.Err() != nil {
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
