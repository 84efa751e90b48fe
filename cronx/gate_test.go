package cronx

import (
	"context"
	"fmt"
	"runtime"
	"strings"
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

// TestACrowdedTakeoverHoldsAFewGoroutines: a leader that takes over within
// a minute of a tick of thousands of jobs catches each of them up, once,
// with no more goroutines waiting for the claims than a few batches need.
// Each goroutine leaves its runtime structure in the heap for good, so a
// goroutine per job would cost the process a few hundred bytes a job until
// it exits.
//
// Not parallel: it counts the process's goroutines, which the other tests'
// would blur; and beside them, in a process of its own, its thousands of jobs'
// catch-up starved the package's crowded tests of the CPU on a loaded
// machine.
func TestACrowdedTakeoverHoldsAFewGoroutines(t *testing.T) {
	if testing.Short() {
		t.Skip("catches up thousands of jobs on its own, the other tests waiting; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	const name = "gate-crowd"
	n := 3 * maxClaimWaiters
	tick := t0.Add(time.Minute) // every job's, at second 0
	var l tickLedger
	// What else happened, so that a failure says why jobs did not run.
	var events struct {
		sync.Mutex
		notRun []string
		terms  []string
	}
	note := func(list *[]string, s string) {
		events.Lock()
		defer events.Unlock()
		*list = append(*list, s)
	}
	observer := func(id string) Option {
		return WithObserver(Observer{
			OnTickNotRun: func(e TickNotRun) {
				note(&events.notRun, fmt.Sprintf("%s: %s %v: %s (%v)", id, e.Job, e.Tick, e.Reason, e.Err))
			},
			OnLeadershipGained: func(e Leadership) { note(&events.terms, fmt.Sprintf("%s gained %v", id, e.Fence)) },
			OnLeadershipLost: func(e Leadership) {
				note(&events.terms, fmt.Sprintf("%s lost %v: %v", id, e.Fence, e.Err))
			},
		})
	}
	report := func() string {
		events.Lock()
		defer events.Unlock()
		s := fmt.Sprintf("; terms: %v; %d ticks not run", events.terms, len(events.notRun))
		if len(events.notRun) > 0 {
			s += fmt.Sprintf(", the first %q", events.notRun[0])
		}
		return s
	}
	replica := func(id string, fake *clock.Fake) *Cron {
		c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(srv.Client(t)), WithName(name), observer(id),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		for i := range n {
			mustAdd(t, c, "0 * * * * *", Named(fmt.Sprintf("job-%04d", i), l.job(fmt.Sprintf("job-%04d", i))))
		}
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	// a publishes every job before the tick, and is gone before it; b's
	// clock is past it.
	a := replica("a", clock.NewFake(tick.Add(-5*time.Second)))
	keys := jobkeys.New(election.DefaultPrefix, name)
	eventually(t, time.Minute, func() (bool, string) { // other packages' tests may load the machine
		resp, err := cli.Get(context.Background(), keys.Dir(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return false, err.Error()
		}
		marks := 0
		for _, kv := range resp.Kvs {
			if strings.HasSuffix(string(kv.Key), "/since") {
				marks++
			}
		}
		return marks == n, fmt.Sprintf("%d of %d jobs published%s", marks, n, report())
	})
	b := replica("b", clock.NewFake(tick.Add(time.Second)))
	waitCandidates(t, cli, name, 2)

	base := runtime.NumGoroutine()
	var peak atomic.Int64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if g := int64(runtime.NumGoroutine()); g > peak.Load() {
				peak.Store(g)
			}
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	stopSampling := sync.OnceFunc(func() { close(done); <-sampled })
	t.Cleanup(stopSampling) // a failure before the count ends the sampling too
	<-a.Stop().Done()
	eventually(t, 15*time.Second, func() (bool, string) { return b.coord.scheduling(), "b did not lead after a stopped" })
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("job-%04d", i)
	}
	eventually(t, 2*time.Minute, func() (bool, string) {
		l.mu.Lock()
		ran := len(l.ran)
		l.mu.Unlock()
		events.Lock()
		lost := len(events.notRun)
		events.Unlock()
		if lost > 0 {
			t.Fatalf("%d of %d jobs ran%s", ran, n, report())
		}
		return ran == n, fmt.Sprintf("%d of %d jobs ran%s", ran, n, report())
	})
	l.ranOnce(t, 0, tick, names...)
	stopSampling()

	// The claims' goroutines, and room for what else runs meanwhile (the
	// jobs, the bookkeeping, etcd's own for each request); a goroutine per
	// job's claim is n more.
	if extra, bound := int(peak.Load())-base, maxClaimWaiters+n/4; extra > bound {
		t.Errorf("the takeover of %d jobs' tick had %d goroutines more than before it, want at most %d", n, extra, bound)
	}
	idleWithin(t, b, 30*time.Second, "b's catch-up")
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, j := range names {
		if got := l.ran[j]; len(got) != 1 || !got[0].Equal(tick) {
			t.Fatalf("%s ran %v, want its tick %v once", j, got, tick)
		}
	}
}

// TestJobsOfACrowdedTickThatRunLongAllStart: a tick of more jobs than the
// claim gate has places, each running until every one has started: a run
// gives its place up as its claim is answered, not as its job returns, so
// all of them start.
func TestJobsOfACrowdedTickThatRunLongAllStart(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	n := maxClaimWaiters + 100
	tick := t0.Add(time.Minute)
	fake := clock.NewFake(tick.Add(-time.Second))
	var started atomic.Int64
	release := make(chan struct{})
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(srv.Client(t)), WithName("gate-long"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	for i := range n {
		mustAdd(t, c, "0 * * * * *", Named(fmt.Sprintf("job-%04d", i), ContextFunc(func(ctx context.Context) error {
			started.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})))
	}
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	eventually(t, wait, func() (bool, string) { return c.coord.scheduling(), "a does not lead" })
	if !fake.WaitDueBy(tick, wait) {
		t.Fatalf("no timer armed for the tick %s", tick)
	}
	fake.Advance(time.Second)
	eventually(t, 30*time.Second, func() (bool, string) {
		return started.Load() == int64(n), fmt.Sprintf("%d of %d jobs started", started.Load(), n)
	})
	close(release)
	idleWithin(t, c, 30*time.Second, "the crowd's runs")
}
