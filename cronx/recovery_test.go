package cronx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
)

// TestWithRecoveryTakesACountOfZeroOrMore: a negative count is an error
// naming the job and the value.
func TestWithRecoveryTakesACountOfZeroOrMore(t *testing.T) {
	c := New()
	_, err := c.AddJob("@every 1m", Named("report", FuncJob(func() {}), WithRecovery(-1)))
	if err == nil || err.Error() != `cronx: job "report": WithRecovery(-1): want 0 or more runs again` {
		t.Errorf("WithRecovery(-1): %v", err)
	}
	if _, err := c.AddJob("@every 1m", Named("ok", FuncJob(func() {}), WithRecovery(0))); err != nil {
		t.Errorf("WithRecovery(0): %v", err)
	}
}

// TestRecoveredValueKeepsTheLatestTicks: the recovered key counts each tick
// and forgets the oldest beyond its bound.
func TestRecoveredValueKeepsTheLatestTicks(t *testing.T) {
	v := jobkeys.Recovered{}
	for seq := int64(1); seq <= jobkeys.MaxRecoveredTicks+2; seq++ {
		enc, n := v.With(seq)
		if n != 1 {
			t.Fatalf("tick %d recovered %d times, want 1", seq, n)
		}
		v = jobkeys.ParseRecovered([]byte(enc))
	}
	if len(v) != jobkeys.MaxRecoveredTicks || v["1"] != 0 || v["2"] != 0 || v[fmt.Sprint(jobkeys.MaxRecoveredTicks+2)] != 1 {
		t.Errorf("recovered: %v, want the latest %d ticks", v, jobkeys.MaxRecoveredTicks)
	}
	if _, n := v.With(jobkeys.MaxRecoveredTicks + 2); n != 2 {
		t.Errorf("a tick recovered again: %d, want 2", n)
	}
}

// killMidRun starts a leader process of spec whose held jobs start the tick
// and hold, and whose others run it and are recorded, then kills it with
// SIGKILL. It returns the child, once dead.
func killMidRun(t *testing.T, srv *etcdtest.Space, spec childSpec, tick time.Time, before func()) *child {
	t.Helper()
	a := leadingChild(t, srv, spec, tick)
	if before != nil {
		before()
	}
	a.waitDue(tick)
	a.set(tick)
	a.await(30*time.Second, "the tick's runs", func() bool {
		return len(a.started) == spec.jobs && a.ended[childJobName(spec.jobs-1)] == 1
	})
	waitRecorded(t, srv, spec.scheduler, childJobName(spec.jobs-1), tick)
	a.kill()
	<-a.exited
	return a
}

// waitRecorded waits until job's history holds tick.
func waitRecorded(t *testing.T, srv *etcdtest.Space, scheduler, job string, tick time.Time) {
	t.Helper()
	keys := jobkeys.New(election.DefaultPrefix, scheduler)
	eventually(t, 15*time.Second, func() (bool, string) {
		resp, err := srv.Client(t).Get(context.Background(), keys.History(job))
		if err != nil {
			return false, err.Error()
		}
		hist, _ := decodeHistory(resp.Kvs)
		return ranTick(hist, tick), fmt.Sprintf("%s's history: %v", job, hist)
	})
}

