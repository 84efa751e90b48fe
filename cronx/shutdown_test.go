package cronx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The tests of Shutdown's bound: by its context's end, whatever etcd does,
// and from inside a job.

// TestShutdownReturnsByItsContextsEndWhenEtcdDoesNotAnswer: forty runs have
// returned, and etcd, cut off, does not take their records; Shutdown with a
// two-second context returns by then, rather than wait for each record,
// and says in a log line that runs are not recorded, after shutdownRecordWait
// for the records. A leader waits, as Stop does, up to resignWait for its
// resignation, alongside, and no longer.
func TestShutdownReturnsByItsContextsEndWhenEtcdDoesNotAnswer(t *testing.T) {
	t.Parallel()
	const bound = 2 * time.Second
	for _, tc := range []struct {
		mode   Mode
		within time.Duration
	}{
		{ClaimMode, bound + shutdownRecordWait},
		{LeaderMode, max(bound+shutdownRecordWait, resignWait)},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			t.Parallel()
			shutdownWithEtcdCutOff(t, tc.mode, bound, tc.within)
		})
	}
}

func shutdownWithEtcdCutOff(t *testing.T, mode Mode, bound, within time.Duration) {
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	fake := clock.NewFake(t0)
	logs := &lockedBuffer{}
	c := New(withClock(fake), WithLocation(time.UTC), WithSeconds(), WithSlog(slog.New(slog.NewTextHandler(logs, nil))),
		WithEtcd(srv.NewClient(t, proxy.Endpoint())), WithName("shutbound"+mode.String()), WithMode(mode),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	t.Cleanup(func() {
		proxy.Pass()
		select {
		case <-c.Stop().Done():
		case <-time.After(30 * time.Second):
			t.Error("the Cron still used its client 30s after the test")
		}
	})
	const n = 40
	started, returned := make(chan struct{}, n), make(chan struct{}, n)
	release := make(chan struct{})
	for i := range n {
		mustAdd(t, c, "* * * * * *", Named(fmt.Sprintf("job%d", i), FuncJob(func() {
			started <- struct{}{}
			<-release
			returned <- struct{}{}
		})))
	}
	c.Start()
	if mode == LeaderMode {
		eventually(t, wait, func() (bool, string) { return c.coord.scheduling(), "the replica does not lead" })
	}
	startTick(t, fake, t0.Add(time.Second), started, n)
	proxy.Blackhole()
	close(release)
	for i := range n {
		receive1(t, returned, fmt.Sprintf("return %d of %d", i+1, n))
	}

	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	began := time.Now()
	err := c.Shutdown(ctx)
	took := time.Since(began)
	t.Logf("Shutdown took %v", took.Round(time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want its context's error: etcd took no record", err)
	}
	if took > within+time.Second {
		t.Errorf("Shutdown took %v with a context of %v: it waited for etcd", took.Round(time.Millisecond), bound)
	}
	if !strings.Contains(logs.String(), "shut down before etcd recorded every run") {
		t.Errorf("no log line says that runs are not recorded; the log:\n%s", logs.String())
	}
	// What etcd did not take is given up a batch at a time, not tried one
	// run after another at etcdTimeout each.
	eventually(t, 4*etcdTimeout, func() (bool, string) {
		left := c.runs.unrecorded()
		return left == 0, fmt.Sprintf("%d of %d records still waited for, one by one", left, n)
	})
	t.Logf("Shutdown returned after %v; records given up %v after it began", took.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// startTick moves fake to tick once a timer is armed for it, and waits
// for n runs to start (each sends on started).
func startTick(t *testing.T, fake *clock.Fake, tick time.Time, started <-chan struct{}, n int) {
	t.Helper()
	if !fake.WaitDueBy(tick, wait) {
		t.Fatal("no timer armed for the tick")
	}
	fake.Set(tick)
	for i := range n {
		receive1(t, started, fmt.Sprintf("run %d of %d", i+1, n))
	}
}

// receive1 waits for a value on ch, and fails the test if none comes
// within wait.
func receive1(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(wait):
		t.Fatalf("%s did not happen within %v", what, wait)
	}
}

// TestShutdownFromInsideAJobReturns: a job may call its Cron's methods,
// Shutdown included, alone and coordinated: Shutdown does not wait for the
// run it is called from, whether the job passes its own context or
// another.
func TestShutdownFromInsideAJobReturns(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	for _, coordinated := range []bool{false, true} {
		for _, own := range []bool{false, true} {
			name := fmt.Sprintf("coordinated=%v/own-context=%v", coordinated, own)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				fake := clock.NewFake(t0)
				opts := []Option{WithSeconds()}
				if coordinated {
					opts = append(opts, WithEtcd(srv.Client(t)), WithName(fmt.Sprintf("shutinside%v", own)),
						WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
				}
				fc := newFakeCron(t, fake, fake, opts...)
				shut := make(chan error, 1)
				var job Job = FuncJob(func() { shut <- fc.Shutdown(context.Background()) })
				if own {
					job = ContextFunc(func(ctx context.Context) error {
						shut <- fc.Shutdown(ctx)
						return nil
					})
				}
				mustAdd(t, fc.Cron, "* * * * * *", Named("stopper", job))
				fc.Start()
				if coordinated {
					eventually(t, wait, func() (bool, string) { return fc.coord.scheduling(), "the replica does not lead" })
				}
				fc.step(t)
				select {
				case err := <-shut:
					if err != nil {
						t.Errorf("Shutdown from inside a job = %v, want nil", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("Shutdown called from inside a job did not return within 10s")
				}
			})
		}
	}
}

// TestShutdownGivenAJobsContextWaitsForTheOtherRuns: a job that hands its
// context to a goroutine calling Shutdown, and returns, leaves out of the
// wait only its own run: Shutdown still waits for another run in progress.
func TestShutdownGivenAJobsContextWaitsForTheOtherRuns(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(t0)
	fc := newFakeCron(t, fake, fake, WithSeconds())
	release := make(chan struct{})
	longStarted := make(chan struct{}, 1)
	shut := make(chan error, 1)
	mustAdd(t, fc.Cron, "* * * * * *", Named("long", FuncJob(func() {
		longStarted <- struct{}{}
		<-release
	})))
	first := true
	mustAdd(t, fc.Cron, "* * * * * *", Named("stopper", ContextFunc(func(ctx context.Context) error {
		if first {
			first = false
			go func() { shut <- fc.Shutdown(ctx) }()
		}
		return nil
	})))
	fc.Start()
	fc.step(t)
	receive1(t, longStarted, "the long run")
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a run was in progress", err)
	case <-time.After(500 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-shut:
		// The job's context, Shutdown's, ended with the job's run.
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown = %v, want its context's error", err)
		}
	case <-time.After(wait):
		t.Fatal("Shutdown did not return once the runs had")
	}
}

// TestShutdownPastItsContextStillResigns: a leader shut down with no time
// left (baton crontab's SIGTERM, which gives its commands their grace
// itself) has resigned when Shutdown returns, so that a process exiting
// next hands over at once rather than after the TTL.
func TestShutdownPastItsContextStillResigns(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	fake := clock.NewFake(t0)
	c := newFakeCron(t, fake, fake, WithSeconds(), WithEtcd(srv.NewClient(t, proxy.Endpoint())), WithName("shutresign"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	mustAdd(t, c.Cron, "* * * * * *", Named("tick", FuncJob(func() {})))
	c.Start()
	eventually(t, wait, func() (bool, string) { return c.coord.scheduling(), "the replica does not lead" })
	// The resignation then takes a round trip of 60 ms or more: a Shutdown
	// that does not wait for it returns first.
	proxy.Delay(30 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.Shutdown(ctx)
	resp, err := cli.Get(context.Background(), election.DefaultPrefix+"/election/shutresign/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("the leader's election key is still there when Shutdown has returned: it did not resign")
	}
}

// TestShutdownPastItsContextReleasesTheMarkers: Shutdown given a context
// that has already ended (baton crontab's, whose commands have a grace of
// their own) ends the runs and still lets their records reach etcd, which
// answers, before it returns: each run's marker is released, so that a
// successor runs a Forbid job's next tick rather than skip it until the
// marker lapses with the lease of a process that has exited.
func TestShutdownPastItsContextReleasesTheMarkers(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	fake := clock.NewFake(t0)
	started := make(chan time.Time, 1)
	c := newFakeCron(t, fake, fake, WithSeconds(), WithEtcd(srv.NewClient(t, proxy.Endpoint())), WithName("shutmarker"), WithMode(ClaimMode),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	// Beside two busy loops, two round trips through the proxy's delay
	// have taken more than shutdownRecordWait.
	c.recordWait = 10 * time.Second
	mustAdd(t, c.Cron, "* * * * * *", Named("slow", ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		started <- info.Tick
		<-ctx.Done()
		return context.Cause(ctx)
	}), WithOverlap(Forbid)))
	c.Start()
	tick := t0.Add(time.Second)
	if !fake.WaitDueBy(tick, wait) {
		t.Fatal("no timer armed for the first tick")
	}
	fake.Set(tick)
	if got := receive(t, started, "the run"); !got.Equal(tick) {
		t.Fatalf("ran %v, want %v", got, tick)
	}
	// A record then takes two round trips of 20 ms or more: longer than
	// Shutdown's own steps.
	proxy.Delay(10 * time.Millisecond)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Shutdown(ended); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want its context's error", err)
	}
	marker := jobkeys.New(election.DefaultPrefix, "shutmarker").TickMarker("slow", tick.UnixNano())
	resp, err := srv.Client(t).Get(context.Background(), marker)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Errorf("the run's marker %s is still in etcd after Shutdown returned: a successor skips the job's ticks until it lapses", marker)
	}
}
