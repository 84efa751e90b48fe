package cronx

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// TestRunsOfACrowdedTickAreRecordedAfterItsClaims: on a tick of more jobs
// than the claims etcd takes at once, the runs that start first end while
// the others' claims wait; their records wait for those claims, rather
// than share etcd with them.
func TestRunsOfACrowdedTickAreRecordedAfterItsClaims(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	var started, startedBeforeRecords, recorded atomic.Int64
	startedBeforeRecords.Store(-1)
	cfg := sp.ClientConfig()
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if txn, ok := req.(*etcdserverpb.TxnRequest); ok {
				if n := historyWrites(txn); n > 0 {
					startedBeforeRecords.CompareAndSwap(-1, started.Load())
					recorded.Add(int64(n))
				}
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
	raw, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	const jobs = 2 * maxFlushers * claims.MaxEach
	tick := t0.Add(time.Minute)
	fake := clock.NewFake(tick.Add(-time.Second))
	var l tickLedger
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(sp.Within(raw)), WithName("record-yield"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%03d", i)
		ledger := l.job(names[i])
		mustAdd(t, c, "0 * * * * *", Named(names[i], ContextFunc(func(ctx context.Context) error {
			started.Add(1)
			return ledger.(ContextFunc)(ctx)
		})))
	}
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	eventually(t, wait, func() (bool, string) { return c.coord.scheduling(), "a does not lead" })
	if !fake.WaitDue(tick, wait) {
		t.Fatal("the scheduler did not wait for the tick")
	}
	fake.Advance(time.Second)
	l.ranOnce(t, time.Minute, tick, names...)
	eventually(t, time.Minute, func() (bool, string) {
		return recorded.Load() == jobs, fmt.Sprintf("%d of %d runs recorded", recorded.Load(), jobs)
	})
	// The records wait while a batch of claims or more is unanswered: by
	// the first, all but fewer than a batch of the runs have started.
	if before := startedBeforeRecords.Load(); before < jobs-claims.MaxEach {
		t.Errorf("the first record of a tick of %d jobs went out when %d runs had started, want %d or more", jobs, before, jobs-claims.MaxEach)
	}
}