// TestRunKilledMidRunRunsAgainOnceWithRecovery: a leader process is killed
// with SIGKILL while its run of a tick goes on. With WithRecovery, the
// successor runs the tick again, once, with a later fence and
// Info.Recovered 1, recorded as recovered, however long the run had gone
// on: the successor takes over 40 s after a minute's tick (its catch-up
// finds it), or 10 minutes after an hour's (past the misfire grace, its
// term's look at the jobs that recover finds it); a job whose run ended
// and was recorded before the kill does not run again. Without it, the
// tick is counted not run (runner_lost), as before.
func TestRunKilledMidRunRunsAgainOnceWithRecovery(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills a replica process and waits for its lease to lapse; the full tier runs it")
	}
	for _, tc := range []struct {
		recover int
		every   time.Duration // between the job's ticks
		late    time.Duration // the successor's clock past the tick
	}{{1, time.Minute, 40 * time.Second}, {1, time.Hour, 10 * time.Minute}, {0, time.Minute, time.Second}} {
		recover := tc.recover
		t.Run(fmt.Sprintf("recover=%d,every=%s", recover, tc.every), func(t *testing.T) {
			t.Parallel()
			srv := etcdtest.Shared(t)
			sched := "0 * * * * *"
			if tc.every == time.Hour {
				sched = "0 0 * * * *"
			}
			spec := childSpec{scheduler: fmt.Sprintf("recover-%d-%d", recover, int(tc.every.Minutes())), jobs: 2, spec: sched,
				ttl: 3 * time.Second, hold: time.Hour, held: 1, recover: recover}
			long, short := childJobName(0), childJobName(1)
			tick := time.Now().UTC().Truncate(tc.every).Add(tc.every)
			l := newEventLog()
			var ran tickLedger
			var b *Cron
			a := killMidRun(t, srv, spec, tick, func() {
				b, _ = successor(t, srv, spec, tick.Add(tc.late), l, &ran, WithRecovery(recover))
			})
			lost := a.runs()[long][0]
			if recover == 0 {
				e := waitNotRun(t, l, long, ReasonRunnerLost, 30*time.Second)
				if !e.Tick.Equal(tick) {
					t.Errorf("tick not run: %v, want %v", e.Tick, tick)
				}
			} else {
				started := waitFor(t, l, 30*time.Second, "start of the tick run again", func(e RunStarted) bool { return e.Job == long })
				if !started.Tick.Equal(tick) || started.Recovered != 1 || started.Fence.Revision <= lost.fence {
					t.Errorf("run again: tick %v recovered %d fence %d, want %v, 1 and a fence after the lost run's %d",
						started.Tick, started.Recovered, started.Fence.Revision, tick, lost.fence)
				}
				ended := waitFor(t, l, 30*time.Second, "end of the tick run again", func(e RunEnded) bool { return e.Job == long })
				if ended.Recovered != 1 {
					t.Errorf("RunEnded.Recovered = %d, want 1", ended.Recovered)
				}
				eventually(t, 15*time.Second, func() (bool, string) {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					st, err := b.Status(ctx)
					if err != nil {
						return false, err.Error()
					}
					j, _ := jobStatus(st, long)
					for _, h := range j.History {
						if h.Tick.Equal(tick) && h.Instance == "b" {
							return h.Recovered == 1, fmt.Sprintf("recorded with Recovered %d, want 1", h.Recovered)
						}
					}
					return false, fmt.Sprintf("%s's history: %v", long, j.History)
				})
			}
			idleWithin(t, b, 20*time.Second, "b")
			ran.mu.Lock()
			defer ran.mu.Unlock()
			want := 0
			if recover > 0 {
				want = 1
			}
			if got := len(ran.ran[long]); got != want {
				t.Errorf("%s ran %v on the successor, want %d runs", long, ran.ran[long], want)
			}
			if got := ran.ran[short]; len(got) != 0 {
				t.Errorf("%s, recorded before the kill, ran again: %v", short, got)
			}
			for _, job := range []string{short, long} {
				if got := l.notRun(job, ReasonRunnerLost); recover > 0 && len(got) != 0 {
					t.Errorf("%s reported not run: %v", job, got)
				}
			}
		})
	}
}

// TestRecoveryRunsATickAgainAtMostNTimes: under WithRecovery(1), a run
// again that is killed in turn is not run a third time: the next leader
// counts the tick not run (runner_lost), its recoveries spent.
func TestRecoveryRunsATickAgainAtMostNTimes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills two replica processes and waits for their leases to lapse; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	spec := childSpec{scheduler: "recover-bound", jobs: 2, spec: "*/10 * * * * *",
		ttl: 3 * time.Second, hold: time.Hour, held: 1, recover: 1}
	long := childJobName(0)
	tick := time.Now().UTC().Truncate(10 * time.Second).Add(10 * time.Second)
	var second *child
	killMidRun(t, srv, spec, tick, func() {
		second = startChild(t, srv, spec, tick.Add(time.Second))
		waitCandidates(t, srv.Client(t), spec.scheduler, 2)
	})
	l := newEventLog()
	var ran tickLedger
	successor(t, srv, spec, tick.Add(time.Second), l, &ran, WithRecovery(1))
	second.await(30*time.Second, "the run again", func() bool { return len(second.started[long]) == 1 })
	if r := second.runs()[long][0]; r.recovered != 1 || !r.tick.Equal(tick) {
		t.Fatalf("the run again: %+v, want tick %v recovered 1", r, tick)
	}
	second.kill()
	<-second.exited
	e := waitNotRun(t, l, long, ReasonRunnerLost, 30*time.Second)
	if !e.Tick.Equal(tick) || !errors.Is(e.Err, errRecoveredEnough) {
		t.Errorf("tick not run: %v (%v), want %v, its recoveries spent", e.Tick, e.Err, tick)
	}
	ran.mu.Lock()
	defer ran.mu.Unlock()
	if got := ran.ran[long]; len(got) != 0 {
		t.Errorf("%s ran a third time: %v", long, got)
	}
}

