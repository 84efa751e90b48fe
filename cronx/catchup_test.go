package cronx

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/claims"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// tickLedger records the ticks each job ran, for the tests of a successor's
// catch-up.
type tickLedger struct {
	mu  sync.Mutex
	ran map[string][]time.Time
}

func (l *tickLedger) job(name string) Job {
	return ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.ran == nil {
			l.ran = map[string][]time.Time{}
		}
		l.ran[name] = append(l.ran[name], info.Tick)
		return nil
	})
}

// ranOnce fails t unless, within d, each of jobs ran tick and nothing else.
func (l *tickLedger) ranOnce(t *testing.T, d time.Duration, tick time.Time, jobs ...string) {
	t.Helper()
	eventually(t, d, func() (bool, string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		n := 0
		for _, j := range jobs {
			if len(l.ran[j]) > 0 {
				n++
			}
		}
		return n == len(jobs), fmt.Sprintf("%d of %d jobs ran", n, len(jobs))
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, ticks := range l.ran {
		if !slices.Equal(ticks, []time.Time{tick}) {
			t.Errorf("%s ran %v, want %v once", name, ticks, tick)
		}
	}
}

// waitPublished waits until the spec of each of jobs is in etcd.
func waitPublished(t *testing.T, cli *clientv3.Client, scheduler string, jobs ...string) {
	t.Helper()
	keys := jobkeys.New(election.DefaultPrefix, scheduler)
	eventually(t, 15*time.Second, func() (bool, string) {
		for _, j := range jobs {
			resp, err := cli.Get(context.Background(), keys.Spec(j), clientv3.WithCountOnly())
			if err != nil || resp.Count == 0 {
				return false, fmt.Sprintf("%s's spec not published (%v)", j, err)
			}
		}
		return true, ""
	})
}

// claimOnLease claims tick of job for holder, its marker on lease, as a
// leader that claimed the tick and has not run it leaves it.
func claimOnLease(t *testing.T, cli *clientv3.Client, keys jobkeys.Layout, job, holder string, tick time.Time, lease clientv3.LeaseID) election.Claim {
	t.Helper()
	c, err := election.ClaimSeq(context.Background(), cli, keys.Last(job), tick.UnixNano(), election.ClaimedBy(holder),
		claims.WithMarker(keys.TickMarker(job, tick.UnixNano()), lease))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitRegistered waits until a live replica registers each of jobs, as
// Trigger and Backfill look for; a term writes the registrations after
// the specs.
func waitRegistered(t *testing.T, cli *clientv3.Client, scheduler string, jobs ...string) {
	t.Helper()
	keys := jobkeys.New(election.DefaultPrefix, scheduler)
	eventually(t, 15*time.Second, func() (bool, string) {
		for _, j := range jobs {
			resp, err := cli.Get(context.Background(), keys.ByDir(j), clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil || resp.Count == 0 {
				return false, fmt.Sprintf("%s not registered (%v)", j, err)
			}
		}
		return true, ""
	})
}

// TestNeverRunJobsTickStoppedInItsJitterRunsOnTheSuccessor is G3 for a job
// that never ran: a Stop while its first tick waits for its jitter gives the
// tick up, and the successor catches it up, as it would a job's that ran
// before.
func TestNeverRunJobsTickStoppedInItsJitterRunsOnTheSuccessor(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	var l tickLedger
	replica := func(id string, fake *clock.Fake) *Cron {
		c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(srv.Client(t)), WithName("fresh-jitter"),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		mustAdd(t, c, "*/10 * * * * *", Named("fresh", l.job("fresh"), WithJitter(5*time.Second)))
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	fakeA, fakeB := clock.NewFake(t0), clock.NewFake(t0)
	a := replica("a", fakeA)
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	waitPublished(t, srv.Client(t), "fresh-jitter", "fresh")
	b := replica("b", fakeB)
	waitCandidates(t, srv.Client(t), "fresh-jitter", 2)
	tick := t0.Add(10 * time.Second)
	if !fakeA.WaitDueBy(tick, wait) {
		t.Fatal("a armed no timer for the tick")
	}
	fakeA.Set(tick)
	fakeB.Set(tick)
	// The run waits for its jitter (under 5 s): a timer due after the tick.
	if !fakeA.WaitDueBy(tick.Add(5*time.Second), wait) {
		t.Fatal("a's run armed no jitter timer")
	}
	<-a.Stop().Done()
	eventually(t, 15*time.Second, func() (bool, string) { return b.coord.scheduling(), "b did not lead after a stopped" })
	if !fakeB.WaitDueBy(tick.Add(5*time.Second), wait) {
		t.Fatal("b's catch-up armed no jitter timer")
	}
	fakeB.Set(tick.Add(5 * time.Second))
	l.ranOnce(t, 15*time.Second, tick, "fresh")
}

// TestTicksALostLeaderClaimedAreCountedNotRun is G4 for a crowded tick a
// leader claimed and was lost before starting: etcd holds each job's claim
// of the tick and its marker on the lost runner's lease, which lapses. The
// successor does not run the ticks again (their runs may have started), and
// reports each one not in its job's history as ReasonRunnerLost, once the
// marker has lapsed: to the observers and in the NotRun count.
func TestTicksALostLeaderClaimedAreCountedNotRun(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const jobs = 80
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%02d", i)
	}
	// Near the wall clock: Status counts the last day's ticks by it.
	tick := time.Now().UTC().Truncate(10 * time.Second)
	keys := jobkeys.New(election.DefaultPrefix, "lost")
	// The lost leader's claims, on its runner's lease, which lapses once
	// the successor has started, as after a crash (revoked then: a TTL
	// short enough to wait out could lapse before the claims are made).
	// job-00 ran and was recorded.
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		c := claimOnLease(t, cli, keys, name, "lost", tick, lease.ID)
		if name == "job-00" {
			if err := claims.Release(ctx, cli, c); err != nil {
				t.Fatal(err)
			}
			if _, err := cli.Put(ctx, keys.History(name), encodeHistory(nil, Record{Tick: tick, Instance: "lost", Start: tick})); err != nil {
				t.Fatal(err)
			}
		}
	}
	l := newEventLog()
	var ran tickLedger
	fake := clock.NewFake(tick.Add(time.Second))
	b := New(append(observed(l), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(srv.Client(t)), WithName("lost"),
		WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))...)
	for _, name := range names {
		mustAdd(t, b, "*/10 * * * * *", Named(name, ran.job(name)))
	}
	b.Start()
	t.Cleanup(func() { shutdown(t, b, "b") })
	if _, err := cli.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() (bool, string) {
		for _, name := range names[1:] {
			if len(l.notRun(name, ReasonRunnerLost)) != 1 {
				return false, fmt.Sprintf("%s reported %d times as runner_lost, want once", name, len(l.notRun(name, ReasonRunnerLost)))
			}
		}
		return true, ""
	})
	counts := waitNotRunCount(t, b, names[jobs-1], ReasonRunnerLost, 1)
	if counts[ReasonRunnerLost] != 1 {
		t.Errorf("%s's NotRun: %v, want 1 runner_lost", names[jobs-1], counts)
	}
	idleWithin(t, b, 10*time.Second, "b's catch-up")
	if got := l.notRun("job-00", ReasonRunnerLost); len(got) != 0 {
		t.Errorf("job-00, recorded, reported not run: %v", got)
	}
	ran.mu.Lock()
	defer ran.mu.Unlock()
	if len(ran.ran) != 0 {
		t.Errorf("the successor ran ticks the lost leader claimed: %v", ran.ran)
	}
}

// TestATickFoundClaimedAndGivenBackIsCaughtUp is G4 when the claim a new
// term's catch-up finds is given back: the leader before claimed the tick
// as its term ended, and gives the claim back, its run not started, only
// after the successor's catch-up was refused. The successor, waiting for
// the claim's marker to go, finds the claim given back, and runs the tick
// once, late, rather than count its runner lost. Given back past the
// tick's catch-up window, the tick is counted (G3) as one that fell while
// nobody led, not as a runner lost.
func TestATickFoundClaimedAndGivenBackIsCaughtUp(t *testing.T) {
	t.Parallel()
	for _, late := range []bool{false, true} {
		name := map[bool]string{false: "within-its-window", true: "past-its-window"}[late]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := etcdtest.Shared(t)
			cli := srv.Client(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			tick := time.Now().UTC().Truncate(10 * time.Second)
			keys := jobkeys.New(election.DefaultPrefix, "givenback-"+name)
			// The leader before ran the tick before, and claimed this one on
			// its runner's lease, which lives on.
			prev := tick.Add(-10 * time.Second).UnixNano()
			if _, err := cli.Put(ctx, keys.Last("job"), claimcond.Value(prev, "a")); err != nil {
				t.Fatal(err)
			}
			lease, err := cli.Grant(ctx, 60)
			if err != nil {
				t.Fatal(err)
			}
			c := claimOnLease(t, cli, keys, "job", "a", tick, lease.ID)
			l := newEventLog()
			var ran tickLedger
			const grace = 5 * time.Second
			fake := clock.NewFake(tick.Add(time.Second))
			b := New(append(observed(l), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
				WithEtcd(srv.Client(t)), WithName("givenback-"+name), WithMisfire(RunOnce, grace),
				WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))...)
			mustAdd(t, b, "*/10 * * * * *", Named("job", ran.job("job")))
			b.Start()
			t.Cleanup(func() { shutdown(t, b, "b") })
			// b's catch-up is refused, and b waits for the claim's marker.
			eventually(t, 20*time.Second, func() (bool, string) {
				lc := b.coord.lost
				lc.mu.Lock()
				defer lc.mu.Unlock()
				return lc.queued[lostKey{"job", tick.UnixNano()}], "b does not wait for the marker of the tick it found claimed"
			})
			if late {
				fake.Set(tick.Add(grace + time.Second))
			}
			if err := claims.Withdraw(ctx, cli, keys.Last("job"), c, prev, "a"); err != nil {
				t.Fatal(err)
			}
			if late {
				// A marker is looked at again every lostRecheck.
				counts := waitNotRunCount(t, b, "job", ReasonNoLeader, 1)
				if counts[ReasonRunnerLost] != 0 {
					t.Errorf("the tick given back past its window is counted %v, want no runner_lost", counts)
				}
			} else {
				ran.ranOnce(t, 10*time.Second, tick, "job")
			}
			idleWithin(t, b, 10*time.Second, "b's catch-up")
			if got := l.notRun("job", ReasonRunnerLost); len(got) != 0 {
				t.Errorf("the tick given back was reported as its runner lost: %v", got)
			}
			if late {
				if got := l.notRun("job", ReasonNoLeader); len(got) != 1 {
					t.Errorf("the tick given back past its window was reported %d times as no_leader, want once", len(got))
				}
				ran.mu.Lock()
				defer ran.mu.Unlock()
				if len(ran.ran) != 0 {
					t.Errorf("the tick given back past its window ran: %v", ran.ran)
				}
			} else {
				ran.ranOnce(t, time.Second, tick, "job")
			}
		})
	}
}

