package cronx

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
)

// heldJob is a job whose runs each wait for a token on release (or their
// context's end), and which counts how many of its runs went on at once.
type heldJob struct {
	starts     chan started
	release    chan struct{}
	inProgress atomic.Int32
	most       atomic.Int32
}

func newHeldJob() *heldJob {
	return &heldJob{starts: make(chan started, 64), release: make(chan struct{}, 64)}
}

func (h *heldJob) job() ContextFunc {
	return func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		n := h.inProgress.Add(1)
		defer h.inProgress.Add(-1)
		for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
		}
		h.starts <- started{info, ctx}
		select {
		case <-h.release:
		case <-ctx.Done():
		}
		return nil
	}
}

// notRunOf sends the ticks of job reported not run to ch.
func notRunOf(job string, ch chan<- TickNotRun) Option {
	return WithObserver(Observer{OnTickNotRun: func(e TickNotRun) {
		if e.Job == job {
			ch <- e
		}
	}})
}

// waitBuffered waits until job's Status lists want as its buffered ticks.
func (pc *policyCluster) waitBuffered(job string, want ...time.Time) {
	pc.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var got []time.Time
	for {
		st, err := pc.crons[0].Status(context.Background())
		if err != nil {
			pc.t.Fatal(err)
		}
		got = nil
		for _, j := range st.Jobs {
			if j.Name == job {
				got = j.Buffered
			}
		}
		if slices.EqualFunc(got, want, time.Time.Equal) {
			return
		}
		if time.Now().After(deadline) {
			pc.t.Fatalf("job %q: buffered ticks %v within 15s, want %v", job, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// next moves every clock to at once a scheduling replica waits for it.
func (pc *policyCluster) next(at time.Time) {
	pc.t.Helper()
	pc.ready(at)
	pc.set(at)
}

// TestBufferOneRunsTheTickThatCameDuringARunOnceItEnds: under BufferOne, a
// tick that comes while a run goes on waits in etcd and runs, with its own
// tick as Info.Tick, once that run has ended and not before; a tick that
// comes while one waits is dropped and reported as ReasonBufferFull.
func TestBufferOneRunsTheTickThatCameDuringARunOnceItEnds(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	h := newHeldJob()
	notRun := make(chan TickNotRun, 16)
	bufferedTicks := make(chan TickBuffered, 16)
	pc := newPolicyCluster(t, "bufone", start, LeaderMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("slow", h.job(), WithOverlap(BufferOne)))
	}, notRunOf("slow", notRun), WithObserver(Observer{OnTickBuffered: func(e TickBuffered) { bufferedTicks <- e }}))
	pc.next(tick)
	first := waitStart(t, h.starts, "run of the first tick")

	second, third := tick.Add(time.Minute), tick.Add(2*time.Minute)
	pc.next(second)
	pc.waitBuffered("slow", second)
	select {
	case e := <-bufferedTicks:
		if !e.Tick.Equal(second) || e.Job != "slow" || e.Instance != first.info.Instance {
			t.Errorf("told %+v buffered, want %v of slow on %s", e, second, first.info.Instance)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("observers not told of the tick %v buffered within 15s", second)
	}
	pc.next(third)
	select {
	case e := <-notRun:
		if !e.Tick.Equal(third) || e.Reason != ReasonBufferFull {
			t.Errorf("reported the tick %v not run for %v, want %v for %v", e.Tick, e.Reason, third, ReasonBufferFull)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the tick %v, which came while %v waited, was not reported as dropped within 15s", third, second)
	}
	pc.waitBuffered("slow", second)
	noStart(t, h.starts, 300*time.Millisecond, "while the first run goes on")

	h.release <- struct{}{}
	s := waitStart(t, h.starts, "run of the buffered tick")
	if !s.info.Tick.Equal(second) || s.info.Instance != first.info.Instance || s.info.Triggered {
		t.Errorf("ran %+v, want the buffered tick %v on the leader %s", s.info, second, first.info.Instance)
	}
	pc.waitBuffered("slow")
	h.release <- struct{}{}
	hist := pc.history("slow", 2)
	noStart(t, h.starts, 300*time.Millisecond, "after the buffered tick (the dropped one must not run)")
	if len(hist) != 2 || !hist[0].Tick.Equal(tick) || !hist[1].Tick.Equal(second) {
		t.Errorf("history %+v, want the runs of %v and %v", hist, tick, second)
	}
	if m := h.most.Load(); m != 1 {
		t.Errorf("%d runs of a BufferOne job went on at once, want 1", m)
	}
	select {
	case e := <-bufferedTicks:
		t.Errorf("told %+v buffered, the tick after the one buffered, which was dropped", e)
	default:
	}
}

// TestBufferAllRunsEveryWaitingTickInOrder: under BufferAll, the ticks that
// come during a run all wait, and run one after another in their order.
func TestBufferAllRunsEveryWaitingTickInOrder(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	h := newHeldJob()
	pc := newPolicyCluster(t, "bufall", start, LeaderMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("slow", h.job(), WithOverlap(BufferAll)))
	})
	pc.next(tick)
	waitStart(t, h.starts, "run of the first tick")
	var waiting []time.Time
	for i := 1; i <= 3; i++ {
		at := tick.Add(time.Duration(i) * time.Minute)
		pc.next(at)
		waiting = append(waiting, at)
		pc.waitBuffered("slow", waiting...)
	}
	noStart(t, h.starts, 300*time.Millisecond, "while the first run goes on")
	for i, want := range waiting {
		h.release <- struct{}{}
		s := waitStart(t, h.starts, "run of a buffered tick")
		if !s.info.Tick.Equal(want) {
			t.Fatalf("buffered run %d is of %v, want %v (ticks %v)", i, s.info.Tick, want, waiting)
		}
		pc.waitBuffered("slow", waiting[i+1:]...)
		noStart(t, h.starts, 100*time.Millisecond, "while a buffered run goes on")
	}
	h.release <- struct{}{}
	if m := h.most.Load(); m != 1 {
		t.Errorf("%d runs of a BufferAll job went on at once, want 1", m)
	}
}

// TestBufferSurvivesTheLeadersStop: a leader stops (a deploy) while a run
// goes on, which G3 lets finish, and a tick waits in the buffer. Its
// successor runs the waiting tick once, when the run's marker goes, and not
// before.
func TestBufferSurvivesTheLeadersStop(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	h := newHeldJob()
	pc := newPolicyCluster(t, "bufstop", start, LeaderMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("slow", h.job(), WithOverlap(BufferOne)))
	})
	pc.next(tick)
	first := waitStart(t, h.starts, "run of the first tick")
	second := tick.Add(time.Minute)
	pc.next(second)
	pc.waitBuffered("slow", second)

	var leader *Cron
	for i, id := range pc.ids {
		if id == first.info.Instance {
			leader = pc.crons[i]
		}
	}
	stopped := leader.Stop()
	deadline := time.Now().Add(15 * time.Second)
	successor := ""
	for successor == "" {
		for i, c := range pc.crons {
			if c != leader && c.coord.scheduling() {
				successor = pc.ids[i]
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no successor within 15s of the leader's stop")
		}
		time.Sleep(5 * time.Millisecond)
	}
	noStart(t, h.starts, 500*time.Millisecond, "while the stopped leader's run goes on")
	h.release <- struct{}{}
	<-stopped.Done()
	s := waitStart(t, h.starts, "run of the buffered tick on the successor")
	if !s.info.Tick.Equal(second) || s.info.Instance != successor {
		t.Errorf("ran %v on %s, want the buffered tick %v on the successor %s", s.info.Tick, s.info.Instance, second, successor)
	}
	h.release <- struct{}{}
	pc.waitBuffered("slow")
	noStart(t, h.starts, 300*time.Millisecond, "after the buffered tick ran")
}

// TestBufferedTickRunsWhenItsLeaderAndRunnerIsCutOff: the leader, with a
// run going and a tick buffered, is cut off from etcd (a crash, as etcd
// sees it): its run's marker lapses with its lease, and the successor runs
// the buffered tick, once.
func TestBufferedTickRunsWhenItsLeaderAndRunnerIsCutOff(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for a lease to lapse; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	h := newHeldJob()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	pc := &policyCluster{t: t, cli: srv.Client(t), name: "bufcut"}
	replica := func(id, endpoint string) {
		cli := srv.Client(t)
		if endpoint != "" {
			cli = srv.NewClient(t, endpoint)
		}
		fake := clock.NewFake(start)
		c := New(WithEtcd(cli), WithName("bufcut"), withClock(fake), WithLocation(time.UTC), WithLogger(testLogger{t, id}),
			WithElection(election.WithIdentity(id), election.WithTTL(2*time.Second)))
		mustAdd(t, c, "* * * * *", Named("slow", h.job(), WithOverlap(BufferOne)))
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		pc.ids, pc.fakes, pc.crons = append(pc.ids, id), append(pc.fakes, fake), append(pc.crons, c)
	}
	replica("a", proxy.Endpoint())
	pc.next(tick)
	if s := waitStart(t, h.starts, "run of the first tick"); s.info.Instance != "a" {
		t.Fatalf("the first tick ran on %s, want a (the first replica leads)", s.info.Instance)
	}
	replica("b", "")
	waitCandidates(t, srv.Client(t), "bufcut", 2)
	// Status is read through the first replica's client: b's, which a's
	// cut-off leaves alone.
	slices.Reverse(pc.ids)
	slices.Reverse(pc.fakes)
	slices.Reverse(pc.crons)
	second := tick.Add(time.Minute)
	pc.next(second)
	pc.waitBuffered("slow", second)

	proxy.Blackhole()
	s := waitStart(t, h.starts, "run of the buffered tick after a was cut off")
	if !s.info.Tick.Equal(second) || s.info.Instance != "b" {
		t.Errorf("ran %v on %s, want the buffered tick %v on b", s.info.Tick, s.info.Instance, second)
	}
	h.release <- struct{}{}
	pc.history("slow", 1)
	pc.waitBuffered("slow")
	noStart(t, h.starts, 500*time.Millisecond, "after the buffered tick ran")
	proxy.Pass()
}

// TestBufferInClaimModeRunsTheWaitingTickOnce: in claim mode every replica
// fires the tick that comes during a run; one buffers it, and the replicas
// whose claims find it buffered wait for its turn too. With the replica
// that buffered it stopped, another runs it, once, when the run ends.
func TestBufferInClaimModeRunsTheWaitingTickOnce(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	h := newHeldJob()
	pc := newPolicyCluster(t, "bufclaim", start, ClaimMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("slow", h.job(), WithOverlap(BufferOne)))
	})
	pc.next(tick)
	first := waitStart(t, h.starts, "run of the first tick")
	second := tick.Add(time.Minute)
	pc.next(second)
	pc.waitBuffered("slow", second)
	resp, err := pc.cli.Get(context.Background(), jobkeys.New(election.DefaultPrefix, pc.name).BufferEntry("slow", second.UnixNano()))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read the buffered tick: %v", err)
	}
	by := jobkeys.MarkerHolder(string(resp.Kvs[0].Value))
	// Stopping the replica that buffered the tick gives up its wait; the
	// first run, wherever it is, goes on.
	var stopped context.Context
	for i, id := range pc.ids {
		if id == by {
			stopped = pc.crons[i].Stop()
		}
	}
	if stopped == nil {
		t.Fatalf("the tick was buffered by %q, no replica of %v", by, pc.ids)
	}
	noStart(t, h.starts, 300*time.Millisecond, "while the first run goes on")
	h.release <- struct{}{}
	s := waitStart(t, h.starts, "run of the buffered tick")
	if !s.info.Tick.Equal(second) || s.info.Instance == by {
		t.Errorf("ran %v on %s, want the buffered tick %v on a replica other than %s, which buffered it and stopped (the first ran on %s)",
			s.info.Tick, s.info.Instance, second, by, first.info.Instance)
	}
	h.release <- struct{}{}
	pc.waitBuffered("slow")
	noStart(t, h.starts, 300*time.Millisecond, "after the buffered tick ran")
	<-stopped.Done()
	if m := h.most.Load(); m != 1 {
		t.Errorf("%d runs of a BufferOne job went on at once, want 1", m)
	}
}

