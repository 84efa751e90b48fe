package cronx

import (
	"context"
	"time"

	"github.com/batonhq/baton/election"
)

// run describes one tick to claim and run.
type run struct {
	job       string
	tick      time.Time
	wrapped   Job
	overlap   Overlap
	policy    *jobPolicy
	delay     time.Duration // the jitter: the run is claimed at tick+delay
	catchUp   bool
	triggered int64 // the trigger's revision, for a triggered run
	// plain: nothing in wrapped can see its context's cancellation, so
	// the run is spared the plumbing.
	plain bool
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

// fire claims and runs one tick of e, in the background.
func (co *coordinator) fire(e *Entry, tick time.Time, catchUp bool) {
	var ts *termState
	if co.mode == LeaderMode {
		ts = co.currentTerm()
		if ts == nil { // mutation:follower-fires
			return
		}
	}
	if ts == nil {
		co.claims.fired.note(e.name, tick)
	}
	if !catchUp && co.clock.Now().After(co.deadline(run{tick: tick})) {
		// The loop woke up past the misfire deadline: the process stalled
		// or its clock jumped.
		co.notRun(e.name, tick, ReasonMisfireSkipped, nil)
		return
	}
	if p := co.claims.takePreclaim(e.name, tick, ts); p != nil && ts != nil {
		co.cronRuns.add()
		co.runs.add()
		go func() {
			defer co.cronRuns.done()
			defer co.runs.done()
			co.runPreclaimed(p)
		}()
		return
	}
	r := run{job: e.name, tick: tick, wrapped: e.WrappedJob, overlap: e.policy.overlap, policy: e.policy, catchUp: catchUp, plain: plainJob(e.WrappedJob),
		delay: jitterOf(e.name, tick, e.policy.jitter)}
	co.cronRuns.add()
	co.runs.add()
	go func() {
		defer co.cronRuns.done()
		defer co.runs.done()
		co.claimAndRun(r, ts)
	}()
}

// claimAndRun claims r in etcd and, if the claim holds, runs it.
func (co *coordinator) claimAndRun(r run, ts *termState) {
	var base context.Context
	if ts != nil {
		base = ts.ctx
	} else {
		co.mu.Lock()
		base = co.ctx
		co.mu.Unlock()
	}
	if !co.awaitJitter(base, r) {
		return
	}
	asked := co.clock.Now()
	claim, sess, err := co.claims.claim(base, r, ts, co.deadline(r))
	co.runClaimed(base, r, ts, claim, sess, err, co.clock.Now().Sub(asked))
}

// deadline is the last moment at which r may still be claimed: under Skip
// its tick plus skipTolerance, under RunOnce the misfire grace; a triggered
// run has the grace from now.
func (co *coordinator) deadline(r run) time.Time {
	latest := r.tick.Add(r.delay + skipTolerance)
	if co.misfire == RunOnce { // mutation:misfire-grace
		latest = r.tick.Add(r.delay + max(co.grace, skipTolerance))
	}
	if r.triggered != 0 {
		latest = co.clock.Now().Add(co.grace)
	}
	return latest
}

// runClaimed runs r if its claim succeeded, and has it recorded; a claim
// that failed goes to the claimer's triage. latency is how long the claim
// took.
func (co *coordinator) runClaimed(base context.Context, r run, ts *termState, claim election.Claim, sess *election.Session, err error, latency time.Duration) {
	if err != nil {
		co.claims.triage(base, r, err)
		return
	}
	// The run's fence is its in-progress marker, in leader mode too: bound
	// to the runners' lease, it outlives a term given up on Stop until the
	// run ends, and dies with the lease of a leader deposed while paused.
	info := Info{Job: r.job, Tick: r.tick, Instance: co.identity, Fence: claim.Fence, Triggered: r.triggered != 0, Attempt: 1}
	term := base // a retry waits for nothing once the term or the Cron's run has ended
	if base.Err() != nil {
		// Claimed as the Cron stopped or the term ended: the claim was sent
		// before, and it holds, so the run goes ahead as one already started
		// would. Its context ends only with its claim.
		base = context.WithoutCancel(base)
	}
	ctx := context.WithValue(base, infoKey{}, info)
	// A plain job cannot see its context; but a Replace job's wait for the
	// run it replaces ends with its claim too.
	if !r.plain || r.overlap == Replace {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		stop := context.AfterFunc(sess.Context(), func() { cancel(context.Cause(sess.Context())) })
		defer cancel(nil)
		defer stop()
	}
	if r.overlap == Replace && r.triggered == 0 {
		var release func()
		var why error
		if ctx, release, why = co.replacing(ctx, r, claim); why != nil {
			co.giveUp(r, claim, sess, why)
			return
		}
		defer release()
	}
	co.runAttempts(ctx, term, r, info, claim, sess, latency)
}

// latestTick returns the latest activation of s in (now-grace, now], or the
// zero time when there is none.
func latestTick(s Schedule, now time.Time, grace time.Duration) time.Time {
	var last time.Time
	for t := s.Next(now.Add(-grace)); !t.IsZero() && !t.After(now); t = s.Next(t) {
		last = t
	}
	return last
}
