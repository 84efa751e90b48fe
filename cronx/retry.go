package cronx

import (
	"context"
	"fmt"
	"time"

	"github.com/batonhq/baton/election"
)

// retryPolicy is a job's WithRetries.
type retryPolicy struct {
	attempts int           // in all, the first included; 0 or 1: no retry
	backoff  time.Duration // before the second attempt; doubled for each next one
}

// WithRetries runs a failed run again, up to attempts runs in all, waiting
// backoff before the second attempt and twice as long before each next
// one. A run fails when a ContextJob returns an error (a timeout included);
// a plain Job never fails. The replica that holds the tick's claim retries
// it, under the same claim and in-progress marker (Info.Fence), and only
// while that claim and, in leader mode, its term hold: a replica that
// stops, crashes or loses its lease does not hand the remaining attempts to
// another, so the tick runs at most once, never twice at a time. Each
// attempt is a record of the history (Record.Attempt). A Forbid job's
// marker stays through the backoff, so its next tick is skipped rather
// than run beside a retry; an Allow job's next tick runs beside it.
func WithRetries(attempts int, backoff time.Duration) JobOption {
	return func(p *policyDraft) {
		if attempts < 0 || backoff < 0 {
			p.errs = append(p.errs, fmt.Errorf("WithRetries(%d, %s): want attempts and a backoff of 0 or more", attempts, backoff))
			return
		}
		p.retry = retryPolicy{attempts: attempts, backoff: backoff}
	}
}

// runAttempts is the attempts step of a run's life: it runs r under its
// claim c, again after each failure while attempts are left and the claim
// (and, in leader mode, the term) holds and the Cron runs, and has each
// attempt recorded; the claim's marker is released with the last. The
// running attempt is never interrupted by Stop or the end of the term,
// only by what ends r's context (its claim lost, a later tick of a Replace
// job, a timeout, Shutdown).
func runAttempts(r *run, c held, latency time.Duration) {
	co := r.co
	retries := r.job.policy.retry.attempts > 1
	wait := r.job.policy.retry.backoff
	for attempt := 1; ; attempt++ {
		actx := context.WithValue(r.ctx, infoKey{}, r.info(c, attempt))
		var started RunStarted
		if co.rep.observed() {
			started = co.rep.runStarted(r, c.claim, latency) // each attempt is a run to an observer
			co.rep.emit(started)
		}
		start := co.clock.Now()
		actx, timeout := withRunTimeout(actx, co.clock, r.job.policy.timeout)
		err := r.call(actx)
		timedOut, err := timeout.stop(replacedError(actx, err))
		end := co.clock.Now()
		it := finishItem{job: r.job.name, tick: r.tick, triggered: r.triggered(), backfill: r.bf != nil, claim: c.claim, sess: c.sess,
			start: start, end: end, err: err, timedOut: timedOut, policy: r.job.policy, caughtUp: r.catchUp, recovered: r.recovered}
		if c.share != nil {
			// The record's marker is the runs', released after the last
			// of them is recorded (tickrecord.go).
			it.claim.Fence, it.sess, it.share = election.Fence{}, nil, c.share
		}
		if retries {
			it.attempt = attempt
		}
		again := err != nil && attempt < r.job.policy.retry.attempts && r.ctx.Err() == nil && co.mayRetry(r)
		it.keep = again
		co.rec.finishLater(it)
		if co.rep.observed() {
			co.rep.emit(runEnded(started, end, err))
		}
		if !again {
			callHook(r, r.info(c, attempt), err)
			return
		}
		co.logger.Info("cronx: run failed; retrying", "job", r.job.name, "tick", r.tick, "attempt", attempt, "in", wait, "err", err)
		if !backoff(r, wait) || co.claims.sessions.Holds(c.sess) != nil {
			// The claim, the term or the Cron's run ended in the backoff:
			// no attempt follows.
			rctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
			co.rec.release(rctx, it)
			cancel()
			// Kept counted through the backoff, uncounted now.
			co.claims.sessions.Put(it.sess) // mutation:backoff-ended-uncounted
			callHook(r, r.info(c, attempt), err)
			return
		}
		wait *= 2
	}
}

// backoff waits d on the Cron's clock, and reports false if r's claim, its
// term or the Cron's run ended first.
func backoff(r *run, d time.Duration) bool {
	co := r.co
	t := co.clock.NewTimer(d)
	defer t.Stop()
	term := co.runCtx()
	if r.term != nil {
		term = r.term.ctx
	}
	select {
	case <-t.C():
		return r.ctx.Err() == nil && co.mayRetry(r) // mutation:retry-holds
	case <-r.ctx.Done(): // mutation:retry-claim
	case <-term.Done(): // mutation:retry-term
	}
	return false
}