// TestBufferingJobsTriggerWaitsForTheRunInProgress: a trigger of a
// BufferOne job runs once the run in progress has ended, not beside it.
func TestBufferingJobsTriggerWaitsForTheRunInProgress(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	h := newHeldJob()
	pc := newPolicyCluster(t, "buftrig", start, LeaderMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("slow", h.job(), WithOverlap(BufferOne)))
	})
	pc.next(tick)
	waitStart(t, h.starts, "run of the first tick")
	// The job's registration, which Trigger looks for, is written in the
	// background.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		err := pc.crons[0].Trigger(context.Background(), "slow")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Trigger within 15s: %v", err)
		}
	}
	noStart(t, h.starts, 500*time.Millisecond, "a trigger while the run goes on")
	h.release <- struct{}{}
	if s := waitStart(t, h.starts, "run of the trigger"); !s.info.Triggered {
		t.Errorf("ran %+v, want the triggered run", s.info)
	}
	h.release <- struct{}{}
	if m := h.most.Load(); m != 1 {
		t.Errorf("%d runs of a BufferOne job went on at once, want 1", m)
	}
}

// TestBufferAllKeepsAtMostItsBound: under BufferAll, maxBuffered ticks wait
// behind a long run, and the next one is dropped as ReasonBufferFull.
func TestBufferAllKeepsAtMostItsBound(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	h := newHeldJob()
	notRun := make(chan TickNotRun, 16)
	pc := newPolicyCluster(t, "bufbound", start, LeaderMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("slow", h.job(), WithOverlap(BufferAll)))
	}, notRunOf("slow", notRun))
	pc.next(tick)
	waitStart(t, h.starts, "run of the first tick")
	var waiting []time.Time
	for i := 1; i <= maxBuffered; i++ {
		at := tick.Add(time.Duration(i) * time.Minute)
		pc.next(at)
		waiting = append(waiting, at)
		// Each tick is buffered before the next comes, so that their
		// claims keep their order.
		pc.waitBuffered("slow", waiting...)
	}
	over := tick.Add(time.Duration(maxBuffered+1) * time.Minute)
	pc.next(over)
	select {
	case e := <-notRun:
		if !e.Tick.Equal(over) || e.Reason != ReasonBufferFull {
			t.Errorf("reported the tick %v not run for %v, want %v for %v", e.Tick, e.Reason, over, ReasonBufferFull)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the tick %v, which came while %d waited, was not reported as dropped within 15s", over, maxBuffered)
	}
	pc.waitBuffered("slow", waiting...)
}

