package cronx

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
)

// run is one run of a job, a tick of its schedule or a trigger, from the
// moment it fires until it has been recorded, or given up with a reason.
// Its goroutine owns it and moves it on through the Cron's runs, which
// decide each step against Stop, Remove and Shutdown; what ends it early
// (its claim lost, a later tick of a Replace job, a timeout, Stop or Remove
// before it starts, Shutdown after) does so through its context.
//
// A run's life is a chain of steps, each a policy of the job or a part of
// coordination, in its own file, as robfig's JobWrappers are around a Job:
//
//	jitter (jitter.go) → claim (claim.go, trigger.go) → replace (replace.go)
//	  → attempts (retry.go, with timeout.go around each) → record (record.go)
type run struct {
	co      *coordinator // nil for a Cron without etcd
	rs      *runs
	job     jobRef
	tick    time.Time      // the nominal tick; a trigger's time
	trig    *trigger       // the trigger it runs for; nil for a tick
	buf     *buffered      // the tick's place in its job's buffer (buffer.go); nil unless it waits there
	bf      *backfillClaim // the backfill it runs a tick of; nil for none
	catchUp bool           // a tick missed in a failover, caught up
	// fired says that this process fired a tick of the job before: its
	// claim key is there, most likely (claims.ClaimItem.Held).
	fired bool
	delay time.Duration
	prev  int64      // what the job's claim key is given back to
	term  *termState // leader mode: the term it fired under
	// recovered counts the runs again of a tick whose runner died, from 1;
	// recovery is the claim that decided it (recovery.go).
	recovered int
	recovery  *held
	// lostRecord is the record of a tick that claimed r and went
	// unanswered (tickrecord.go): r is then claimed on its own, while
	// that record is absent.
	lostRecord string
	// answered tells the claim gate (gate.go) that the first try of r's
	// claim has its answer; nil until its goroutine starts.
	answered func()

	ctx    context.Context
	cancel context.CancelCauseFunc
	stage  stage // guarded by rs.mu
	called bool  // its job has been called; guarded by rs.mu
	inJob  bool  // its job runs now; guarded by rs.mu
	// removed: Remove gave it up before it started; guarded by rs.mu.
	removed bool
}

// jobRef is what a run needs of its entry, read when it fires.
type jobRef struct {
	entry   EntryID
	name    string
	wrapped Job
	policy  *jobPolicy
	plain   bool // nothing in wrapped reads its context
	// bounds is the entry's schedule when it has WithStartAt, WithEndAt or
	// WithMaxRuns (bounds.go); nil otherwise.
	bounds *boundedSchedule
}

func refOf(e *Entry) jobRef {
	return jobRef{entry: e.ID, name: e.name, wrapped: e.WrappedJob, policy: e.policy, plain: plainJob(e.WrappedJob),
		bounds: boundsOf(e.Schedule)}
}

// plainJob reports whether no part of a wrapped job reads its context:
// a plain Job, or a Named plain Job, with no wrapper around it.
func plainJob(wrapped Job) bool {
	if nj, ok := wrapped.(*namedJob); ok {
		wrapped = nj.job
	}
	_, ok := wrapped.(ContextJob)
	return !ok
}

func newRun(rs *runs, co *coordinator, job jobRef, tick time.Time) *run {
	r := &run{co: co, rs: rs, job: job, tick: tick}
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	return r
}

// triggered reports whether r runs for a trigger.
func (r *run) triggered() bool { return r.trig != nil }

// scheduled reports whether r runs for a tick of the schedule, neither a
// trigger nor a backfill: only such a tick is counted as not run.
func (r *run) scheduled() bool { return r.trig == nil && r.bf == nil }

// goLocal runs r, a run of a Cron without etcd, in the background, telling
// the observers when there are (emit non-nil).
func (r *run) goLocal(emit func(any), now func() time.Time) bool {
	if !r.rs.fire(r) {
		return false
	}
	r.rs.hold(r, false)
	go func() {
		defer r.rs.end(r)
		defer r.cancel(nil)
		if emit == nil {
			r.call(r.ctx) // a plain Job's Run, as robfig/cron calls it
			return
		}
		start := now()
		ev := RunStarted{Job: r.job.name, Tick: r.tick, Start: start, Lateness: start.Sub(r.tick)}
		emit(ev)
		err := r.call(r.ctx)
		emit(runEnded(ev, now(), err))
	}()
	return true
}

// runKey is the context key of the run whose job the context was given to.
type runKey struct{}

// call calls r's job with ctx, counted among the jobs running, so that
// Shutdown knows when they have returned and which run a call from inside
// a job comes from.
func (r *run) call(ctx context.Context) error {
	if !r.rs.begin(r) {
		return errStopped
	}
	defer r.rs.returning(r)
	return runJob(context.WithValue(ctx, runKey{}, r), r.job.wrapped)
}

// callerName is the name of call's function, which is on the stack of any
// goroutine that runs a job.
var callerName = runtime.FuncForPC(reflect.ValueOf((*run).call).Pointer()).Name()

// inJob reports whether the calling goroutine runs a job: whether call is
// on its stack.
func inJob() bool {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	for n == len(pcs) { // a deep stack: the job's call is at its bottom
		pcs = make([]uintptr, 2*len(pcs))
		n = runtime.Callers(2, pcs)
	}
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if f.Function == callerName {
			return true
		}
		if !more {
			return false
		}
	}
}

