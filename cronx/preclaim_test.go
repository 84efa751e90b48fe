package cronx

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCrowdedTickIsClaimedAheadAndGivenBackOnStop registers more jobs on one
// minute than a leader claims at the tick. The leader claims them ahead and
// runs them at the tick; then, having claimed the next tick ahead, it stops:
// it gives the claims back before resigning, and its successor runs that
// tick, each job once.
func TestCrowdedTickIsClaimedAheadAndGivenBackOnStop(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	n := preclaimMin + 20
	start := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	tick1, tick2 := start.Truncate(time.Minute).Add(time.Minute), start.Truncate(time.Minute).Add(2*time.Minute)
	type ran struct {
		by, job string
		tick    time.Time
	}
	runs := make(chan ran, 4*n)
	replica := func(id string, fake *clock.Fake) *Cron {
		c := New(withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger), WithEtcd(cli), WithName("crowd"),
			WithElection(election.WithIdentity(id), election.WithTTL(10*time.Second)))
		for i := range n {
			job := ContextFunc(func(ctx context.Context) error {
				info, _ := InfoFrom(ctx)
				runs <- ran{id, info.Job, info.Tick}
				return nil
			})
			if _, err := c.AddJob("* * * * *", Named(fmt.Sprintf("job-%03d", i), job)); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	leading := func(c *Cron) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !c.coord.scheduling() {
			if time.Now().After(deadline) {
				t.Fatal("no term within 10s")
			}
			time.Sleep(5 * time.Millisecond)
		}
		c.Entries() // the loop has resynced to the term
	}
	// claimed waits until every job's last claimed tick is tick.
	claimed := func(tick time.Time) {
		t.Helper()
		want := fmt.Sprintf("%020d ", tick.UnixNano())
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp, err := cli.Get(context.Background(), election.DefaultPrefix+"/jobs/crowd/", clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			done := 0
			for _, kv := range resp.Kvs {
				if strings.HasSuffix(string(kv.Key), "/last") && strings.HasPrefix(string(kv.Value), want) {
					done++
				}
			}
			if done == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d jobs claimed for %v", done, n, tick)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// advance moves fake to its next wake-up, which must be at.
	advance := func(fake *clock.Fake, at time.Time) {
		t.Helper()
		fake.WaitDue(at, 10*time.Second) // a new leader resyncs from an idle wait
		due, ok := fake.NextDue()
		if !ok || !due.Equal(at) {
			t.Fatalf("next wake-up %v (%v), want %v", due, ok, at)
		}
		fake.Set(due)
	}
	collect := func(by string, tick time.Time) {
		t.Helper()
		seen := map[string]bool{}
		timeout := time.After(20 * time.Second)
		for len(seen) < n {
			select {
			case r := <-runs:
				if r.by != by || !r.tick.Equal(tick) || seen[r.job] {
					t.Fatalf("run %+v: want each job once, by %s, for %v", r, by, tick)
				}
				seen[r.job] = true
			case <-timeout:
				t.Fatalf("%d of %d jobs ran for %v", len(seen), n, tick)
			}
		}
	}

	fakeA, fakeB := clock.NewFake(start), clock.NewFake(start)
	a := replica("a", fakeA)
	a.Start()
	leading(a)
	b := replica("b", fakeB)
	b.Start()
	defer func() { <-b.Stop().Done() }()

	// The leader wakes ahead of the tick, claims every job, then runs them
	// at the tick without another round trip.
	advance(fakeA, tick1.Add(-preclaimLead))
	claimed(tick1)
	advance(fakeA, tick1)
	collect("a", tick1)

	// It claims the next tick ahead, then stops before it.
	advance(fakeA, tick2.Add(-preclaimLead))
	claimed(tick2)
	fakeB.Set(tick2.Add(-preclaimLead - time.Second)) // b's clock agrees with a's
	<-a.Stop().Done()
	leading(b)
	// The successor claims ahead too, now that the claims are back.
	advance(fakeB, tick2.Add(-preclaimLead))
	claimed(tick2)
	advance(fakeB, tick2)
	collect("b", tick2)
	select {
	case r := <-runs:
		t.Fatalf("an extra run: %+v", r)
	default:
	}
}
