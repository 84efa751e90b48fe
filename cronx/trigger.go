package cronx

import (
	"context"

	"github.com/batonhq/baton/election"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A trigger (Control.Trigger) is a key under the scheduler's trigger
// directory. The replica that schedules watches the directory, runs each
// triggered job once, cluster-wide, through a claim of the trigger's
// revision, and deletes the key.

// watchTriggers runs triggered jobs until ctx ends: those waiting when it
// starts, then each new trigger.
func (co *coordinator) watchTriggers(ctx context.Context, term *election.Term) {
	prefix := co.keys.triggers()
	for ctx.Err() == nil {
		resp, err := co.client.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			sleep(ctx, watchRetry)
			continue
		}
		for _, kv := range resp.Kvs {
			co.trigger(kv, term)
		}
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for wr := range co.client.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterDelete()) {
			if wr.Err() != nil {
				break
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.PUT {
					co.trigger(ev.Kv, term)
				}
			}
		}
		cancel()
	}
}

// trigger runs a triggered job once, cluster-wide, if this replica has it.
func (co *coordinator) trigger(kv *mvccpb.KeyValue, term *election.Term) {
	name := co.keys.triggerJob(string(kv.Key))
	e, ok := co.host.entryByName(name)
	if !ok {
		return // another version of the app may have it
	}
	var ts *termState
	if term != nil {
		ts = co.currentTerm()
		if ts == nil {
			return
		}
	}
	r := run{job: name, tick: co.clock.Now(), wrapped: e.WrappedJob, overlap: e.policy.overlap, policy: e.policy, triggered: kv.ModRevision, plain: plainJob(e.WrappedJob)}
	co.cronRuns.add()
	co.runs.add()
	go func() {
		defer co.cronRuns.done()
		defer co.runs.done()
		co.claimAndRun(r, ts)
		// Whoever ran it (or found it run) clears the request.
		dctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
		defer cancel()
		co.client.Txn(dctx).If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(string(kv.Key))).Commit()
	}()
}
