package cronx

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// countingKV counts the transactions sent through it, and countingWatcher
// the watches opened.
type countingKV struct {
	clientv3.KV
	txns atomic.Int64
}

func (k *countingKV) Txn(ctx context.Context) clientv3.Txn {
	k.txns.Add(1)
	return k.KV.Txn(ctx)
}

type countingWatcher struct {
	clientv3.Watcher
	watches atomic.Int64
}

func (w *countingWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	w.watches.Add(1)
	return w.Watcher.Watch(ctx, key, opts...)
}

// TestBufferAllDrainCostsAFewRequestsATick: k ticks wait in a BufferAll
// job's buffer, and run one after the other; each deletion wakes one waiting
// run (the one after the tick that leaves, or the head once the run in
// progress ends), so the drain costs a few transactions and watches a tick,
// not a wake-up of every waiting run at every step (about k*k/2).
func TestBufferAllDrainCostsAFewRequestsATick(t *testing.T) {
	t.Parallel()
	const k = 20
	const perTick = 8 // the turn's tries, its start, the record and the marker's deletion
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	kv, w := &countingKV{KV: cli.KV}, &countingWatcher{Watcher: cli.Watcher}
	cli.KV, cli.Watcher = kv, w
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	fake := clock.NewFake(start)
	h := newHeldJob()
	pc := &policyCluster{t: t, cli: srv.Client(t), name: "bufdrain"}
	c := New(WithEtcd(cli), WithName("bufdrain"), withClock(fake), WithLocation(time.UTC), WithLogger(testLogger{t, "a"}),
		WithMode(LeaderMode), WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	mustAdd(t, c, "* * * * *", Named("slow", h.job(), WithOverlap(BufferAll)))
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	pc.ids, pc.fakes, pc.crons = []string{"a"}, []*clock.Fake{fake}, []*Cron{c}
	pc.next(tick)
	waitStart(t, h.starts, "run of the first tick")
	var waiting []time.Time
	for i := 1; i <= k; i++ {
		at := tick.Add(time.Duration(i) * time.Minute)
		pc.next(at)
		waiting = append(waiting, at)
		pc.waitBuffered("slow", waiting...)
	}

	txns, watches := kv.txns.Load(), w.watches.Load()
	for i, want := range waiting {
		h.release <- struct{}{}
		if s := waitStart(t, h.starts, "run of a buffered tick"); !s.info.Tick.Equal(want) {
			t.Fatalf("buffered run %d is of %v, want %v", i, s.info.Tick, want)
		}
	}
	h.release <- struct{}{}
	pc.waitBuffered("slow")
	gotTxns, gotWatches := kv.txns.Load()-txns, w.watches.Load()-watches
	t.Logf("draining %d buffered ticks: %d transactions, %d watches", k, gotTxns, gotWatches)
	if gotTxns > perTick*k {
		t.Errorf("draining %d buffered ticks took %d transactions, want at most %d", k, gotTxns, perTick*k)
	}
	if gotWatches > 2*k {
		t.Errorf("draining %d buffered ticks opened %d watches, want at most %d", k, gotWatches, 2*k)
	}
}
