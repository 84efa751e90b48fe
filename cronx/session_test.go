package cronx

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
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
