package cronx

import (
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestResyncAtATickKeepsTheTick: a resync (this replica starts or stops
// scheduling) that the loop takes at the moment its timer fires must not
// recompute the due entry past its tick. The loop is held on a snapshot
// while the tick comes and the resync is asked, so it finds both ready at
// once; a select that drops the timer would skip about half the ticks.
func TestResyncAtATickKeepsTheTick(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(t0)
	fc := newFakeCron(t, fake, fake, WithSeconds())
	fc.Schedule(Every(time.Second), FuncJob(func() {}))
	fc.Start()
	for i := range 24 {
		if len(fc.settle(t)) != 1 {
			t.Fatal("the entry is gone")
		}
		due, _ := fc.clock.NextDue()
		reply := make(chan []Entry)
		fc.loop.snapshot <- reply // the loop now waits for us to take its reply
		fake.Set(due)
		fc.requestResync()
		<-reply
		if f := fc.nextFiring(t); !f.tick.Equal(due) {
			t.Fatalf("tick %d: fired %v, want %v", i, f.tick, due)
		}
	}
}

// TestResyncJustBeforeATickKeepsTheTick: a resync that the loop takes just
// before its timer fires, and whose clock reading falls just after the
// tick, must run that tick rather than schedule past it. The clock's timers
// let it reach their due time as they are stopped, so the tick always comes
// between the loop's giving up its timer and its reading the clock.
func TestResyncJustBeforeATickKeepsTheTick(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(t0)
	fc := newFakeCron(t, tickOnStop{fake}, fake, WithSeconds())
	fc.Schedule(Every(time.Second), FuncJob(func() {}))
	fc.Start()
	for i := range 5 {
		if len(fc.settle(t)) != 1 {
			t.Fatal("the entry is gone")
		}
		due, _ := fc.clock.NextDue()
		fc.requestResync()
		if f := fc.nextFiring(t); !f.tick.Equal(due) {
			t.Fatalf("tick %d: fired %v, want %v", i, f.tick, due)
		}
	}
}

// tickOnStop is a fake clock whose timers, when stopped before they fire,
// move the clock to their due time.
type tickOnStop struct{ *clock.Fake }

func (c tickOnStop) NewTimer(d time.Duration) clock.Timer {
	return stopTicks{Timer: c.Fake.NewTimer(d), fake: c.Fake, due: c.Fake.Now().Add(d)}
}

type stopTicks struct {
	clock.Timer
	fake *clock.Fake
	due  time.Time
}

func (t stopTicks) Stop() bool {
	stopped := t.Timer.Stop()
	if stopped {
		t.fake.Set(t.due)
	}
	return stopped
}

// TestNewLeaderFiresNoTickOfItsIdleTime: a follower's entries keep the Next
// they had when it started, since it schedules nothing; when it takes over,
// it must fire only the catch-up of the latest missed tick, never those
// stale ticks as ticks of its own, which would be claimed in an etcd that
// forgot them (emptied) and run a second time.
func TestNewLeaderFiresNoTickOfItsIdleTime(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	replica := func(id string) *fakeCron {
		fake := clock.NewFake(t0)
		fc := newFakeCron(t, fake, fake, WithSeconds(), WithEtcd(srv.Client(t)), WithName("idle"),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		fc.AddJob("* * * * * *", Named("tick", FuncJob(func() {})))
		fc.Start()
		return fc
	}
	a := replica("a")
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	b := replica("b")
	waitCandidates(t, srv.Client(t), "idle", 2)
	// Five ticks pass on a; b, a follower, fires none.
	for range 5 {
		if !a.clock.WaitDueBy(a.clock.Now().Add(time.Second), wait) {
			t.Fatal("a armed no timer for its next tick")
		}
		due, _ := a.clock.NextDue()
		a.clock.Set(due)
		b.clock.Set(due)
		a.nextFiring(t)
	}
	takeover := b.clock.Now()
	<-a.Stop().Done()
	eventually(t, wait, func() (bool, string) { return b.coord.scheduling(), "b does not lead after a stopped" })
	if f := b.nextFiring(t); !f.tick.Equal(takeover) {
		t.Fatalf("b, taking over at %v, fired %v first, want only the catch-up of %v",
			takeover.Format(time.TimeOnly), f.tick.Format(time.TimeOnly), takeover.Format(time.TimeOnly))
	}
}