// TestRecoveryLeavesARunShutdownEnded: a run that Shutdown ended is recorded
// as it ends, and is not run again, though its job recovers lost runs.
func TestRecoveryLeavesARunShutdownEnded(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a replica process; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	spec := childSpec{scheduler: "recover-shutdown", jobs: 1, spec: "*/10 * * * * *",
		ttl: 3 * time.Second, hold: time.Hour, held: 1, recover: 1}
	long := childJobName(0)
	tick := time.Now().UTC().Truncate(10 * time.Second).Add(10 * time.Second)
	a := leadingChild(t, srv, spec, tick)
	l := newEventLog()
	var ran tickLedger
	b, _ := successor(t, srv, spec, tick.Add(time.Second), l, &ran, WithRecovery(1))
	a.waitDue(tick)
	a.set(tick)
	a.await(30*time.Second, "the tick's run", func() bool { return len(a.started[long]) == 1 })
	a.shutdown()
	a.await(30*time.Second, "the end of Shutdown", func() bool { return a.stopped })
	a.kill()
	<-a.exited
	waitRecorded(t, srv, spec.scheduler, long, tick)
	eventually(t, 20*time.Second, func() (bool, string) { return b.coord.scheduling(), "b does not lead" })
	idleWithin(t, b, 20*time.Second, "b")
	ran.mu.Lock()
	defer ran.mu.Unlock()
	if got := ran.ran[long]; len(got) != 0 {
		t.Errorf("a run Shutdown ended ran again: %v", got)
	}
	if got := l.notRun(long, ReasonRunnerLost); len(got) != 0 {
		t.Errorf("a run Shutdown ended reported not run: %v", got)
	}
}

// TestRecoveryLeavesATickOlderThanTheLatest: a new term runs again the
// latest tick of a job that recovers, claimed by a lost term with no record
// and no marker left, though its misfire grace has passed (an hourly job's,
// ten minutes on); but not a tick whose next one has come since: its run
// ended long ago (a record etcd did not take), not mid-run now. A job
// with no catch-up shows it whatever the order of the term's claims: a
// minutely job's catch-up claim, made first, would leave nothing to run
// again.
func TestRecoveryLeavesATickOlderThanTheLatest(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	keys := jobkeys.New(election.DefaultPrefix, "recover-old")
	for job, tick := range map[string]time.Time{"minutely": t0.Add(-3 * time.Minute), "uncaught": t0.Add(-3 * time.Minute), "hourly": t0} {
		if _, err := election.ClaimSeq(ctx, cli, keys.Last(job), tick.UnixNano(), election.ClaimedBy("gone")); err != nil {
			t.Fatal(err)
		}
	}
	l := newEventLog()
	var ran tickLedger
	now := t0.Add(10 * time.Minute)
	b := New(append(observed(l), WithSeconds(), withClock(clock.NewFake(now)), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(srv.Client(t)), WithName("recover-old"),
		WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))...)
	mustAdd(t, b, "0 * * * * *", Named("minutely", ran.job("minutely"), WithRecovery(3)))
	mustAdd(t, b, "0 * * * * *", Named("uncaught", ran.job("uncaught"), WithRecovery(3), WithCatchUp(0)))
	mustAdd(t, b, "0 0 * * * *", Named("hourly", ran.job("hourly"), WithRecovery(3)))
	b.Start()
	t.Cleanup(func() { shutdown(t, b, "b") })
	// One read of the term looks at both jobs: once the hourly tick runs
	// again, the minutely one was passed over.
	again := waitFor(t, l, 20*time.Second, "the hourly tick run again", func(e RunStarted) bool { return e.Job == "hourly" })
	if !again.Tick.Equal(t0) || again.Recovered != 1 {
		t.Errorf("hourly ran %v recovered %d, want %v recovered 1", again.Tick, again.Recovered, t0)
	}
	// Ten minutes after its tick, as late as its lost run lasted: no
	// lateness sample.
	if again.Lateness != 0 {
		t.Errorf("the run again has Lateness %v, want 0", again.Lateness)
	}
	idleWithin(t, b, 10*time.Second, "b")
	ran.mu.Lock()
	defer ran.mu.Unlock()
	if got := ran.ran["minutely"]; len(got) != 1 || !got[0].Equal(now) {
		t.Errorf("minutely ran %v, want its catch-up %v alone", got, now)
	}
	if got := ran.ran["uncaught"]; len(got) != 0 {
		t.Errorf("a minutely job with no catch-up ran %v, want no run", got)
	}
	// Nor is it looked at once the catch-up claimed a later tick: the
	// term's look passed it over (the lost checker reports in order, so
	// it would have come before the hourly run again).
	for _, job := range []string{"minutely", "uncaught"} {
		for _, reason := range []Reason{ReasonRunnerLost, ReasonOvertaken} {
			if got := l.notRun(job, reason); len(got) != 0 {
				t.Errorf("an old tick of %s reported %v: %v", job, reason, got)
			}
		}
	}
}