// TestBufferedTickIsNotCountedAsRunnerLost: a successor's check of a tick
// its predecessor claimed leaves alone a tick that waits in its job's
// buffer (its run is still to come), and reports one that neither waits,
// nor runs, nor ran.
func TestBufferedTickIsNotCountedAsRunnerLost(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	lost := make(chan TickNotRun, 16)
	c := New(WithEtcd(cli), WithName("buflost"), WithLogger(testLogger{t, "a"}), notRunOf("slow", lost))
	t.Cleanup(func() { <-c.Stop().Done() })
	co := c.coord
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	read := func(tick time.Time) {
		t.Helper()
		if left, err := co.lost.read(context.Background(), []lostTick{{job: "slow", tick: tick}}); err != nil || len(left) > 0 {
			t.Fatalf("check of %v: %v, left %v", tick, err, left)
		}
	}
	next := func() TickNotRun {
		t.Helper()
		select {
		case e := <-lost:
			return e
		case <-time.After(15 * time.Second):
			t.Fatal("no tick reported within 15s")
		}
		return TickNotRun{}
	}
	buffered := at.Add(time.Minute)
	if _, err := cli.Put(context.Background(), co.keys.BufferEntry("slow", buffered.UnixNano()), "x"); err != nil {
		t.Fatal(err)
	}
	// The predecessor claimed the three ticks, and gave none back.
	if _, err := cli.Put(context.Background(), co.keys.Last("slow"), claimcond.Value(at.Add(2*time.Minute).UnixNano(), "a")); err != nil {
		t.Fatal(err)
	}
	read(at)
	read(buffered)
	read(at.Add(2 * time.Minute))
	// The observer gets the reports in order: a report of the buffered
	// tick would come second.
	for _, want := range []time.Time{at, at.Add(2 * time.Minute)} {
		if e := next(); !e.Tick.Equal(want) || e.Reason != ReasonRunnerLost {
			t.Errorf("reported %v for %v, want %v for %v", e.Reason, e.Tick, ReasonRunnerLost, want)
		}
	}
}