// goCoordinated runs r, a coordinated run, in the background: its whole
// life, claim included.
func (r *run) goCoordinated() bool {
	if !r.rs.fire(r) {
		return false
	}
	r.co.work.add() // the client outlives the run
	r.co.claims.gate.do(r.gated(), func(answered func()) {
		defer r.co.work.done()
		defer r.rs.end(r)
		defer r.cancel(nil)
		defer answered()
		r.answered = answered
		r.live()
	})
	return true
}

// gated reports whether r's goroutine waits for its turn at the claim gate
// (gate.go): a leader's tick, caught up or not, whose claim goes straight to
// its batch, its jitter over.
func (r *run) gated() bool {
	return r.term != nil && r.scheduled() && r.buf == nil && r.recovery == nil &&
		!r.tick.Add(r.delay).After(r.co.clock.Now())
}

// live is a coordinated run's life.
func (r *run) live() {
	if !awaitJitter(r) {
		r.co.unclaimed.note(r) // given up before its claim: nothing of it is in etcd
		return
	}
	r.rs.awaitRemoved(r, withdrawTimeout) // a reload's tick fired again (reload.go)
	asked := r.co.clock.Now()
	c, err := r.co.claims.claimRun(r)
	latency := r.co.clock.Now().Sub(asked)
	if err != nil {
		r.co.claims.triage(r, err)
		return
	}
	// From the claim on, the run is its claim's: the session that holds
	// its marker, lost, ends it.
	stop := context.AfterFunc(c.sess.Context(), func() { r.cancel(context.Cause(c.sess.Context())) })
	defer stop()
	replace := r.job.policy.overlap == Replace && r.bf == nil // a backfill runs in turn (backfill.go)
	if !r.rs.hold(r, replace) {
		r.giveBack(c, context.Cause(r.ctx))
		return
	}
	if replace {
		release, why := replacing(r, c)
		if why == nil && !r.rs.start(r) {
			why = context.Cause(r.ctx)
		}
		if why != nil {
			release()
			r.giveBack(c, why)
			return
		}
		defer release()
	}
	if err := r.co.claims.takeBuffered(r, c); err != nil { // a buffered tick leaves its buffer (buffer.go)
		r.giveBack(c, err)
		return
	}
	// The session's context ends the run at its safe deadline, from a
	// goroutine of its own: a deadline that has passed by now is asked of
	// the session itself, so that nothing starts past it (G2).
	if err := r.co.claims.sessions.Holds(c.sess); err != nil { // mutation:start-past-deadline
		r.cancel(err)
		r.giveBack(c, err)
		return
	}
	if c.share != nil {
		c.share.decide(c.index, true) // the last of a record's runs settles it
	}
	runAttempts(r, c, latency)
}

// giveBack gives back the claim of a run that does not start, and says
// why: Stop, Remove or the end of its term, whose successor then runs the
// tick; a later tick of a Replace job, which stands for it; or the loss of
// its claim's session.
func (r *run) giveBack(c held, why error) {
	co := r.co
	switch {
	case errors.Is(why, ErrReplaced):
		co.logger.Info("cronx: skipped: a later run was claimed while this one waited to start", "job", r.job.name, "tick", r.tick)
		if r.scheduled() {
			co.rep.notRun(r.job.name, r.tick, ReasonOvertaken, nil)
		}
		// The later run stands for this one: only the marker goes. Given
		// back, a trigger's request would be claimed again, and replace
		// the later run in turn, for as long as a burst of them lasts.
		r.release(c) // mutation:replaced-released
		if c.share == nil {
			// Its place on the lease goes with the marker.
			co.claims.sessions.Put(c.sess) // mutation:replaced-uncounted
		}
		return
	case co.claims.sessions.Holds(c.sess) != nil: // mutation:given-back-by-term-session
		// The claim's own session tells, not why: a term whose session
		// lapsed gives its runs' claims back, which the runners' lease
		// holds, for the next term to run.
		co.logger.Error(why, "cronx: not run: its claim was lost before it started", "job", r.job.name, "tick", r.tick)
		if r.scheduled() {
			co.rep.notRun(r.job.name, r.tick, ReasonEtcdUnavailable, why)
		}
	default:
		co.logger.Info("cronx: claimed but not started; given back", "job", r.job.name, "tick", r.tick, "why", why)
		co.unclaimed.note(r)
	}
	co.claims.giveBack(r, c)
}

// release deletes the marker of a run that gave way to a later one, within
// withdrawTimeout; a marker etcd does not delete is retried while its
// session lives.
func (r *run) release(c held) {
	co := r.co
	ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
	defer cancel()
	if err := claims.Release(ctx, co.conn.etcd(), c.claim); err != nil {
		co.logger.Error(err, "cronx: release the marker of a run that gave way", "job", r.job.name, "tick", r.tick)
		co.rec.releaseLater(finishItem{job: r.job.name, tick: r.tick, claim: c.claim, sess: c.sess})
	}
}

// info is the Info of r's attempt, as its job sees it.
func (r *run) info(c held, attempt int) Info {
	return Info{Job: r.job.name, Tick: r.tick, Instance: r.co.identity, Fence: c.claim.Fence, Triggered: r.triggered(), Backfill: r.bf != nil, Attempt: attempt,
		CaughtUp: r.catchUp, Recovered: r.recovered}
}

// held is a claim that holds: the run's, and the session of its marker;
// for a run claimed by a tick's record, the record's share and the run's
// job's place in it.
type held struct {
	claim election.Claim
	sess  *election.Session
	share *tickShare
	index int
}
