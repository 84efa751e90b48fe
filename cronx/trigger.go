package cronx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/jobkeys"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A trigger (Control.Trigger) is a request: a key of its own under the
// scheduler's trigger directory, .trigger/<job>/<id>, one per call. The
// replica that schedules (the leader, or every replica in claim mode)
// watches the directory and fires a run for each request of a job it has,
// which its overlap policy then treats as it treats a tick: under Allow it
// runs at once; under Forbid it waits its turn, and runs once the run in
// progress has ended; under Replace it replaces the run in progress, and
// the next tick replaces it. The run claims the request itself: one
// transaction deletes the request and creates the run's marker, so each
// request runs once in the cluster, whoever claims it first. A request
// whose run does not start (Stop, the end of the term) is put back for
// the next leader; one whose run gave way to a later run of a Replace job
// is not, since the later run stands for it.

// trigger is one request.
type trigger struct {
	key     string
	rev     int64     // the key's create revision: the request's identity
	at      time.Time // when Trigger was called: the run's Tick
	value   string    // the request as written, to put it back
	release string    // a run at start's release; empty for any replica
}

// triggerOf reads a request. A request of an older version (.trigger/<job>,
// whoever asked as its value) has the time it was seen.
func triggerOf(kv *mvccpb.KeyValue, seen time.Time) trigger {
	t := trigger{key: string(kv.Key), rev: kv.CreateRevision, at: seen, value: string(kv.Value)}
	if req, err := jobkeys.ParseTrigger(kv.Value); err == nil && req.At > 0 {
		t.at, t.release = time.Unix(0, req.At), req.Release
	}
	return t
}

// errTriggerTaken is the outcome of a claim of a request that is gone:
// another replica claimed it, or this one ran it already.
var errTriggerTaken = errors.New("the trigger was taken by another replica")

// claimTrigger claims r's request: in one transaction, while the request
// is there (and, in leader mode, the term holds, and under Forbid no run
// of the job is in progress), it deletes the request and creates r's
// marker. Under Forbid a busy job is waited for, its turn coming when its
// markers are gone; etcd not answering is retried until the misfire grace
// from the request's arrival.
func (cl *claimer) claimTrigger(r *run) (held, error) {
	co := cl.co
	job := r.job.name
	marker, running := co.writes.triggerMarker(r), co.writes.running(job)
	// A buffering job's trigger waits for the run in progress too.
	forbid := r.job.policy.overlap == Forbid || buffering(r.job.policy.overlap) // mutation:buffer-trigger
	latest := co.clock.Now().Add(max(co.grace, skipTolerance))
	backoff := retryBackoff
	// A try sent and not answered may have taken the request (unanswered.go).
	unanswered := false
	giveUp := func(err error) (held, error) {
		cl.releaseIfUnanswered(r, unanswered, marker, r.trig.rev, 0, 0)
		return held{}, err
	}
	for {
		sess, _, err := cl.sessions.Reserve(r.ctx, markerLeaseKeys, 1) // mutation:trigger-marker-counted
		if err == nil {
			var c held
			var busy int64
			c, busy, err = cl.sendTrigger(r, sess, marker, forbid)
			cl.sessions.Landed(sess, 1)
			if err != nil {
				cl.sessions.Put(sess) // no marker was written, or it is adopted and counted again
			}
			switch {
			case err == nil:
				co.rep.refusals.accepted()
				return c, nil
			case errors.Is(err, errNotSent):
				return giveUp(fmt.Errorf("%w (%v)", context.Cause(r.ctx), err))
			case errors.Is(err, election.ErrBusy):
				co.rep.refusals.accepted()
				co.logger.Info("cronx: a triggered run waits for the run in progress to end", "job", job)
				if err := awaitDeleted(r, running, busy, clientv3.WithPrefix()); err != nil {
					return held{}, err
				}
				latest = co.clock.Now().Add(max(co.grace, skipTolerance))
				continue
			case errors.Is(err, errTriggerTaken), errors.Is(err, election.ErrNotLeader):
				co.rep.refusals.accepted()
				if h, ok := cl.adoptIfUnanswered(r, unanswered, marker, r.trig.rev, 0); ok {
					return h, nil
				}
				return held{}, err
			default:
				unanswered = true // mutation:unanswered-trigger-not-adopted
			}
		}
		if err := retry(r, err, &backoff, latest, "claim of the trigger"); err != nil {
			return giveUp(err)
		}
	}
}

