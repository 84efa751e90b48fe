package cronx

import (
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestClaimModeEtcdBackEmptyDoesNotRunATickAgain: in claim mode a replica
// whose clock is behind fires a tick that a faster replica has already run,
// while it cannot reach etcd, and etcd loses its data meanwhile. Once etcd is
// back, empty, the slow replica must not claim that tick: a claim retried on
// a later session than the tick fired under needs the job's claim key, which
// the empty etcd does not have.
func TestClaimModeEtcdBackEmptyDoesNotRunATickAgain(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	srv := etcdtest.Start(t)
	l := newLedger()
	// A tick every 10 s, so that no later tick's claim gets in first. A
	// session lives 5 s, so that the slow replica fires the tick well
	// before its session, which etcd's death ends, is lost: with 2 s, it
	// could be lost 0.3 s after the tick was due, and a loaded machine fired
	// it later than that.
	replica := func(cli *clientv3.Client, id string, skew time.Duration) *replica {
		c := New(WithSeconds(), WithEtcd(cli), WithName("test"), WithMode(ClaimMode),
			WithElection(election.WithIdentity(id), election.WithTTL(5*time.Second)), withClock(offsetClock{skew}))
		if _, err := c.AddJob("*/10 * * * * *", Named("tick", l.job(id, nil))); err != nil {
			t.Fatal(err)
		}
		c.Start()
		r := &replica{id: id, cron: c, cli: cli}
		t.Cleanup(func() { r.stop(t) })
		return r
	}
	fast := replica(srv.Client(t), "fast", 2*time.Second)
	replica(srv.Client(t), "slow", -2*time.Second)

	// The fast replica runs tick X 2 s before it is due; the slow one fires it
	// 2 s after. The fast one stops at once.
	var x time.Time
	deadline := time.After(20 * time.Second)
	for x.IsZero() {
		select {
		case r := <-l.ch:
			if r.Instance == "fast" {
				x = r.Tick
			}
		case <-deadline:
			t.Fatal("the fast replica ran no tick within 20s")
		}
	}
	fast.stop(t)
	// etcd dies just before the slow replica fires X, with its session still
	// live (until 4.3 s after X at the earliest), and comes back with no
	// data once that session is lost (6 s after X at the latest), while the
	// claim of X is still being retried.
	time.Sleep(time.Until(x.Add(1500 * time.Millisecond)))
	srv.Kill()
	time.Sleep(time.Until(x.Add(7500 * time.Millisecond)))
	srv.Wipe(t)

	// The next tick runs, on the slow replica's new session; X did not run again.
	deadline = time.After(20 * time.Second)
	for {
		select {
		case r := <-l.ch:
			if r.Instance == "slow" && r.Tick.After(x) {
				if n := l.count(x); n != 1 {
					t.Fatalf("tick %v ran %d times", x, n)
				}
				return
			}
			if r.Instance == "slow" && r.Tick.Equal(x) {
				t.Fatalf("tick %v ran again on the empty etcd, by the slow replica", x)
			}
		case <-deadline:
			t.Fatal("the slow replica ran no tick within 20s of etcd's return")
		}
	}
}

// count returns how many runs tick had.
func (l *ledger) count(tick time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.runs {
		if r.Tick.Equal(tick) {
			n++
		}
	}
	return n
}