// TestATickGivenBackAsItsTermLapsesRunsInTheNextTerm is G4 when a leader's
// own session lapses (no keepalive acknowledged in time) while a tick it
// claimed waits to start, and it leads again: the run is given back, its
// claim's session holding, and the next term runs the tick once, late. It
// is not counted as a tick whose claim was lost, which would leave it run
// nowhere.
func TestATickGivenBackAsItsTermLapsesRunsInTheNextTerm(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	// The campaign's client goes through a proxy, which cuts the term's
	// session off alone: the runners' session is on cli.
	proxy := etcdtest.NewProxy(t, srv.Addr())
	elector, err := election.New(srv.NewClient(t, proxy.Endpoint()), "lapse", election.WithIdentity("a"), election.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	runs := newHeldRuns()
	events := newEventLog()
	fake := clock.NewFake(t0)
	c := New(append(observed(events), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(cli), WithName("lapse"), WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))...)
	c.coord.elector = elector
	mustAdd(t, c, "*/10 * * * * *", Named("long", runs.job(), WithOverlap(Replace)))
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	waitPublished(t, cli, "lapse", "long")
	first, second := t0.Add(10*time.Second), t0.Add(20*time.Second)
	a := runs.replaced(t, fake, first, second)
	// The second tick, claimed, waits for the first run to return; the
	// term's session lapses, and the run is given back.
	proxy.Blackhole()
	waitFor(t, events, 15*time.Second, "the term lost", func(leadershipLost) bool { return true })
	last := jobkeys.New(election.DefaultPrefix, "lapse").Last("long")
	eventually(t, 15*time.Second, func() (bool, string) {
		seq, _, _, err := election.LastClaim(context.Background(), cli, last)
		return err == nil && seq == first.UnixNano(), fmt.Sprintf("the job's claim key holds %d (%v), want the second tick given back to the first, %d",
			seq, err, first.UnixNano())
	})
	proxy.Pass()
	close(a.release)
	b := runs.next(t, "the second tick's run, caught up by the next term")
	if !b.tick.Equal(second) {
		t.Fatalf("the run of %v started, want %v", b.tick, second)
	}
	close(b.release)
	idleWithin(t, c, 15*time.Second, "a's next term")
	if got := events.notRun("long", ReasonEtcdUnavailable); len(got) != 0 {
		t.Errorf("the tick given back, and run, was also reported not run: %v", got)
	}
}

