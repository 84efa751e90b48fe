package cronx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
)

// triage reports a claim that failed: to the observers and the tally of
// ticks not run with its Reason, and to the log when it is worth a line.
// base is the context the claim was made under.
func (cl *claimer) triage(base context.Context, r run, err error) {
	var ce *election.ClaimedError
	var reason Reason
	switch {
	case errors.As(err, &ce) && ce.Holder == cl.identity && ce.Seq > ce.Want && r.triggered == 0 && !r.catchUp:
		reason = ReasonOvertaken
		later := time.Unix(0, ce.Seq).In(r.tick.Location())
		var re *retriedError
		if errors.As(err, &re) {
			// etcd was out: its ticks were retried together, and the
			// latest one that ran stands for them, as after any outage.
			cl.logger.Info("cronx: skipped: a later tick ran after etcd came back", "job", r.job, "tick", r.tick, "later", later)
			break
		}
		// This replica claimed a later tick first though this tick's
		// claim went out first: it was held up past the next one's (etcd
		// changing raft leader), or the clock went back. Nobody runs it;
		// say so.
		cl.logger.Error(fmt.Errorf("a later tick, %s, was claimed first", later.Format(time.RFC3339)),
			"cronx: tick not run", "job", r.job, "tick", r.tick)
	case errors.Is(err, errSuperseded):
		reason = ReasonOvertaken
		cl.logger.Info("cronx: skipped: "+err.Error(), "job", r.job, "tick", r.tick)
	case errors.Is(err, election.ErrClaimed), errors.Is(err, claims.ErrNeverClaimed):
		// Another replica ran it, or a catch-up found nothing to resume.
		if cl.mode == ClaimMode && !r.catchUp && errors.Is(err, election.ErrClaimed) {
			reason = ReasonClaimedElsewhere
		}
	case errors.Is(err, election.ErrBusy):
		reason = ReasonOverlap
		cl.logger.Info("cronx: skipped: a run is in progress", "job", r.job, "tick", r.tick)
	case errors.Is(err, ErrPaused):
		reason = ReasonPaused
		cl.logger.Info("cronx: skipped: paused", "job", r.job, "tick", r.tick)
	case errors.Is(err, election.ErrTTLBelowMinimum):
		reason = ReasonEtcdRefused // logged once, as etcd first refused it (ttlrefused.go)
	case base.Err() != nil:
		// Stopped or no longer leading: not a failure of this tick. A
		// successor reports it if nobody ran it.
	default:
		if refusal, _ := etcdRefusal(err); refusal != nil {
			reason = ReasonEtcdRefused
		} else if !errors.Is(err, election.ErrNotLeader) {
			reason = ReasonEtcdUnavailable
		}
		cl.logger.Error(err, "cronx: tick not run", "job", r.job, "tick", r.tick)
	}
	if reason != 0 && r.triggered == 0 {
		cl.notRun(r.job, r.tick, reason, err)
	}
}
