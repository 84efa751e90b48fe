package cronx

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ledger records every run of every replica.
type ledger struct {
	mu    sync.Mutex
	runs  []Info
	ch    chan Info
	since time.Time // when the ledger was made or last reset
}

func newLedger() *ledger {
	etcdtest.StartStallWatch()
	return &ledger{ch: make(chan Info, 1024), since: time.Now()}
}

func (l *ledger) job(instance string, hold func(ctx context.Context)) ContextFunc {
	return func(ctx context.Context) error {
		info, ok := InfoFrom(ctx)
		if !ok {
			return fmt.Errorf("no run info in the job's context")
		}
		if info.Instance != instance {
			return fmt.Errorf("run info instance %q, want %q", info.Instance, instance)
		}
		l.mu.Lock()
		l.runs = append(l.runs, info)
		l.mu.Unlock()
		l.ch <- info
		if hold != nil {
			hold(ctx)
		}
		return nil
	}
}

// snapshot returns the ticks recorded so far, distinct.
func (l *ledger) snapshot() map[time.Time]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[time.Time]bool{}
	for _, r := range l.runs {
		seen[r.Tick] = true
	}
	return seen
}

// reset forgets the runs so far.
func (l *ledger) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = nil
	l.since = time.Now()
	for len(l.ch) > 0 {
		<-l.ch
	}
}

// waitTicks waits until runs of n distinct ticks were recorded.
func (l *ledger) waitTicks(t *testing.T, n int, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	seen := map[time.Time]bool{}
	l.mu.Lock()
	for _, r := range l.runs {
		seen[r.Tick] = true
	}
	l.mu.Unlock()
	for len(seen) < n {
		select {
		case r := <-l.ch:
			seen[r.Tick] = true
		case <-deadline:
			l.mu.Lock()
			since := l.since
			l.mu.Unlock()
			etcdtest.ReportStalls(t, since)
			t.Fatalf("saw %d ticks within %v, want %d", len(seen), d, n)
		}
	}
}

// check asserts that every tick ran once and, unless step is zero, that
// ticks are step apart with none missing; it returns the ticks in order.
func (l *ledger) check(t *testing.T, step time.Duration) []time.Time {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	count := map[time.Time][]string{}
	for _, r := range l.runs {
		count[r.Tick] = append(count[r.Tick], r.Instance)
	}
	var ticks []time.Time
	for tick, by := range count {
		if len(by) > 1 {
			t.Errorf("tick %v ran %d times, on %v", tick.Format(time.TimeOnly+".000"), len(by), by)
		}
		ticks = append(ticks, tick)
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Before(ticks[j]) })
	for i := 1; step > 0 && i < len(ticks); i++ {
		if gap := ticks[i].Sub(ticks[i-1]); gap != step {
			t.Errorf("ticks %v and %v are %v apart, want %v: a tick was missed",
				ticks[i-1].Format(time.TimeOnly), ticks[i].Format(time.TimeOnly), gap, step)
		}
	}
	if t.Failed() {
		for _, r := range l.runs {
			t.Logf("ran %v on %s", r.Tick.Format(time.TimeOnly+".000"), r.Instance)
		}
		etcdtest.ReportStalls(t, l.since)
	}
	return ticks
}

type replica struct {
	id   string
	cron *Cron
	cli  *clientv3.Client
}

func startReplica(t *testing.T, cli *clientv3.Client, id string, l *ledger, mode Mode, opts ...Option) *replica {
	t.Helper()
	c := New(append([]Option{WithSeconds(), WithEtcd(cli), WithName("test"), WithMode(mode),
		WithElection(election.WithIdentity(id), election.WithTTL(2*time.Second))}, opts...)...)
	if _, err := c.AddJob("* * * * * *", Named("tick", l.job(id, nil))); err != nil {
		t.Fatal(err)
	}
	c.Start()
	r := &replica{id: id, cron: c, cli: cli}
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *replica) stop(t *testing.T) {
	select {
	case <-r.cron.Stop().Done():
	case <-time.After(10 * time.Second):
		t.Errorf("%s: Stop's context not done within 10s", r.id)
	}
}