// TestNeverRunJobsTickInAGapIsCountedUnderSkip is G4 for a job that never
// ran, under misfire Skip: a term before published it, its first tick fell
// while nobody led, and the next leader counts the tick as no_leader, as it
// would a job's that ran before; a job nobody published is not counted.
func TestNeverRunJobsTickInAGapIsCountedUnderSkip(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tick := time.Now().UTC().Truncate(10 * time.Second) // Status counts by the wall clock
	keys := jobkeys.New(election.DefaultPrefix, "fresh-skip")
	// The spec a lost leader published; "unpublished" has none.
	if _, err := cli.Put(ctx, keys.Spec("fresh"), "*/10 * * * * *"); err != nil {
		t.Fatal(err)
	}
	l := newEventLog()
	var ran tickLedger
	fake := clock.NewFake(tick.Add(3 * time.Second))
	b := New(append(observed(l), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(srv.Client(t)), WithName("fresh-skip"), WithMisfire(Skip, 0),
		WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))...)
	mustAdd(t, b, "*/10 * * * * *", Named("fresh", ran.job("fresh")))
	mustAdd(t, b, "*/10 * * * * *", Named("unpublished", ran.job("unpublished")))
	b.Start()
	t.Cleanup(func() { shutdown(t, b, "b") })
	e := waitNotRun(t, l, "fresh", ReasonNoLeader, 15*time.Second)
	if !e.Tick.Equal(tick) {
		t.Errorf("fresh's tick not run: %v, want %v", e.Tick, tick)
	}
	waitNotRunCount(t, b, "fresh", ReasonNoLeader, 1)
	if got := l.notRun("unpublished", ReasonNoLeader); len(got) != 0 {
		t.Errorf("a job nobody published reported not run: %v", got)
	}
	ran.mu.Lock()
	defer ran.mu.Unlock()
	if len(ran.ran) != 0 {
		t.Errorf("ticks ran under Skip: %v", ran.ran)
	}
}

