package cronx

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// TestATickFiredAsItsTermEndedIsCaughtUpByTheNextTerm: a leader fires a
// tick of a job with a catch-up window, and its term ends while the tick's
// claim is on the wire; the leader wins the next term before that claim
// comes back. The next term catches the tick up, where it used to find it
// fired already and leave it: the old term's run, given up once its claim
// came back, had not yet said so. (A cluster paused as a whole met it.)
func TestATickFiredAsItsTermEndedIsCaughtUpByTheNextTerm(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	admin := sp.Client(t)
	var armed atomic.Bool
	var held atomic.Int64 // the tick whose first claim is held back
	caughtUp := make(chan struct{})
	var once atomic.Bool
	cfg := sp.ClientConfig()
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			txn, _ := req.(*etcdserverpb.TxnRequest)
			seq, ok := int64(0), false
			if txn != nil {
				seq, ok = markerPut(txn, "tens/running/")
			}
			if !ok {
				return invoker(ctx, method, req, reply, cc, opts...)
			}
			if held.Load() == seq && once.CompareAndSwap(false, true) {
				close(caughtUp) // the tick's claim again: the next term's catch-up
			}
			if !armed.CompareAndSwap(true, false) {
				return invoker(ctx, method, req, reply, cc, opts...)
			}
			// The term ends as the claim goes out: its key goes.
			held.Store(seq)
			if _, err := admin.Delete(context.Background(), election.DefaultPrefix+"/election/takeover/", clientv3.WithPrefix()); err != nil {
				t.Error(err)
			}
			err := invoker(ctx, method, req, reply, cc, opts...)
			select { // back only once the next term has caught the tick up, or could have
			case <-caughtUp:
			case <-time.After(10 * time.Second):
			}
			return err
		}))
	raw, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	starts := make(chan Info, 64)
	c := New(append([]Option{}, WithSeconds(), WithEtcd(sp.Within(raw)), WithName("takeover"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))...)
	// Ten seconds apart, so that the next term, slow on a loaded machine,
	// starts before the tick after the one held back is due: the catch-up
	// runs the latest tick missed.
	mustAdd(t, c, "*/10 * * * * *", Named("tens", ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		starts <- info
		return nil
	}), WithCatchUp(time.Minute)))
	c.Start()
	t.Cleanup(func() { <-c.Stop().Done() })
	first := runAfter(t, starts, time.Time{}, 20*time.Second, "first run")
	armed.Store(true)
	got := runAfter(t, starts, first.Tick, 30*time.Second, "run of the tick fired as the term ended")
	if tick := time.Unix(0, held.Load()); !got.Tick.Equal(tick) || !got.CaughtUp {
		t.Errorf("after the term ended with tick %v's claim out, the next run was %v (caught up %v), want that tick, caught up",
			tick.Format(time.TimeOnly), got.Tick.Format(time.TimeOnly), got.CaughtUp)
	}
}