// newTickCluster starts a replica of the every-second job per skew, named
// r0, r1, ..., each on a fake clock that reads t0 plus its skew and with
// sessions of ttl. The test moves the clocks a tick at a time once every
// scheduling replica waits for it, so that a loaded machine delays ticks
// but cannot make one missed.
func newTickCluster(t *testing.T, l *ledger, mode Mode, ttl time.Duration, skews ...time.Duration) *policyCluster {
	t.Helper()
	srv := etcdtest.Shared(t)
	pc := &policyCluster{t: t, cli: srv.Client(t), name: "test", skews: skews}
	for i, skew := range skews {
		id := fmt.Sprintf("r%d", i)
		fake := clock.NewFake(t0.Add(skew))
		r := startReplica(t, srv.Client(t), id, l, mode, withClock(fake), WithLocation(time.UTC), WithElection(election.WithTTL(ttl)))
		pc.ids, pc.fakes, pc.crons = append(pc.ids, id), append(pc.fakes, fake), append(pc.crons, r.cron)
	}
	return pc
}

// tick moves the cluster's time to t0+n seconds once the scheduling
// replicas wait for it, and waits until runs of want distinct ticks were
// recorded.
func (pc *policyCluster) tick(l *ledger, n, want int) {
	pc.t.Helper()
	at := t0.Add(time.Duration(n) * time.Second)
	pc.ready(at)
	pc.set(at)
	l.waitTicks(pc.t, want, 15*time.Second)
}

func TestThreeReplicasRunEachTickOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			l := newLedger()
			pc := newTickCluster(t, l, mode, stallTTL, 0, 0, 0)
			for n := 1; n <= 5; n++ {
				pc.tick(l, n, n)
			}
			l.check(t, time.Second)
		})
	}
}

// offsetClock is a replica clock that is off by a fixed amount.
type offsetClock struct{ d time.Duration }

func (o offsetClock) Now() time.Time                       { return time.Now().Add(o.d) }
func (o offsetClock) NewTimer(d time.Duration) clock.Timer { return clock.Real.NewTimer(d) }

// TestClaimModeSkewedClocksRunEachTickOnce: replicas whose clocks are 2s
// apart claim each tick at their own time; each tick runs once, on the
// replica that reaches it first, and none is missed.
func TestClaimModeSkewedClocksRunEachTickOnce(t *testing.T) {
	t.Parallel()
	l := newLedger()
	pc := newTickCluster(t, l, ClaimMode, stallTTL, -2*time.Second, 0, 2*time.Second)
	// A replica whose clock is ahead claims from its own now when it joins,
	// so ticks the others had not reached yet are skipped once (see the
	// package documentation). Here r2, ahead, runs its first tick before
	// the others reach theirs; from then on every tick runs exactly once.
	pc.ready(t0.Add(time.Second))
	pc.fakes[2].Set(t0.Add(time.Second + pc.skews[2]))
	l.waitTicks(t, 1, 15*time.Second)
	if r := l.last(); r.Instance != "r2" || !r.Tick.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("ran %v on %s first, want %v on r2", r.Tick, r.Instance, t0.Add(3*time.Second))
	}
	pc.set(t0.Add(time.Second))
	l.reset()
	for n := 1; n <= 6; n++ {
		pc.tick(l, 1+n, n)
	}
	l.check(t, time.Second)
}

// leaderOf returns the replica that ran the latest recorded tick.
func (l *ledger) last() Info {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[len(l.runs)-1]
}

