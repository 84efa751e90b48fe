package cronx

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestLostSessionKeepsItsMarkersUntilTheServerExpiresThem is G2's margin:
// a replica cut off past its session's safe deadline has its running job's
// context cancelled, and the job may take up to the margin to return. When
// etcd answers again, the replica's next claim makes a new session, and the
// lost one's lease is not revoked: the running run's marker stays until the
// server expires it, so the next tick of the Forbid job does not start
// beside the run that has not returned.
func TestLostSessionKeepsItsMarkersUntilTheServerExpiresThem(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	fake := clock.NewFake(t0)
	// The safe deadline comes 2 s after a keepalive, the server's expiry 10 s
	// after it: a window wide enough for the test's steps on a loaded machine.
	a := newFakeCron(t, fake, fake, WithSeconds(), WithEtcd(srv.NewClient(t, proxy.Endpoint())), WithName("lostmarker"),
		WithMode(ClaimMode), WithElection(election.WithIdentity("a"), election.WithTTL(10*time.Second), election.WithMargin(8*time.Second)))
	started := make(chan time.Time, 4)
	cancelled := make(chan error, 4)
	release := make(chan struct{})
	a.AddJob("* * * * * *", Named("slow", ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		started <- info.Tick
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
		<-release // a job that takes its time to stop
		return nil
	}), WithOverlap(Forbid)))
	a.Start()
	t.Cleanup(func() { proxy.Pass() })
	defer close(release)
	first := t0.Add(time.Second)
	if !fake.WaitDueBy(first, wait) {
		t.Fatal("no timer armed for the first tick")
	}
	fake.Set(first)
	if got := receive(t, started, "the first tick's run"); !got.Equal(first) {
		t.Fatalf("ran %v, want %v", got, first)
	}
	proxy.Blackhole()
	select {
	case <-cancelled:
	case <-time.After(15 * time.Second):
		t.Fatal("the run's context did not end within 15s of its replica being cut off")
	}
	proxy.Pass()
	second := first.Add(time.Second)
	if !fake.WaitDueBy(second, wait) {
		t.Fatal("no timer armed for the second tick")
	}
	fake.Set(second)
	// The loop arms the next tick's timer once it has fired this one; the
	// second tick's run then ends, one way or the other.
	if !fake.WaitDueBy(second.Add(time.Second), wait) {
		t.Fatal("the second tick did not fire")
	}
	eventually(t, 2*etcdTimeout, func() (bool, string) {
		select {
		case got := <-started:
			t.Fatalf("tick %v of the Forbid job started beside the run that had not returned: the lost session's lease was revoked", got)
		default:
		}
		return len(runsIn(a.Cron)) == 1, "the second tick's run has not ended"
	})
}

// TestMarkersSentTogetherCheckFewKeysInAnyOrder: transactions of markers
// reserved on one lease may commit in any order, so a large batch does not
// join a lease while a smaller one sent before it is unanswered (its puts
// would find the large batch's keys there), while small batches still share
// a lease, and a lease whose transactions are answered takes more.
func TestMarkersSentTogetherCheckFewKeysInAnyOrder(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t) // checkedKeys reads the whole keyspace
	cli := srv.Client(t)
	fake := clock.NewFake(t0)
	c := newFakeCron(t, fake, fake, WithEtcd(srv.Client(t)), WithName("sent"), WithElection(election.WithIdentity("a")))
	s := c.coord.claims.sessions
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	reserve := func(n int) *election.Session {
		t.Helper()
		sess, _, err := s.Reserve(ctx, markerLeaseKeys, n)
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	written := 0
	put := func(sess *election.Session, n int) {
		t.Helper()
		var ops []clientv3.Op
		for range n {
			written++
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/markers-sent/%04d", written), "", clientv3.WithLease(sess.Lease())))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	const many = 100 // within etcd's default --max-txn-ops
	small := reserve(3)
	large := reserve(many)
	if large == small {
		t.Errorf("a batch of %d markers was reserved on the lease of 3 sent and not answered", many)
	}
	put(large, many) // the later batch commits first
	put(small, 3)
	s.Landed(large, many)
	s.Landed(small, 3)
	if most := checkedKeys(t, cli, "/markers-sent/"); most >= markerLeaseKeys {
		t.Errorf("a marker's put found %d keys on its lease, want fewer than %d", most, markerLeaseKeys)
	}
	// Small batches share a lease, sent or answered.
	next := reserve(4)
	beside := reserve(5)
	if next != small || beside != small {
		t.Errorf("batches of 4 and 5 markers went on other leases than the one of 3, which holds %d keys", 3)
	}
	put(beside, 5)
	put(next, 4)
	s.Landed(beside, 5)
	s.Landed(next, 4)
	if most := checkedKeys(t, cli, "/markers-sent/"); most >= markerLeaseKeys {
		t.Errorf("a marker's put found %d keys on its lease, want fewer than %d", most, markerLeaseKeys)
	}
}