// TestCrowdedFirstTickOfACutOffLeaderRunsOnItsSuccessor is G4 for a crowded
// tick of jobs that never ran: the leader is cut off a moment before it, as
// by a crash, and the successor runs each job's tick once, late, since a
// term before its own published the jobs.
func TestCrowdedFirstTickOfACutOffLeaderRunsOnItsSuccessor(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	const jobs = 120
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	var l tickLedger
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%03d", i)
	}
	replica := func(id string, fake *clock.Fake, endpoint string) *Cron {
		c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(srv.NewClient(t, endpoint)), WithName("crowded-first"),
			WithElection(election.WithIdentity(id), election.WithTTL(5*time.Second)))
		for _, name := range names {
			mustAdd(t, c, "*/10 * * * * *", Named(name, l.job(name)))
		}
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	fakeA, fakeB := clock.NewFake(t0), clock.NewFake(t0)
	a := replica("a", fakeA, proxy.Endpoint())
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	waitPublished(t, srv.Client(t), "crowded-first", names...)
	b := replica("b", fakeB, srv.Endpoint())
	waitCandidates(t, srv.Client(t), "crowded-first", 2)
	tick := t0.Add(10 * time.Second)
	fakeA.Set(tick.Add(-time.Second))
	fakeB.Set(tick.Add(-time.Second))
	if !fakeA.WaitDueBy(tick, wait) {
		t.Fatalf("a armed no timer for the tick (a leads: %v)", a.coord.scheduling())
	}
	proxy.Blackhole()
	fakeA.Set(tick)
	fakeB.Set(tick)
	eventually(t, 15*time.Second, func() (bool, string) { return b.coord.scheduling(), "b did not lead after a was cut off" })
	l.ranOnce(t, 15*time.Second, tick, names...)
	idleWithin(t, b, 10*time.Second, "b's catch-up")
}

// TestStopRightAfterACrowdedFirstTickMissesNone is G3 for a crowded tick of
// jobs that never ran: the leader stops as the tick fires, with most claims
// not sent or not answered yet, and every job runs the tick once, on the
// leader or, given back or never claimed, on its successor.
func TestStopRightAfterACrowdedFirstTickMissesNone(t *testing.T) {
	t.Parallel()
	const jobs = 600
	srv := etcdtest.Shared(t)
	var l tickLedger
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%03d", i)
	}
	replica := func(id string, fake *clock.Fake) *Cron {
		c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(srv.Client(t)), WithName("stop-first"),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		for _, name := range names {
			mustAdd(t, c, "*/10 * * * * *", Named(name, l.job(name)))
		}
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	fakeA, fakeB := clock.NewFake(t0), clock.NewFake(t0)
	a := replica("a", fakeA)
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	waitPublished(t, srv.Client(t), "stop-first", names...)
	b := replica("b", fakeB)
	waitCandidates(t, srv.Client(t), "stop-first", 2)
	tick := t0.Add(10 * time.Second)
	if !fakeA.WaitDueBy(tick, wait) {
		t.Fatal("a armed no timer for the tick")
	}
	fakeB.Set(tick)
	fakeA.Set(tick)
	stopped := a.Stop()
	eventually(t, 15*time.Second, func() (bool, string) { return b.coord.scheduling(), "b did not lead after a stopped" })
	<-stopped.Done()
	l.ranOnce(t, 20*time.Second, tick, names...)
	idleWithin(t, b, 10*time.Second, "b's catch-up")
}