// sendTrigger sends one claim of r's request. A busy job's claim returns
// ErrBusy and the revision that found it busy.
func (cl *claimer) sendTrigger(r *run, sess *election.Session, marker string, forbid bool) (held, int64, error) {
	if !r.rs.send(r) {
		return held{}, 0, errNotSent
	}
	conds, then, orElse := cl.co.writes.triggerClaim(r, marker, forbid, sess.Lease())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), etcdTimeout)
	defer cancel()
	resp, err := cl.co.conn.etcd().Txn(ctx).If(conds...).Then(then...).Else(orElse...).Commit()
	if err == nil && resp.Succeeded {
		rev := resp.Header.Revision
		return held{claim: election.Claim{Seq: r.trig.rev, Revision: rev, Fence: election.Fence{Key: marker, Revision: rev}}, sess: sess}, 0, nil
	}
	r.rs.unsend(r) // waiting again: its turn, or etcd
	if err != nil {
		return held{}, 0, fmt.Errorf("claim the trigger %s: %w", r.trig.key, err)
	}
	rs := resp.Responses
	switch {
	case rs[0].GetResponseRange().Count == 0:
		return held{}, 0, errTriggerTaken
	case forbid && rs[1].GetResponseRange().Count > 0:
		return held{}, resp.Header.Revision, election.ErrBusy
	default:
		return held{}, 0, election.ErrNotLeader
	}
}

// awaitDeleted waits until key (a marker under running/ with
// clientv3.WithPrefix, or a pause key) is deleted after rev, or r's context
// ends.
func awaitDeleted(r *run, key string, rev int64, opts ...clientv3.OpOption) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(r.ctx))
	defer cancel()
	select {
	case <-r.co.conn.etcd().Watch(wctx, key, append(opts, clientv3.WithRev(rev+1), clientv3.WithFilterPut())...):
	case <-r.ctx.Done():
	}
	if r.ctx.Err() != nil {
		return context.Cause(r.ctx)
	}
	return nil
}

// giveBackTrigger puts the request of a run that does not start back, for
// the next leader, and deletes the run's marker while the marker is its.
func (cl *claimer) giveBackTrigger(ctx context.Context, r *run, c held) error {
	f := c.claim.Fence
	_, err := cl.co.conn.etcd().Txn(ctx).Then(
		clientv3.OpTxn([]clientv3.Cmp{f.Cmp()}, []clientv3.Op{clientv3.OpDelete(f.Key)}, nil),
		clientv3.OpPut(r.trig.key, r.trig.value),
	).Commit()
	if err != nil {
		return fmt.Errorf("give back the trigger %s: %w", r.trig.key, err)
	}
	return nil
}

// triggerID names a request: its time, and a random suffix, so that
// requests made at once are apart.
func triggerID(at time.Time, random uint32) string {
	return fmt.Sprintf("%020d-%08x", at.UnixNano(), random)
}

// watchTriggers fires a run for each request of a job this replica has
// until ctx ends: those waiting when it starts, then each new one. ts is
// the term it watches under in leader mode, nil in claim mode.
func (co *coordinator) watchTriggers(ctx context.Context, ts *termState) {
	watchPuts(ctx, co.conn.etcd(), co.writes.triggers(), func(kv *mvccpb.KeyValue, created bool) {
		if created {
			co.fireTrigger(kv, ts)
		}
	})
}

// watchPuts calls put with each key under prefix as a read finds it (with
// readOpts), then as each is put, until ctx ends: created tells a key the
// read found, or one the put created. A watch that etcd ends is followed
// by a read again.
func watchPuts(ctx context.Context, cli *clientv3.Client, prefix string, put func(kv *mvccpb.KeyValue, created bool), readOpts ...clientv3.OpOption) {
	for ctx.Err() == nil {
		resp, err := cli.Get(ctx, prefix, append(readOpts, clientv3.WithPrefix())...)
		if err != nil {
			sleep(ctx, watchRetry)
			continue
		}
		for _, kv := range resp.Kvs {
			put(kv, true)
		}
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for wr := range cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterDelete()) {
			if wr.Err() != nil {
				break
			}
			for _, ev := range wr.Events {
				put(ev.Kv, ev.Type == mvccpb.PUT && ev.Kv.Version == 1)
			}
		}
		cancel()
	}
}

// fireTrigger fires a run of the request kv, if this replica has its job.
func (co *coordinator) fireTrigger(kv *mvccpb.KeyValue, ts *termState) {
	name := co.writes.triggerJob(string(kv.Key))
	e, ok := co.host.entryByName(name)
	if !ok {
		return // another version of the app may have it
	}
	t := triggerOf(kv, co.clock.Now())
	if !co.mayRunStart(t) {
		return // a run at the start of another release, for its replicas
	}
	r := newRun(co.runs, co, refOf(&e), t.at)
	r.trig, r.term = &t, ts
	r.goCoordinated()
}
