package cronx

import (
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
)

// triage reports a claim of r that failed: to the observers and the tally
// of ticks not run with its Reason, and to the log when it is worth a line.
func (cl *claimer) triage(r *run, err error) {
	co := cl.co
	var ce *election.ClaimedError
	var reason Reason
	switch {
	case errors.As(err, &ce) && ce.Holder == co.identity && ce.Seq > ce.Want && !r.triggered() && !r.catchUp:
		reason = ReasonOvertaken
		later := time.Unix(0, ce.Seq).In(r.tick.Location())
		var re *retriedError
		if errors.As(err, &re) || r.term == nil && cl.fired.superseded(r.job.name, r.tick) { // mutation:overtaken-in-outage
			// etcd was out, or slow past the next tick: its ticks were
			// retried together (in claim mode, by etcd's client too, on the
			// connection it opened again), and the latest one that ran
			// stands for them, as after any outage.
			co.logger.Info("cronx: skipped: a later tick ran after etcd came back", "job", r.job.name, "tick", r.tick, "later", later)
			break
		}
		// A leader claimed a later tick first though this tick's claim
		// went out first: it was held up past the next one's (etcd
		// changing raft leader), or the clock went back. Nobody runs it;
		// say so.
		co.logger.Error(fmt.Errorf("a later tick, %s, was claimed first", later.Format(time.RFC3339)),
			"cronx: tick not run", "job", r.job.name, "tick", r.tick)
	case errors.Is(err, errSuperseded):
		reason = ReasonOvertaken
		co.logger.Info("cronx: skipped: "+err.Error(), "job", r.job.name, "tick", r.tick)
	case errors.As(err, &ce) && r.catchUp && r.term != nil && ce.Seq == ce.Want && (co.lost.recent(r.tick) || r.job.policy.recovery > 0): // mutation:runner-lost
		// A term before this one claimed the tick this term catches up:
		// whether it ran is known once its runner has recorded it, or its
		// marker has lapsed with the runner. A job that recovers its runs
		// is checked however long ago its tick was: its run may be long.
		co.lost.check(r.job.name, r.tick, ce.Holder, r.job.policy.recovery > 0)
	case errors.Is(err, errBufferFull):
		reason = ReasonBufferFull // mutation:buffer-drop-counted
		co.logger.Info("cronx: skipped: a run is in progress and its buffer is full", "job", r.job.name, "tick", r.tick)
	case errors.Is(err, errBufferTaken):
		// Another replica ran the buffered tick, or runs it.
	case errors.Is(err, ErrMaxRuns):
		reachedMaxRuns(r) // the job is done: not a tick missed
	case errors.Is(err, errTriggerTaken), errors.Is(err, errBackfillMoved):
		// Another replica took the request, or this one ran it already.
	case errors.Is(err, election.ErrClaimed), errors.Is(err, claims.ErrNeverClaimed):
		// Another replica ran it, or a catch-up found nothing to resume.
		if co.mode == ClaimMode && !r.catchUp && errors.Is(err, election.ErrClaimed) {
			reason = ReasonClaimedElsewhere
		}
	case errors.Is(err, election.ErrBusy):
		reason = ReasonOverlap
		co.logger.Info("cronx: skipped: a run is in progress", "job", r.job.name, "tick", r.tick)
	case errors.Is(err, ErrPaused):
		reason = ReasonPaused
		co.logger.Info("cronx: skipped: paused", "job", r.job.name, "tick", r.tick)
	case errors.Is(err, election.ErrTTLBelowMinimum):
		reason = ReasonEtcdRefused // logged once, as etcd first refused it (ttlrefused.go)
	case r.ctx.Err() != nil, errors.Is(err, election.ErrNotLeader): // mutation:not-leader-unclaimed
		// Given up (Stop, Remove, the end of its term, which etcd may tell
		// the claim before the term's watch tells the run): not a failure
		// of this tick, and nothing of it is in etcd. A successor reports
		// it if nobody ran it, and runs it late, as this replica does if
		// it leads next.
		co.unclaimed.note(r)
	default:
		if refusal, _ := etcdRefusal(err); refusal != nil {
			reason = ReasonEtcdRefused
		} else {
			reason = ReasonEtcdUnavailable
		}
		co.logger.Error(err, "cronx: tick not run", "job", r.job.name, "tick", r.tick)
	}
	if reason != 0 && r.scheduled() {
		co.rep.notRun(r.job.name, r.tick, reason, err)
	}
	if gu := (*givenUpUnanswered)(nil); errors.As(err, &gu) {
		cl.releaseIfUnanswered(r, true, gu.marker, gu.seq, gu.floor, reason)
	}
}
