package cronx

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestStopWithAClaimInFlightMissesNoTick is G3 when the leader stops while
// its claim of a tick is still on the wire. Either the claim commits under
// the leader's term, and the stopping leader runs the tick (Stop's context
// waits for it, as robfig/cron's does for a job already started), or the
// leader resigned first, the claim fails, and the successor runs it. The
// tick must not be left claimed and unrun. The clocks are fake and set
// alike, so that the leader stops as its clock reaches the tick however
// late the test process is scheduled, and a successor slow to take over
// delays the next ticks rather than making them missed.
func TestStopWithAClaimInFlightMissesNoTick(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	l := newLedger()
	pc := &policyCluster{t: t, cli: srv.Client(t), name: "test"}
	// A context-aware job on a: the run of a tick claimed as a stops must
	// not start with its context already cancelled, or it is a tick lost.
	var cancelledAtStart atomic.Value // time.Time: the tick
	a := &replica{id: "a", cli: srv.NewClient(t, proxy.Endpoint())}
	fakeA := clock.NewFake(t0)
	a.cron = New(WithSeconds(), WithEtcd(a.cli), WithName("test"), withClock(fakeA), WithLocation(time.UTC),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	if _, err := a.cron.AddJob("* * * * * *", Named("tick", l.job("a", func(ctx context.Context) {
		if ctx.Err() != nil {
			info, _ := InfoFrom(ctx)
			cancelledAtStart.Store(info.Tick)
		}
	}))); err != nil {
		t.Fatal(err)
	}
	a.cron.Start()
	t.Cleanup(func() { a.stop(t) })
	pc.ids, pc.fakes, pc.crons = []string{"a"}, []*clock.Fake{fakeA}, []*Cron{a.cron}
	first := t0.Add(time.Second)
	pc.ready(first)
	pc.set(first)
	if r := runAfter(t, l.ch, time.Time{}, 15*time.Second, "run"); r.Instance != "a" {
		t.Fatalf("the first tick ran on %s, want a", r.Instance)
	}
	fakeB := clock.NewFake(first)
	b := startReplica(t, srv.Client(t), "b", l, LeaderMode, withClock(fakeB), WithLocation(time.UTC), WithElection(election.WithTTL(stallTTL)))
	pc.ids, pc.fakes, pc.crons = append(pc.ids, "b"), append(pc.fakes, fakeB), append(pc.crons, b.cron)
	waitCandidates(t, srv.Client(t), "test", 2)

	// a's requests now take 100 ms each way; it stops as soon as its clock
	// reaches the tick, while that tick's claim is on its way.
	proxy.Delay(100 * time.Millisecond)
	tick := first.Add(time.Second)
	pc.ready(tick)
	pc.set(tick)
	stopped := a.cron.Stop()

	r := runAfter(t, l.ch, first, 15*time.Second, "run of the tick")
	if !r.Tick.Equal(tick) {
		t.Fatalf("tick %v was missed: the next run is %v, on %s", tick, r.Tick, r.Instance)
	}
	if r.Instance == "a" {
		if v := cancelledAtStart.Load(); v != nil && v.(time.Time).Equal(tick) {
			t.Errorf("a ran tick %v, claimed as it stopped, with its context already cancelled", tick)
		}
		select {
		case <-stopped.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("a's Stop context not done within 10s of its last run")
		}
	}
	// And the successor goes on.
	next := tick.Add(time.Second)
	pc.ready(next)
	pc.set(next)
	l.waitTicks(t, 3, 15*time.Second)
	l.check(t, time.Second)
}

// waitCandidates waits until the election of the named scheduler has n
// candidates in etcd.
func waitCandidates(t *testing.T, cli *clientv3.Client, name string, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := cli.Get(ctx, election.DefaultPrefix+"/election/"+name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		cancel()
		if err == nil && resp.Count >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the election %q did not reach %d candidates within 10s (err %v)", name, n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// errLogger records the Error lines of a Cron.
type errLogger struct{ ch chan string }

func (l errLogger) Info(string, ...interface{}) {}
func (l errLogger) Error(err error, msg string, kv ...interface{}) {
	l.ch <- fmt.Sprint(append([]interface{}{msg, " ", err, " "}, kv...)...)
}

// TestTickOvertakenByItsSuccessorIsReported: when a tick's claim finds a
// later tick claimed by this same replica (the claim was held up past the
// next tick's, as when etcd changes raft leader), nobody runs the tick, and
// the Cron says so. A later tick claimed by another replica is the ordinary
// case of a tick run elsewhere, and is not reported.
func TestTickOvertakenByItsSuccessorIsReported(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ahead := fmt.Sprintf("%020d ", time.Now().Add(time.Hour).Truncate(time.Second).UnixNano())
	for job, holder := range map[string]string{"mine": "a", "theirs": "b"} {
		if _, err := cli.Put(context.Background(), election.DefaultPrefix+"/jobs/over/"+job+"/last", ahead+holder); err != nil {
			t.Fatal(err)
		}
	}
	logs := errLogger{ch: make(chan string, 100)}
	c := New(WithSeconds(), WithEtcd(cli), WithName("over"), WithLogger(logs),
		WithElection(election.WithIdentity("a"), election.WithTTL(2*time.Second)))
	for _, job := range []string{"mine", "theirs"} {
		if _, err := c.AddJob("* * * * * *", Named(job, FuncJob(func() { t.Errorf("%s ran", job) }))); err != nil {
			t.Fatal(err)
		}
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
	deadline := time.After(10 * time.Second)
	for reported := 0; reported < 2; {
		select {
		case line := <-logs.ch:
			switch {
			case strings.Contains(line, "theirs"):
				t.Fatalf("a tick claimed by another replica was reported: %s", line)
			case strings.Contains(line, "cronx: tick not run") && strings.Contains(line, "was claimed first") && strings.Contains(line, "mine"):
				reported++
			default:
				t.Fatalf("unexpected error line: %s", line)
			}
		case <-deadline:
			t.Fatal("no report of an overtaken tick within 10s")
		}
	}
}

// TestSuccessorReportsNoTickItsPredecessorRan is G3 as the successor's
// reports see it: a replica that followed for longer than the misfire grace
// takes over from a leader that stopped, runs every tick from the next, and
// reports none not run, since its predecessor ran each. Its entries were
// computed when it started and left as they were while it followed: a
// takeover that ran the entries due by them fired its first tick, long
// past, again, and reported it skipped (misfire) or, claimed after the
// catch-up, overtaken.
func TestSuccessorReportsNoTickItsPredecessorRan(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	l := newLedger()
	events := newEventLog()
	pc := &policyCluster{t: t, cli: srv.Client(t), name: "test"}
	for _, id := range []string{"a", "b"} {
		fake := clock.NewFake(t0)
		opts := []Option{withClock(fake), WithLocation(time.UTC), WithMisfire(RunOnce, 3*time.Second),
			WithElection(election.WithTTL(stallTTL))}
		if id == "b" {
			opts = append(opts, observed(events)...)
		}
		r := startReplica(t, srv.Client(t), id, l, LeaderMode, opts...)
		pc.ids, pc.fakes, pc.crons = append(pc.ids, id), append(pc.fakes, fake), append(pc.crons, r.cron)
		waitCandidates(t, pc.cli, "test", int64(len(pc.ids))) // a campaigns first, so it leads
	}
	for n := 1; n <= 6; n++ {
		pc.tick(l, n, n)
	}
	if r := l.last(); r.Instance != "a" {
		t.Fatalf("tick %v ran on %s, want a", r.Tick.Format(time.TimeOnly), r.Instance)
	}
	(&replica{id: "a", cron: pc.crons[0]}).stop(t)
	for n := 7; n <= 9; n++ {
		pc.tick(l, n, n)
	}
	l.check(t, time.Second)
	// An observer gets b's events in order: the takeover's reports come
	// before the end of its third tick.
	last := t0.Add(9 * time.Second)
	waitFor(t, events, 15*time.Second, "b's run of the last tick to end", func(e RunEnded) bool { return e.Tick.Equal(last) })
	events.mu.Lock()
	defer events.mu.Unlock()
	for _, ev := range events.all {
		if e, ok := ev.(TickNotRun); ok {
			t.Errorf("b reported the tick %v, which a ran, not run: %v (%v)", e.Tick.Format(time.TimeOnly), e.Reason, e.Err)
		}
	}
}