// TestBufferedTickRunsAcrossAnEtcdRestart: etcd dies while a run goes on
// and a tick waits in the buffer, and the run ends before etcd comes back;
// the waiting tick runs, once, when it is back.
func TestBufferedTickRunsAcrossAnEtcdRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("restarts etcd; the full tier runs it")
	}
	srv := etcdtest.Start(t)
	h := newHeldJob()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	fake := clock.NewFake(start)
	pc := &policyCluster{t: t, cli: srv.Client(t), name: "bufrestart"}
	c := New(WithEtcd(srv.Client(t)), WithName("bufrestart"), withClock(fake), WithLocation(time.UTC), WithLogger(testLogger{t, "a"}),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	mustAdd(t, c, "* * * * *", Named("slow", h.job(), WithOverlap(BufferOne)))
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	pc.ids, pc.fakes, pc.crons = []string{"a"}, []*clock.Fake{fake}, []*Cron{c}
	pc.next(tick)
	waitStart(t, h.starts, "run of the first tick")
	second := tick.Add(time.Minute)
	pc.next(second)
	pc.waitBuffered("slow", second)

	// etcd dies, the run ends meanwhile, and etcd comes back with its data.
	srv.Kill()
	h.release <- struct{}{}
	noStart(t, h.starts, 300*time.Millisecond, "while etcd is down")
	srv.Restart(t)
	s := waitStart(t, h.starts, "run of the buffered tick after etcd's restart")
	if !s.info.Tick.Equal(second) {
		t.Errorf("ran %v, want the buffered tick %v", s.info.Tick, second)
	}
	h.release <- struct{}{}
	pc.waitBuffered("slow")
	if m := h.most.Load(); m != 1 {
		t.Errorf("%d runs of a BufferOne job went on at once, want 1", m)
	}
}