// TestRecoveryOfACutOffRunnerNeverOverlaps: a leader cut off from etcd
// mid-run ends its run at its session's safe deadline, and cannot record
// it; once its lease has lapsed the successor runs the tick again
// (WithRecovery), and only after the cut-off run's context had ended.
func TestRecoveryOfACutOffRunnerNeverOverlaps(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for a cut-off leader's lease to lapse; the full tier runs it")
	}
	cutOffRunRunsAgain(t, "recover-cut", "*/10 * * * * *", t0.Add(10*time.Second), time.Second)
}

// TestRecoveryOfARunCutOffLongBeforeTheTakeover: the same, for a minutely
// job whose successor takes over 30s after the tick, within the misfire
// grace but later than a lost claim is looked for without WithRecovery:
// its catch-up finds the tick claimed, and runs it again.
func TestRecoveryOfARunCutOffLongBeforeTheTakeover(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for a cut-off leader's lease to lapse; the full tier runs it")
	}
	cutOffRunRunsAgain(t, "recover-cut-late", "0 * * * * *", t0.Add(time.Minute), 30*time.Second)
}

// cutOffRunRunsAgain cuts the leader off from etcd in the run of tick of a
// job of spec, with its successor's clock ahead of the tick by ahead, and
// waits for the successor to run the tick again, after the cut-off run.
func cutOffRunRunsAgain(t *testing.T, name, spec string, tick time.Time, ahead time.Duration) {
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	var mu sync.Mutex
	var aEnded, bStarted time.Time
	aStarted := make(chan struct{})
	bRan := make(chan Info, 1)
	jobOf := func(id string) Job {
		return ContextFunc(func(ctx context.Context) error {
			info, _ := InfoFrom(ctx)
			if id == "a" {
				close(aStarted)
				<-ctx.Done()
				mu.Lock()
				aEnded = time.Now()
				mu.Unlock()
				return ctx.Err()
			}
			mu.Lock()
			bStarted = time.Now()
			mu.Unlock()
			bRan <- info
			return nil
		})
	}
	replica := func(id string, fake *clock.Fake, endpoint string, ttl time.Duration) *Cron {
		c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(srv.NewClient(t, endpoint)), WithName(name),
			WithElection(election.WithIdentity(id), election.WithTTL(ttl)))
		mustAdd(t, c, spec, Named("long", jobOf(id), WithRecovery(1)))
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	fakeA, fakeB := clock.NewFake(t0), clock.NewFake(t0)
	a := replica("a", fakeA, proxy.Endpoint(), 3*time.Second)
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	waitPublished(t, srv.Client(t), name, "long")
	replica("b", fakeB, srv.Endpoint(), stallTTL)
	waitCandidates(t, srv.Client(t), name, 2)
	if !fakeA.WaitDueBy(tick, wait) {
		t.Fatal("a armed no timer for the tick")
	}
	fakeA.Set(tick)
	fakeB.Set(tick.Add(ahead))
	select {
	case <-aStarted:
	case <-time.After(15 * time.Second):
		t.Fatal("a's run did not start")
	}
	proxy.Blackhole()
	var info Info
	select {
	case info = <-bRan:
	case <-time.After(40 * time.Second):
		t.Fatal("the successor did not run the tick again")
	}
	mu.Lock()
	defer mu.Unlock()
	if !info.Tick.Equal(tick) || info.Recovered != 1 {
		t.Errorf("b ran %v recovered %d, want %v recovered 1", info.Tick, info.Recovered, tick)
	}
	if aEnded.IsZero() || !aEnded.Before(bStarted) {
		t.Errorf("the cut-off run ended at %v, the run again started at %v: they overlap", aEnded, bStarted)
	}
}
