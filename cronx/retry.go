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

// runAttempts runs r under its claim, again after each failure while
// attempts are left and the claim and term hold, and has each attempt
// recorded; the claim's marker is released with the last. ctx is the run's
// context; term ends with the term (or the Cron's run in claim mode).
func (co *coordinator) runAttempts(ctx, term context.Context, r run, info Info, claim election.Claim, sess *election.Session, latency time.Duration) {
	retries := r.policy.retry.attempts > 1
	wait := r.policy.retry.backoff
	for attempt := 1; ; attempt++ {
		actx := ctx
		if attempt > 1 {
			info.Attempt = attempt
			actx = context.WithValue(ctx, infoKey{}, info)
		}
		var started RunStarted
		if len(co.obs) > 0 {
			started = co.runStarted(r, claim, latency) // each attempt is a run to an observer
			co.obs.emit(started)
		}
		start := co.clock.Now()
		actx, timeout := withRunTimeout(actx, co.clock, r.policy.timeout)
		err := runJob(actx, r.wrapped)
		timedOut, err := timeout.stop(replacedError(actx, err))
		end := co.clock.Now()
		it := finishItem{r: r, claim: claim, sess: sess, start: start, end: end, err: err, timedOut: timedOut}
		if retries {
			it.attempt = attempt
		}
		again := err != nil && attempt < r.policy.retry.attempts && ctx.Err() == nil && term.Err() == nil
		it.keep = again
		co.rec.finishLater(it)
		if len(co.obs) > 0 {
			co.obs.emit(runEnded(started, end, err))
		}
		if !again {
			return
		}
		co.logger.Info("cronx: run failed; retrying", "job", r.job, "tick", r.tick, "attempt", attempt, "in", wait, "err", err)
		if !co.backoff(ctx, term, wait) {
			// The claim or the term ended in the backoff: no attempt follows.
			rctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
			co.rec.release(rctx, it)
			cancel()
			return
		}
		wait *= 2
	}
}

// backoff waits d on the Cron's clock, and reports false if ctx or term
// ended first.
func (co *coordinator) backoff(ctx, term context.Context, d time.Duration) bool {
	t := co.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return ctx.Err() == nil && term.Err() == nil // mutation:retry-holds
	case <-ctx.Done(): // mutation:retry-claim
	case <-term.Done(): // mutation:retry-term
	}
	return false
}
