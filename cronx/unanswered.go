package cronx

import (
	"context"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A claim whose answer was lost (a member died between the commit and the
// reply, a connection was cut) may have committed: its tick is then
// claimed and its in-progress marker written, on a lease this replica
// keeps alive for its other runs. Tried again, the claim is refused (the
// tick is claimed, the job busy), and the marker would stay as long as the
// lease: a Forbid job would be busy on every replica for as long as this
// one lives, and the tick would run nowhere.
//
// So a run that sent a claim without an answer, and then has it refused,
// reads its marker: a marker with its claim's value, on one of this
// replica's marker leases, created after floor, while no other run of the
// same tick here holds a claim, is its own earlier try's. The run then
// holds that claim, and starts or gives it back as any run that holds one
// does. A run that gives up while etcd still does not answer (its deadline
// passed, or Stop) does not wait for it: a goroutine looks for the marker
// once etcd answers, and releases it if it is the run's.
//
// floor is the revision of the term the claim was made under (a leader's
// earlier term may have left a marker of the same tick); zero in claim
// mode, where a replica fires each tick once.
//
// Cost: one read, only after a claim went unanswered.

// unansweredError wraps the outcome of a claim sent again after a try that
// was sent and not answered.
type unansweredError struct{ error }

func (e *unansweredError) Unwrap() error { return e.error }

// adoptUnanswered returns the claim r made in a try etcd did not answer,
// if that try committed: of seq, with marker (counted on its lease).
func (cl *claimer) adoptUnanswered(r *run, marker string, seq, floor int64) (held, bool) {
	co := cl.co
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	resp, err := co.conn.etcd().Get(ctx, marker)
	if err != nil || len(resp.Kvs) == 0 {
		return held{}, false
	}
	kv := resp.Kvs[0]
	// A twin whose claim is on the wire (a catch-up of the tick beside its
	// recovery) may have written the marker: its answer tells, within the
	// claim's own bound.
	for twin, sent := r.rs.twin(r); twin && sent && ctx.Err() == nil; twin, sent = r.rs.twin(r) {
		sleep(ctx, twinPoll)
	}
	if !cl.mine(r, kv, seq, floor) {
		return held{}, false
	}
	sess := cl.sessions.Ours(clientv3.LeaseID(kv.Lease), true)
	if sess == nil {
		return held{}, false
	}
	co.logger.Info("cronx: a claim whose answer was lost had committed; its run goes on", "job", r.job.name, "tick", r.tick)
	c := election.Claim{Seq: seq, Revision: kv.CreateRevision, Fence: election.Fence{Key: marker, Revision: kv.CreateRevision}}
	return held{claim: c, sess: sess}, true
}

// adoptIfUnanswered is adoptUnanswered after a try that went unanswered;
// nothing otherwise.
func (cl *claimer) adoptIfUnanswered(r *run, unanswered bool, marker string, seq, floor int64) (held, bool) {
	if !unanswered {
		return held{}, false
	}
	return cl.adoptUnanswered(r, marker, seq, floor)
}

// givenUpUnanswered is the error of a scheduled run of a tick that gave up
// after a try that went unanswered: triage reports it, then releases the
// marker that try may have written (releaseIfUnanswered), telling it the
// reason reported.
type givenUpUnanswered struct {
	error
	marker     string
	seq, floor int64
}

func (e *givenUpUnanswered) Unwrap() error { return e.error }

// releaseIfUnanswered, after a try that went unanswered, releases in the
// background the marker that try may have written, for r, which gives up:
// once etcd answers, a marker that is r's (as adoptUnanswered tells) is
// deleted, while the Cron runs. Its tick stays claimed, as its job's last,
// which the tally of ticks not run takes for a tick that ran: so a tick r
// reported not run with reason (none: zero) is counted as its own claim's,
// unless its run is in the history (notrun.go).
func (cl *claimer) releaseIfUnanswered(r *run, unanswered bool, marker string, seq, floor int64, reason Reason) {
	if !unanswered { // mutation:unanswered-not-released
		return
	}
	co := cl.co
	ctx := co.runCtx()
	co.work.add() // the client outlives it
	go func() {
		defer co.work.done()
		for backoff := retryBackoff; ctx.Err() == nil; backoff = min(2*backoff, maxRetryBackoff) {
			rctx, cancel := context.WithTimeout(ctx, etcdTimeout)
			resp, err := co.conn.etcd().Get(rctx, marker)
			cancel()
			if err == nil {
				if len(resp.Kvs) > 0 && cl.mine(r, resp.Kvs[0], seq, floor) {
					c := election.Claim{Seq: seq, Fence: election.Fence{Key: marker, Revision: resp.Kvs[0].CreateRevision}}
					co.rec.releaseLater(finishItem{job: r.job.name, tick: r.tick, claim: c, sess: cl.sessions.Ours(clientv3.LeaseID(resp.Kvs[0].Lease), false)})
					if reason != 0 { // mutation:unanswered-claim-uncounted
						co.rep.tally.add(r.job.name, notRunEntry{tick: r.tick.UnixNano(), hour: hourOf(r.tick), reason: reason, n: 1, own: true})
					}
				}
				return
			}
			sleep(ctx, backoff)
		}
	}()
}

// mine reports whether kv, a marker read for r's claim of seq, is the one
// r's unanswered try wrote.
func (cl *claimer) mine(r *run, kv *mvccpb.KeyValue, seq, floor int64) bool {
	return string(kv.Value) == claimcond.Value(seq, cl.co.identity) && kv.CreateRevision > floor &&
		cl.sessions.Live(clientv3.LeaseID(kv.Lease)) && !cl.twin(r)
}

// twin reports whether another run of r's tick has a claim on the wire or
// holding.
func (cl *claimer) twin(r *run) bool {
	twin, _ := r.rs.twin(r)
	return twin
}
