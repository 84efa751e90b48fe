package cronx

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestReplaceRunThatLosesItsClaimWhileWaitingIsReported: a Replace run
// waits for the run it replaces (here, the marker of a run on a replica
// that is gone and whose lease has not expired); its own claim's session is
// lost meanwhile. The tick is reported not run because etcd was lost
// (etcd_unavailable), not as overtaken by a later tick, which there is not,
// and the run never starts.
func TestReplaceRunThatLosesItsClaimWhileWaitingIsReported(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := context.Background()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	fake := clock.NewFake(start)
	ev := newEventLog()
	started := make(chan struct{}, 1)
	c := New(append(observed(ev), withClock(fake), WithLocation(time.UTC), WithEtcd(cli), WithName("replace-lost"),
		WithMode(ClaimMode), WithLogger(testLogger{t, "a"}), WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))...)
	mustAdd(t, c, "* * * * *", Named("long", FuncJob(func() { started <- struct{}{} }), WithOverlap(Replace)))

	// The run before, on a replica that is gone: its marker lives for a
	// minute on a lease of its own.
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	running := c.coord.keys.Running("long")
	if _, err := cli.Put(ctx, running+"gone", "b", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	c.Start()
	t.Cleanup(func() { <-c.Stop().Done() })
	if !fake.WaitDueBy(tick, 15*time.Second) {
		t.Fatal("no timer armed for the tick within 15s")
	}
	fake.Set(tick)

	// The run's own marker appears beside the other one: it waits. Its
	// session's lease is revoked, as a wiped or unreachable etcd loses it.
	var own *clientv3.GetResponse
	eventually(t, 15*time.Second, func() (bool, string) {
		own, err = cli.Get(ctx, running, clientv3.WithPrefix())
		return err == nil && len(own.Kvs) == 2, "the run's marker beside the other run's"
	})
	for _, kv := range own.Kvs {
		if !strings.HasSuffix(string(kv.Key), "gone") {
			if _, err := cli.Revoke(ctx, clientv3.LeaseID(kv.Lease)); err != nil {
				t.Fatal(err)
			}
		}
	}
	e := waitNotRun(t, ev, "long", ReasonEtcdUnavailable, 15*time.Second)
	if !e.Tick.Equal(tick) || e.Err == nil || errors.Is(e.Err, ErrReplaced) {
		t.Errorf("reported %+v, want the tick %v with the session's loss", e, tick)
	}
	select {
	case <-started:
		t.Fatal("the run started though its claim was lost")
	default:
	}
}
