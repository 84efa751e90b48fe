package cronx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The tests of a run's life where it meets Stop, Remove, Shutdown and
// Trigger (runs.go, run.go, trigger.go).

// runsIn returns the stages of c's runs alive now.
func runsIn(c *Cron) []stage {
	c.runs.mu.Lock()
	defer c.runs.mu.Unlock()
	var out []stage
	for r := range c.runs.live {
		out = append(out, r.stage)
	}
	return out
}

// idleWithin fails the test unless every run of c has ended within d.
func idleWithin(t *testing.T, c *Cron, d time.Duration, what string) {
	t.Helper()
	select {
	case <-c.runs.idle().Done():
	case <-time.After(d):
		t.Fatalf("%s: runs still alive after %v: stages %v", what, d, runsIn(c))
	}
}

// TestStopGivesBackAClaimThatComesBackLate: a claim on the wire when Stop
// comes, which etcd answers only after Stop has stopped waiting for it,
// commits, but its run does not start: it is given back, and the leader's
// successor runs the tick, once. Stop's context is done with no run.
func TestStopGivesBackAClaimThatComesBackLate(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	var mu sync.Mutex
	ran := map[string][]time.Time{}
	job := func(id string) Job {
		return ContextFunc(func(ctx context.Context) error {
			info, _ := InfoFrom(ctx)
			mu.Lock()
			ran[id] = append(ran[id], info.Tick)
			mu.Unlock()
			return nil
		})
	}
	fakeA := clock.NewFake(t0)
	a := newFakeCron(t, fakeA, fakeA, WithSeconds(), WithEtcd(srv.NewClient(t, proxy.Endpoint())), WithName("late"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	a.AddJob("* * * * * *", Named("tick", job("a")))
	a.Start()
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	// A first tick runs on a, so that the job has run before: a successor
	// catches up only the tick of a job that has.
	first := t0.Add(time.Second)
	if !fakeA.WaitDueBy(first, wait) {
		t.Fatalf("a armed no timer for the first tick (a leads: %v)", a.coord.scheduling())
	}
	fakeA.Set(first)
	eventually(t, wait, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(ran["a"]) == 1, "a did not run the first tick"
	})
	idleWithin(t, a.Cron, 10*time.Second, "a after the first tick")
	mu.Lock()
	clear(ran)
	mu.Unlock()
	tick := first.Add(time.Second)
	if !fakeA.WaitDueBy(tick, wait) {
		t.Fatalf("a armed no timer for the tick (a leads: %v)", a.coord.scheduling())
	}
	// The tick's claim goes out, and its answer takes longer than Stop
	// waits for.
	proxy.Delay(stopClaimWait * 3 / 4) // each way: a round trip of 1.5 stopClaimWait
	fakeA.Set(tick)
	eventually(t, wait, func() (bool, string) {
		return slices.Contains(runsIn(a.Cron), stageSent), fmt.Sprintf("no claim on the wire: stages %v", runsIn(a.Cron))
	})
	returnsWithin(t, 10*time.Second, "Stop", func() { a.Stop() })
	idleWithin(t, a.Cron, 10*time.Second, "a after Stop")
	mu.Lock()
	if len(ran["a"]) > 0 {
		t.Errorf("a ran %v after Stop: a claim that came back late was run, not given back", ran["a"])
	}
	mu.Unlock()

	// The successor takes the tick over: its catch-up claims it.
	proxy.Pass()
	fakeB := clock.NewFake(tick.Add(500 * time.Millisecond))
	b := newFakeCron(t, fakeB, fakeB, WithSeconds(), WithEtcd(srv.Client(t)), WithName("late"),
		WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))
	b.AddJob("* * * * * *", Named("tick", job("b")))
	b.Start()
	last := jobkeys.New(election.DefaultPrefix, "late").Last("tick")
	eventually(t, 15*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		seq, by, ok, err := election.LastClaim(context.Background(), srv.Client(t), last)
		return len(ran["b"]) > 0, fmt.Sprintf("the successor did not run the tick given back (b leads: %v; the claim key: %d by %q, set %v, %v)",
			b.coord.scheduling(), seq, by, ok, err)
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(ran["b"], []time.Time{tick}) {
		t.Errorf("the successor ran %v, want the tick given back, %v, once", ran["b"], tick)
	}
}

// TestStopDoesNotInterruptARunAlone: without etcd too, Stop lets a running
// job finish (robfig/cron's meaning) and Shutdown, once its context ends,
// cancels it with ErrShutdown.
func TestStopDoesNotInterruptARunAlone(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(t0)
	fc := newFakeCron(t, fake, fake, WithSeconds())
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	fc.AddJob("* * * * * *", ContextFunc(func(ctx context.Context) error {
		select {
		case started <- struct{}{}:
		default:
			return nil
		}
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil
	}))
	fc.Start()
	fc.step(t)
	select {
	case <-started:
	case <-time.After(wait):
		t.Fatal("the job did not start")
	}
	stopSparesTheRun(t, fc.Stop(), ended, 500*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := fc.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want its context's error", err)
	}
	select {
	case cause := <-ended:
		if !errors.Is(cause, ErrShutdown) {
			t.Errorf("the run's context ended with %v, want ErrShutdown", cause)
		}
	default:
		t.Fatal("Shutdown returned before the run it cancelled")
	}
}

// TestRemoveEndsARunThatHasNotStarted: a tick that fired and waits out its
// jitter does not start once its job is removed.
func TestRemoveEndsARunThatHasNotStarted(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	tick := t0.Add(time.Minute)
	// A name whose delay on that tick is long enough to remove the job in.
	name := ""
	for i := 0; name == ""; i++ {
		if n := fmt.Sprintf("report-%d", i); jitterOf(n, tick, 10*time.Second) > 2*time.Second {
			name = n
		}
	}
	delay := jitterOf(name, tick, 10*time.Second)
	fake := clock.NewFake(t0)
	fc := newFakeCron(t, fake, fake, WithSeconds(), WithEtcd(srv.Client(t)), WithName("remove"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	ran := make(chan time.Time, 4)
	id, err := fc.AddJob("0 * * * * *", Named(name, ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		ran <- info.Tick
		return nil
	}), WithJitter(10*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	fc.Start()
	eventually(t, wait, func() (bool, string) { return fc.coord.scheduling(), "the Cron does not lead" })
	if !fake.WaitDueBy(tick, wait) {
		t.Fatal("no timer for the tick")
	}
	fake.Set(tick)
	if !fake.WaitDue(tick.Add(delay), wait) {
		t.Fatalf("the run does not wait out its jitter (%v)", delay)
	}
	fc.Remove(id)
	fake.Set(tick.Add(delay + time.Second))
	idleWithin(t, fc.Cron, wait, "after Remove")
	select {
	case got := <-ran:
		t.Fatalf("the run of %v started after Remove returned", got)
	default:
	}
}

// TestTriggerOfAForbidJobWaitsItsTurn: a trigger of a Forbid job while it
// runs neither runs beside it nor is lost: it runs once the run in progress
// has ended, with a tick of its own.
func TestTriggerOfAForbidJobWaitsItsTurn(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			srv := etcdtest.Shared(t)
			starts := make(chan Info, 8)
			release := make(chan struct{})
			c := New(WithEtcd(srv.Client(t)), WithName("turn"), WithMode(mode), WithLogger(DiscardLogger),
				WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
			mustAdd(t, c, "0 0 1 1 *", Named("report", ContextFunc(func(ctx context.Context) error {
				info, _ := InfoFrom(ctx)
				starts <- info
				<-release
				return nil
			}), WithOverlap(Forbid)))
			c.Start()
			t.Cleanup(func() { shutdown(t, c, "a") })
			trigger := func() {
				t.Helper()
				eventually(t, wait, func() (bool, string) {
					err := c.Trigger(context.Background(), "report")
					return err == nil, fmt.Sprint(err)
				})
			}
			trigger()
			first := runAfter(t, starts, time.Time{}, 10*time.Second, "triggered run")
			trigger()
			select {
			case second := <-starts:
				t.Fatalf("the second trigger ran beside the first: %+v", second)
			case <-time.After(time.Second): // that nothing happens while the first runs
			}
			release <- struct{}{}
			second := runAfter(t, starts, time.Time{}, 10*time.Second, "the waiting triggered run")
			close(release)
			if !first.Triggered || !second.Triggered || !second.Tick.After(first.Tick) {
				t.Errorf("runs %+v then %+v: want two triggered runs, each with its own, later, tick", first, second)
			}
		})
	}
}

// TestTriggerOfAReplaceJobReplacesAndIsReplaced: a trigger of a Replace job
// replaces the run in progress, which ends with ErrReplaced before the
// triggered run starts; the next tick replaces the triggered run.
func TestTriggerOfAReplaceJobReplacesAndIsReplaced(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	fake := clock.NewFake(t0)
	type run struct {
		info  Info
		cause chan error
	}
	runs := make(chan run, 8)
	fc := newFakeCron(t, fake, fake, WithSeconds(), WithEtcd(srv.Client(t)), WithName("replace-trigger"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	fc.AddJob("*/5 * * * * *", Named("long", ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		r := run{info: info, cause: make(chan error, 1)}
		runs <- r
		<-ctx.Done()
		r.cause <- context.Cause(ctx)
		return nil
	}), WithOverlap(Replace)))
	fc.Start()
	t.Cleanup(func() { shutdown(t, fc.Cron, "a") })
	eventually(t, wait, func() (bool, string) { return fc.coord.scheduling(), "the Cron does not lead" })
	next := func() run {
		t.Helper()
		select {
		case r := <-runs:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no run within 10s")
			return run{}
		}
	}
	ended := func(r run, what string) {
		t.Helper()
		select {
		case cause := <-r.cause:
			if !errors.Is(cause, ErrReplaced) {
				t.Errorf("%s ended with %v, want ErrReplaced", what, cause)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s was not replaced within 10s", what)
		}
	}
	tick := t0.Add(5 * time.Second)
	if !fake.WaitDueBy(tick, wait) {
		t.Fatal("no timer for the first tick")
	}
	fake.Set(tick)
	scheduled := next()
	eventually(t, wait, func() (bool, string) {
		err := fc.Trigger(context.Background(), "long")
		return err == nil, fmt.Sprint(err)
	})
	ended(scheduled, "the scheduled run")
	triggered := next()
	if !triggered.info.Triggered {
		t.Fatalf("the run after the trigger is %+v, want the triggered one", triggered.info)
	}
	later := tick.Add(5 * time.Second)
	if !fake.WaitDueBy(later, wait) {
		t.Fatal("no timer for the next tick")
	}
	fake.Set(later)
	ended(triggered, "the triggered run")
	if r := next(); r.info.Triggered || !r.info.Tick.Equal(later) {
		t.Errorf("the run after the next tick is %+v, want that tick's", r.info)
	}
}

// TestSimultaneousTriggersEachRunOnce: n triggers at once of an Allow job
// are n runs, each with a tick of its own.
func TestSimultaneousTriggersEachRunOnce(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	const n = 10
	starts := make(chan Info, 2*n)
	c := New(WithEtcd(srv.Client(t)), WithName("many-triggers"), WithLogger(DiscardLogger),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	mustAdd(t, c, "0 0 1 1 *", Named("report", ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		starts <- info
		return nil
	})))
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	eventually(t, wait, func() (bool, string) {
		err := c.Trigger(context.Background(), "report")
		return err == nil, fmt.Sprint(err)
	})
	var wg sync.WaitGroup
	for range n - 1 {
		wg.Go(func() {
			if err := c.Trigger(context.Background(), "report"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ticks := map[time.Time]bool{}
	for range n {
		info := runAfter(t, starts, time.Time{}, 10*time.Second, "triggered run")
		ticks[info.Tick] = true
	}
	if len(ticks) != n {
		t.Errorf("%d triggers ran with %d distinct ticks, want %d", n, len(ticks), n)
	}
	select {
	case extra := <-starts:
		t.Errorf("a run more than the triggers: %+v", extra)
	case <-time.After(500 * time.Millisecond): // that no more come
	}
}

// TestJobNoLiveReplicaRegistersLeavesTheListing: a job a deploy drops (the
// new version's replicas do not register it) leaves Jobs and Status once the
// old version's replicas have stopped, and Trigger of it is an error naming
// it.
func TestJobNoLiveReplicaRegistersLeavesTheListing(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	version := func(id string, jobs ...string) *Cron {
		c := New(WithEtcd(srv.Client(t)), WithName("deploy"), WithLogger(DiscardLogger),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		for _, j := range jobs {
			mustAdd(t, c, "0 0 1 1 *", Named(j, FuncJob(func() {})))
		}
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	ctl, err := NewControl(cli, "", "deploy")
	if err != nil {
		t.Fatal(err)
	}
	listed := func(want ...string) {
		t.Helper()
		eventually(t, 15*time.Second, func() (bool, string) {
			jobs, err := ctl.Jobs(context.Background())
			if err != nil {
				return false, err.Error()
			}
			st, err := ctl.Status(context.Background())
			if err != nil {
				return false, err.Error()
			}
			var names []string
			for _, j := range st.Jobs {
				names = append(names, j.Name)
			}
			return slices.Equal(jobs, want) && slices.Equal(names, want),
				fmt.Sprintf("Jobs %v, Status %v; want %v", jobs, names, want)
		})
	}
	old := version("v1", "kept", "dropped")
	listed("dropped", "kept")
	version("v2", "kept")
	<-old.Stop().Done()
	listed("kept")
	if err := ctl.Trigger(context.Background(), "dropped", "ops"); !errors.Is(err, ErrUnknownJob) {
		t.Errorf("Trigger of the dropped job: %v, want ErrUnknownJob", err)
	}
}

// TestCrowdedTickOfACrashedLeaderRunsOnItsSuccessor is G4 for a tick with
// many jobs: the leader is cut off a moment before it, as by a crash, and
// the successor runs each job's tick once, late.
func TestCrowdedTickOfACrashedLeaderRunsOnItsSuccessor(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	const jobs = 120
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	var mu sync.Mutex
	ran := map[string][]time.Time{}
	replica := func(id string, fake *clock.Fake, endpoint string) *Cron {
		c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(srv.NewClient(t, endpoint)), WithName("crowded"),
			WithElection(election.WithIdentity(id), election.WithTTL(5*time.Second)))
		for i := range jobs {
			name := fmt.Sprintf("job-%03d", i)
			mustAdd(t, c, "*/10 * * * * *", Named(name, ContextFunc(func(ctx context.Context) error {
				info, _ := InfoFrom(ctx)
				mu.Lock()
				ran[name] = append(ran[name], info.Tick)
				mu.Unlock()
				return nil
			})))
		}
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	fakeA, fakeB := clock.NewFake(t0), clock.NewFake(t0)
	a := replica("a", fakeA, proxy.Endpoint())
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	b := replica("b", fakeB, srv.Endpoint())
	waitCandidates(t, srv.Client(t), "crowded", 2)
	// Every job runs a first tick on a, so that a missed one is caught up
	// (a job that never ran has nothing to catch up).
	first := t0.Add(10 * time.Second)
	if !fakeA.WaitDueBy(first, wait) {
		t.Fatal("a armed no timer for the first tick")
	}
	fakeA.Set(first)
	fakeB.Set(first)
	eventually(t, 15*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == jobs, fmt.Sprintf("%d of %d jobs ran the first tick", len(ran), jobs)
	})
	idleWithin(t, a, 10*time.Second, "a's first tick")
	mu.Lock()
	clear(ran)
	mu.Unlock()
	// A moment before the next tick, a is cut off; then the tick comes.
	tick := first.Add(10 * time.Second)
	fakeA.Set(tick.Add(-time.Second))
	fakeB.Set(tick.Add(-time.Second))
	if !fakeA.WaitDueBy(tick, wait) {
		t.Fatalf("a armed no timer for the tick (a leads: %v)", a.coord.scheduling())
	}
	// A scheduler that claimed a crowded tick ahead of it would have those
	// claims land before the cut-off: give them the time a round trip
	// takes, so that such claims are in etcd when the leader is lost.
	last := jobkeys.New(election.DefaultPrefix, "crowded").Last("job-000")
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if seq, _, ok, err := election.LastClaim(context.Background(), srv.Client(t), last); err == nil && ok && seq == tick.UnixNano() {
			break
		}
	}
	proxy.Blackhole()
	fakeA.Set(tick)
	fakeB.Set(tick)
	eventually(t, 15*time.Second, func() (bool, string) { return b.coord.scheduling(), "b did not lead after a was cut off" })
	eventually(t, 15*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == jobs, fmt.Sprintf("%d of %d jobs ran the tick", len(ran), jobs)
	})
	idleWithin(t, b, 10*time.Second, "b's catch-up")
	mu.Lock()
	defer mu.Unlock()
	for name, ticks := range ran {
		if !slices.Equal(ticks, []time.Time{tick}) {
			t.Errorf("%s ran %v, want the crashed leader's tick, %v, once", name, ticks, tick)
		}
	}
}

// stopSparesTheRun fails t if, within d of a Stop whose context is done,
// the running job's context ends (its cause comes on ended) or Stop's
// context is done while the run goes on. Not a sleep to let something
// happen: the assertion is that nothing does for a while.
func stopSparesTheRun(t *testing.T, done context.Context, ended <-chan error, d time.Duration) {
	t.Helper()
	select {
	case cause := <-ended:
		t.Fatalf("Stop interrupted the run: its context ended with %v", cause)
	case <-done.Done():
		t.Fatal("Stop's context was done while a run went on")
	case <-time.After(d):
	}
}

// TestNoRunStartsPastItsSessionsDeadline is G2 at a run's start: a claim
// that holds, whose session is past its safe deadline by the time its run
// would start (the session's own timer not yet served, as on a loaded
// machine), does not start its job; the tick is given back.
func TestNoRunStartsPastItsSessionsDeadline(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	ran := make(chan time.Time, 10)
	fake := clock.NewFake(t0)
	a := newFakeCron(t, fake, fake, WithSeconds(), WithEtcd(srv.Client(t)), WithName("pastdeadline"), WithMode(ClaimMode),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	var expired atomic.Bool
	a.coord.claims.sessions.Expired = expired.Load
	a.AddJob("* * * * * *", Named("tick", ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		ran <- info.Tick
		return nil
	})))
	a.Start()
	first := t0.Add(time.Second)
	if !fake.WaitDueBy(first, wait) {
		t.Fatal("no timer armed for the first tick")
	}
	fake.Set(first)
	if got := receive(t, ran, "the first tick's run"); !got.Equal(first) {
		t.Fatalf("ran %v, want the first tick %v", got, first)
	}
	idleWithin(t, a.Cron, 10*time.Second, "after the first tick")

	expired.Store(true)
	tick := first.Add(time.Second)
	if !fake.WaitDueBy(tick, wait) {
		t.Fatal("no timer armed for the second tick")
	}
	fake.Set(tick)
	// The loop arms the next tick's timer once it has fired this one.
	if !fake.WaitDueBy(tick.Add(time.Second), wait) {
		t.Fatal("the second tick did not fire")
	}
	idleWithin(t, a.Cron, 10*time.Second, "after the second tick")
	select {
	case got := <-ran:
		t.Fatalf("the job ran tick %v under a session past its safe deadline", got)
	default:
	}
	seq, _, _, err := election.LastClaim(context.Background(), srv.Client(t), jobkeys.New(election.DefaultPrefix, "pastdeadline").Last("tick"))
	if err != nil || seq != first.UnixNano() {
		t.Errorf("the job's claim key holds %d (%v), want the tick not run given back to the first, %d", seq, err, first.UnixNano())
	}
}

// TestNoJobStartsAfterStopReturns: in claim mode, a run whose claim holds
// when Stop comes, and whose job has not been called yet (its goroutine
// not yet scheduled, held here at the session's check), has its job called
// before Stop returns, not after.
func TestNoJobStartsAfterStopReturns(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	fake := clock.NewFake(t0)
	a := newFakeCron(t, fake, fake, WithSeconds(), WithEtcd(srv.Client(t)), WithName("stopcall"), WithMode(ClaimMode),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	returned := make(chan struct{})
	var calledAfterStop atomic.Bool
	// The run's goroutine is held between its claim and its job's call
	// until Stop has returned, or for at most 100 ms after Stop came: Stop
	// waits for the call (up to stopClaimWait), so only a Stop that does
	// not wait returns while the run is held.
	a.coord.claims.sessions.Expired = func() bool {
		limit := time.After(10 * time.Second)
		for {
			a.runs.mu.Lock()
			stopping := a.runs.stopping
			a.runs.mu.Unlock()
			if stopping {
				break
			}
			select {
			case <-limit:
				return false
			case <-time.After(time.Millisecond):
			}
		}
		select {
		case <-returned:
			calledAfterStop.Store(true)
		case <-time.After(100 * time.Millisecond):
		}
		return false
	}
	ran := make(chan struct{}, 1)
	a.AddJob("* * * * * *", Named("tick", FuncJob(func() { ran <- struct{}{} })))
	a.Start()
	tick := t0.Add(time.Second)
	if !fake.WaitDueBy(tick, wait) {
		t.Fatal("no timer armed for the tick")
	}
	fake.Set(tick)
	eventually(t, wait, func() (bool, string) {
		return slices.Contains(runsIn(a.Cron), stageStarted), fmt.Sprintf("the tick's claim did not hold: stages %v", runsIn(a.Cron))
	})
	a.Stop()
	close(returned)
	receive1(t, ran, "the run whose claim held")
	if calledAfterStop.Load() {
		t.Error("the job of a run whose claim held was called after Stop returned")
	}
}

// TestBurstOfTriggersOfAReplaceJobCostsItsRuns: thirty triggers at once of
// a Replace job settle as their runs do: each run still waiting when a
// later one is claimed gives way to it, and its request is not put back to
// be claimed again. The job's keys change a few times per trigger.
func TestBurstOfTriggersOfAReplaceJobCostsItsRuns(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	fake := clock.NewFake(t0)
	fc := newFakeCron(t, fake, fake, WithEtcd(cli), WithName("burst"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	var runs atomic.Int32
	fc.AddJob("0 0 1 1 *", Named("job", ContextFunc(func(ctx context.Context) error {
		runs.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		return nil
	}), WithOverlap(Replace)))
	fc.Start()
	t.Cleanup(func() { shutdown(t, fc.Cron, "a") })
	eventually(t, wait, func() (bool, string) { return fc.coord.scheduling(), "the Cron does not lead" })
	// Trigger takes a job a live replica registers: the leader writes its
	// registrations after it starts to lead.
	eventually(t, wait, func() (bool, string) {
		k, release, err := fc.control(context.Background())
		if err == nil {
			err = k.known(context.Background(), "job")
			release()
		}
		return err == nil, fmt.Sprint(err)
	})

	jobs := election.DefaultPrefix + "/jobs/burst/"
	resp, err := cli.Get(context.Background(), jobs, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var changes atomic.Int64
	watch := cli.Watch(wctx, jobs, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	go func() {
		for wr := range watch {
			changes.Add(int64(len(wr.Events)))
		}
	}()
	const n = 30
	began := time.Now()
	for range n {
		if err := fc.Trigger(context.Background(), "job"); err != nil {
			t.Fatal(err)
		}
	}
	layout := jobkeys.New(election.DefaultPrefix, "burst")
	eventually(t, 30*time.Second, func() (bool, string) {
		resp, err := cli.Txn(context.Background()).Then(
			clientv3.OpGet(jobs+".trigger/", clientv3.WithPrefix(), clientv3.WithCountOnly()),
			clientv3.OpGet(layout.Running("job"), clientv3.WithPrefix(), clientv3.WithCountOnly())).Commit()
		if err != nil {
			return false, err.Error()
		}
		requests, markers := resp.Responses[0].GetResponseRange().Count, resp.Responses[1].GetResponseRange().Count
		return requests == 0 && markers == 0 && len(runsIn(fc.Cron)) == 0,
			fmt.Sprintf("%d requests and %d markers left, %d runs alive, after %d changes", requests, markers, len(runsIn(fc.Cron)), changes.Load())
	})
	t.Logf("%d triggers: %d runs, %d changes of the job's keys, settled in %v", n, runs.Load(), changes.Load(), time.Since(began).Round(time.Millisecond))
	if got := changes.Load(); got > 10*n {
		t.Errorf("%d triggers changed the job's keys %d times, want at most %d: requests given way were claimed again", n, got, 10*n)
	}
	if got := runs.Load(); got < 1 || got > n {
		t.Errorf("%d triggers ran the job %d times, want from 1 to %d", n, got, n)
	}
}

// TestARunFiredUnderATermThatEndedIsGivenUp: a tick fired as its term ends
// (the loop read the term before its end reached it) is given up as it is
// taken in, with the term's cause, as a run taken in before the end is by
// abandonTerm.
func TestARunFiredUnderATermThatEndedIsGivenUp(t *testing.T) {
	t.Parallel()
	deposed := errors.New("deposed")
	ctx, end := context.WithCancelCause(context.Background())
	ts := &termState{ctx: ctx}
	rs := newRuns()
	fire := func() *run {
		r := &run{rs: rs, term: ts}
		r.ctx, r.cancel = context.WithCancelCause(context.Background())
		if !rs.fire(r) {
			t.Fatal("fire refused a run before Stop")
		}
		return r
	}
	before := fire()
	end(deposed)
	rs.abandonTerm(ts, context.Cause(ctx))
	after := fire()
	for what, r := range map[string]*run{"taken in before the end": before, "fired after it": after} {
		if got := context.Cause(r.ctx); !errors.Is(got, deposed) {
			t.Errorf("a run %s: its cause is %v, want %v", what, got, deposed)
		}
	}
}

// TestARunWaitingInItsTermWhenTheTermEndsIsGivenUp: a leader whose term
// ends (its lease revoked, as etcd does to a leader cut off past its TTL)
// gives up its run that waits for its jitter, at once: the successor
// catches that tick up, and the deposed replica holds nothing of it.
func TestARunWaitingInItsTermWhenTheTermEndsIsGivenUp(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	const name = "term-end-jitter"
	tick := t0.Add(10 * time.Second)
	var l tickLedger
	replica := func(id string, fake *clock.Fake) *Cron {
		c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(srv.Client(t)), WithName(name),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		mustAdd(t, c, "*/10 * * * * *", Named("spread", l.job("spread"), WithJitter(time.Hour)))
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	if jitterOf("spread", tick, time.Hour) < time.Minute {
		t.Fatal("the job's delay at the tick is under a minute: pick another name")
	}
	fakeA := clock.NewFake(tick.Add(-time.Second))
	a := replica("a", fakeA)
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	b := replica("b", clock.NewFake(tick.Add(time.Second)))
	waitCandidates(t, cli, name, 2)
	if !fakeA.WaitDueBy(tick, wait) {
		t.Fatalf("a armed no timer for the tick %s", tick)
	}
	fakeA.Advance(time.Second) // the tick: a's run waits an hour's jitter
	eventually(t, wait, func() (bool, string) { return len(runsIn(a)) == 1, fmt.Sprintf("a's runs: %v", runsIn(a)) })

	ctx := context.Background()
	resp, err := cli.Get(ctx, election.DefaultPrefix+"/election/"+name+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("no leader's key: %v", err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, func() (bool, string) { return b.coord.scheduling(), "b did not lead after a's lease went" })
	idleWithin(t, a, 10*time.Second, "a, deposed")
	eventually(t, wait, func() (bool, string) {
		return len(runsIn(b)) == 1, fmt.Sprintf("b has not caught the tick up: its runs %v", runsIn(b))
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if got := l.ran["spread"]; len(got) != 0 {
		t.Errorf("spread ran %v, before its delay", got)
	}
}