// TestGracefulStopOfLeaderMissesNoTick is G3: the leader stops between
// ticks, resigns, and the next replica runs every tick from the next one:
// none is missed and none runs twice. The fake clocks wait for the
// successor, so the sessions last a minute, past the wait for it: only a
// resignation, not the expiry of the old leader's lease, elects it in time.
func TestGracefulStopOfLeaderMissesNoTick(t *testing.T) {
	t.Parallel()
	l := newLedger()
	pc := newTickCluster(t, l, LeaderMode, time.Minute, 0, 0, 0)
	pc.tick(l, 1, 1)
	pc.tick(l, 2, 2)
	leader := l.last().Instance
	for i, c := range pc.crons {
		if pc.ids[i] == leader {
			(&replica{id: leader, cron: c}).stop(t) // between ticks
		}
	}
	for n := 3; n <= 6; n++ {
		pc.tick(l, n, n)
	}
	l.check(t, time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.runs[2:] {
		if r.Instance == leader {
			t.Errorf("the stopped leader %s ran the tick %v", leader, r.Tick.Format(time.TimeOnly))
		}
	}
}

// TestPartitionedLeaderIsCancelledAndItsTickNotDoubled is G2 and G4: a
// leader cut off from etcd has its running job's context cancelled, a
// successor takes over, and no tick runs twice.
func TestPartitionedLeaderIsCancelledAndItsTickNotDoubled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	l := newLedger()
	cancelled := make(chan error, 16)
	hold := func(ctx context.Context) {
		<-ctx.Done()
		cancelled <- context.Cause(ctx)
	}
	// The replica to be partitioned starts first, so it leads; its job
	// holds until its context ends.
	a := New(WithSeconds(), WithEtcd(srv.NewClient(t, proxy.Endpoint())), WithName("test"),
		WithElection(election.WithIdentity("a"), election.WithTTL(2*time.Second)))
	if _, err := a.AddJob("* * * * * *", Named("tick", l.job("a", hold))); err != nil {
		t.Fatal(err)
	}
	a.Start()
	t.Cleanup(func() {
		select {
		case <-a.Stop().Done():
		case <-time.After(15 * time.Second):
			t.Errorf("a: Stop's context not done")
		}
	})
	l.waitTicks(t, 1, 10*time.Second)
	if first := l.last(); first.Instance != "a" {
		t.Fatalf("first tick ran on %s, want a", first.Instance)
	}
	// The successors' sessions outlast a loaded machine's stalls, as a's,
	// whose lapse the test is about, need not.
	startReplica(t, srv.Client(t), "b", l, LeaderMode, WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))
	startReplica(t, srv.Client(t), "c", l, LeaderMode, WithElection(election.WithIdentity("c"), election.WithTTL(stallTTL)))

	proxy.Blackhole()
	select {
	case cause := <-cancelled:
		if !errors.Is(cause, election.ErrSessionExpired) {
			t.Errorf("a's job context ended with %v, want ErrSessionExpired", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a's running job was not cancelled after a was partitioned")
	}
	before := len(l.snapshot())
	l.waitTicks(t, before+3, 15*time.Second)
	l.check(t, 0)
}

// TestEtcdRestartedEmptyResumesWithoutDuplicates: scheduling resumes by
// itself when etcd comes back with no data, and no tick runs twice.
func TestEtcdRestartedEmptyResumesWithoutDuplicates(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	srv := etcdtest.Start(t)
	l := newLedger()
	startReplica(t, srv.Client(t), "r0", l, LeaderMode)
	startReplica(t, srv.Client(t), "r1", l, LeaderMode)
	l.waitTicks(t, 2, 10*time.Second)
	srv.Wipe(t)
	n := len(l.snapshot())
	l.waitTicks(t, n+3, 20*time.Second)
	l.check(t, 0)
}

// TestFollowerFiresNothing: in leader mode a follower's loop arms no timer
// for ticks, so it spends nothing per tick, while the leader runs them all.
func TestFollowerFiresNothing(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	l := newLedger()
	// TTLs a loaded machine does not outlast: a leader whose session
	// lapsed would rightly hand its term to the follower.
	startReplica(t, srv.Client(t), "leader", l, LeaderMode, WithElection(election.WithIdentity("leader"), election.WithTTL(stallTTL)))
	l.waitTicks(t, 1, 10*time.Second)

	var mu sync.Mutex
	fired := 0
	f := New(WithSeconds(), WithEtcd(srv.Client(t)), WithName("test"),
		WithElection(election.WithIdentity("follower"), election.WithTTL(stallTTL)))
	f.fireHook = func(Entry, time.Time) {
		mu.Lock()
		fired++
		mu.Unlock()
	}
	if _, err := f.AddJob("* * * * * *", Named("tick", l.job("follower", nil))); err != nil {
		t.Fatal(err)
	}
	f.Start()
	defer func() { <-f.Stop().Done() }()

	n := len(l.snapshot())
	l.waitTicks(t, n+3, 10*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if fired != 0 {
		t.Fatalf("the follower fired %d ticks while the leader ran them", fired)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.runs {
		if r.Instance != "leader" {
			t.Fatalf("tick %v ran on %s", r.Tick, r.Instance)
		}
	}
}
