package cronx

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
)

// TestRecoveryRunsATickAgainAcrossAnEtcdRestart: the leader that takes
// over a tick whose runner died waits for the dead runner's marker to
// lapse; etcd dies meanwhile and comes back with its data, the dead
// runner's lease with it. Once that lease has lapsed, the tick runs again,
// once, with Info.Recovered set.
func TestRecoveryRunsATickAgainAcrossAnEtcdRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("restarts etcd; the full tier runs it")
	}
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	T := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	keys := jobkeys.New(election.DefaultPrefix, "recover-restart")
	// The dead runner's lease, which nobody keeps alive.
	lostTickState(t, cli, keys, "hourly", "0 0 * * * *", T, grant(t, cli, 4))
	l := newEventLog()
	var ran tickLedger
	b := New(append(observed(l), WithSeconds(), WithEtcd(cli), WithName("recover-restart"), WithMisfire(RunOnce, time.Minute),
		withClock(clock.NewFake(T.Add(20*time.Second))), WithLocation(time.UTC), WithLogger(testLogger{t, "b"}),
		WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))...)
	mustAdd(t, b, "0 0 * * * *", Named("hourly", ran.job("hourly"), WithOverlap(Forbid), WithRecovery(1)))
	b.Start()
	t.Cleanup(func() { shutdown(t, b, "b") })
	waitFor[leadershipGained](t, l, 10*time.Second, "leadership of b", nil)
	srv.Kill()
	srv.Restart(t)
	waitFor(t, l, 30*time.Second, fmt.Sprintf("run again of %v", T), func(e RunStarted) bool { return e.Tick.Equal(T) && e.Recovered == 1 })
	idleWithin(t, b, 20*time.Second, "b")
	ran.ranOnce(t, time.Second, T, "hourly")
}

// TestALostTickCheckedTwiceRunsAgainOnce: a tick whose runner died, looked
// at again while its check waits for the dead runner's marker (a new term
// of the same leader, say), runs again once when the marker lapses, and is
// not also reported lost with its recoveries spent.
func TestALostTickCheckedTwiceRunsAgainOnce(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	T := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	keys := jobkeys.New(election.DefaultPrefix, "recover-twice")
	lease := grant(t, cli, 60)
	lostTickState(t, cli, keys, "hourly", "0 0 * * * *", T, lease)
	l := newEventLog()
	var ran tickLedger
	b := New(append(observed(l), WithSeconds(), WithEtcd(cli), WithName("recover-twice"), WithMisfire(RunOnce, time.Minute),
		withClock(clock.NewFake(T.Add(20*time.Second))), WithLocation(time.UTC), WithLogger(testLogger{t, "b"}),
		WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))...)
	mustAdd(t, b, "0 0 * * * *", Named("hourly", ran.job("hourly"), WithOverlap(Forbid), WithRecovery(1)))
	b.Start()
	t.Cleanup(func() { shutdown(t, b, "b") })
	waitFor[leadershipGained](t, l, 10*time.Second, "leadership of b", nil)
	lc := b.coord.lost
	lc.check("hourly", T, "a", true)
	lc.check("hourly", T, "a", true)
	// Whatever the two checks queued is taken by the checker before the
	// marker lapses: a round that takes it has read every tick queued
	// before it while the marker was there, so every check of the tick,
	// the term's own included, is read together from then on.
	eventually(t, 20*time.Second, func() (bool, string) {
		lc.mu.Lock()
		defer lc.mu.Unlock()
		return len(lc.pending) == 0, fmt.Sprintf("%d checks not taken by the checker", len(lc.pending))
	})
	if _, err := cli.Revoke(context.Background(), lease); err != nil { // the dead runner's lease lapses
		t.Fatal(err)
	}
	waitFor(t, l, 20*time.Second, fmt.Sprintf("run again of %v", T), func(e RunStarted) bool { return e.Tick.Equal(T) && e.Recovered == 1 })
	idleWithin(t, b, 20*time.Second, "b")
	ran.ranOnce(t, time.Second, T, "hourly")
	if got := l.notRun("hourly", ReasonRunnerLost); len(got) != 0 {
		t.Errorf("the tick run again was also reported lost: %v", got)
	}
}
