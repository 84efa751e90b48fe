package cronx

import (
	"context"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
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
// So a run that sent a claim without an answer, and then learns no
// success, reads its marker before it gives up: a marker with its claim's
// value, on one of this replica's marker leases, created after floor, while
// no other run of the same tick here holds a claim, is its own earlier
// try's. The run then holds that claim, and starts or gives it back as any
// run that holds one does.
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
// if that try committed: of seq, with marker (counted on its lease unless
// it is a trigger's).
func (cl *claimer) adoptUnanswered(r *run, marker string, seq, floor int64) (held, bool) {
	co := cl.co
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	resp, err := co.conn.etcd().Get(ctx, marker)
	if err != nil || len(resp.Kvs) == 0 {
		return held{}, false
	}
	kv := resp.Kvs[0]
	if string(kv.Value) != claimcond.Value(seq, co.identity) || kv.CreateRevision <= floor || r.rs.twin(r) {
		return held{}, false
	}
	sess := cl.sessions.ours(clientv3.LeaseID(kv.Lease), !r.triggered())
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
