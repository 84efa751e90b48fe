package cronx

import (
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
)

// The tests of Entries under coordination: the values a robfig/cron user
// reads, robfig's where robfig has them.

// TestEntriesShowNoPrevForATickThatDidNotRun: right after Start, a new
// leader's catch-up fires the latest tick of a job that has never run, and
// its claim is refused; Entries shows no Prev, as robfig/cron's would.
func TestEntriesShowNoPrevForATickThatDidNotRun(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	fake := clock.NewFake(t0)
	a := newFakeCron(t, fake, fake, WithSeconds(), WithEtcd(srv.Client(t)), WithName("noprev"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	mustAdd(t, a.Cron, "* * * * * *", Named("tick", FuncJob(func() {})))
	a.Start()
	if f := a.nextFiring(t); !f.tick.Equal(t0) {
		t.Fatalf("the catch-up fired %v, want the latest tick, %v", f.tick, t0)
	}
	idleWithin(t, a.Cron, 10*time.Second, "the catch-up")
	for _, e := range a.Entries() {
		if !e.Prev.IsZero() {
			t.Errorf("Entries: Prev %v for a job that has not run", e.Prev)
		}
	}
}

// TestFollowersEntriesShowANextAhead: a follower does not schedule, but its
// Entries say when the job runs next, never a time gone by.
func TestFollowersEntriesShowANextAhead(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	fakeA, fakeB := clock.NewFake(t0), clock.NewFake(t0)
	a := newFakeCron(t, fakeA, fakeA, WithSeconds(), WithEtcd(srv.Client(t)), WithName("follownext"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	mustAdd(t, a.Cron, "* * * * * *", Named("tick", FuncJob(func() {})))
	a.Start()
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	b := newFakeCron(t, fakeB, fakeB, WithSeconds(), WithEtcd(srv.Client(t)), WithName("follownext"),
		WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))
	mustAdd(t, b.Cron, "* * * * * *", Named("tick", FuncJob(func() {})))
	b.Start()
	b.settle(t)
	now := t0.Add(10 * time.Second)
	fakeB.Set(now)
	if b.coord.scheduling() {
		t.Fatal("b leads as well as a")
	}
	for _, e := range b.Entries() {
		if !e.Next.After(now) {
			t.Errorf("a follower's Entries: Next %v at %v, a time gone by", e.Next, now)
		}
	}
}
