package cronx

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestBoundedScheduleStartsAndEnds: a job's ticks run from its start, the
// tick at the start included, and stop before its end; past the end there
// is no next tick.
func TestBoundedScheduleStartsAndEnds(t *testing.T) {
	t.Parallel()
	s, err := secondParser.Parse("0 0 * * * *") // hourly
	if err != nil {
		t.Fatal(err)
	}
	start, end := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 13, 0, 0, 0, time.UTC)
	b := withBounds(s, boundsPolicy{start: start, end: end})
	var got []time.Time
	for t := b.Next(start.Add(-48 * time.Hour)); !t.IsZero() && len(got) < 10; t = b.Next(t) {
		got = append(got, t)
	}
	want := []time.Time{start, start.Add(time.Hour), start.Add(2 * time.Hour)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ticks %v, want %v", got, want)
	}
	if n := b.Next(end.Add(time.Minute)); !n.IsZero() {
		t.Errorf("past the end: next %v", n)
	}
	if withBounds(s, boundsPolicy{}) != s {
		t.Error("a job with no bounds gets a schedule of its own")
	}
}

// TestMaxRunsAreCountedAcrossAFailover: a job WithMaxRuns(3) runs twice
// on the leader (in claim mode, on either replica), which stops; the other
// replica runs it once more and then never: three runs in the cluster, the
// ticks after them neither run nor counted as not run, and Status shows
// the job done.
func TestMaxRunsAreCountedAcrossAFailover(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(map[Mode]string{LeaderMode: "leader", ClaimMode: "claim"}[mode], func(t *testing.T) {
			t.Parallel()
			maxRunsAcrossAFailover(t, mode)
		})
	}
}

func maxRunsAcrossAFailover(t *testing.T, mode Mode) {
	srv := etcdtest.Shared(t)
	var l catchUpLedger
	events := newEventLog()
	ended := make(chan JobEnded, 8)
	replica := func(id string, fake *clock.Fake) *Cron {
		c := New(append(observed(events), WithObserver(Observer{OnJobEnded: func(e JobEnded) { ended <- e }}), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(srv.Client(t)), WithName("max-runs"), WithMode(mode),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))...)
		mustAdd(t, c, "*/10 * * * * *", Named("thrice", l.job("thrice"), WithMaxRuns(3)))
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	fakeA, fakeB := clock.NewFake(t0), clock.NewFake(t0)
	a := replica("a", fakeA)
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	b := replica("b", fakeB)
	if mode == LeaderMode {
		waitCandidates(t, srv.Client(t), "max-runs", 2)
	} else {
		eventually(t, wait, func() (bool, string) { return b.coord.scheduling(), "b does not schedule" })
	}
	step := func(fake *clock.Fake, c *Cron, tick time.Time, who string) {
		t.Helper()
		if !fake.WaitDueBy(tick, wait) {
			t.Fatalf("%s armed no timer for %v", who, tick)
		}
		fakeA.Set(tick)
		fakeB.Set(tick)
		idleWithin(t, c, 15*time.Second, who+"'s tick")
	}
	ticks := []time.Time{t0.Add(10 * time.Second), t0.Add(20 * time.Second), t0.Add(30 * time.Second)}
	step(fakeA, a, ticks[0], "a")
	l.wait(t, "thrice", ticks[0])
	idleWithin(t, b, 15*time.Second, "b's tick")
	step(fakeA, a, ticks[1], "a")
	l.wait(t, "thrice", ticks[0], ticks[1])
	idleWithin(t, b, 15*time.Second, "b's tick")
	<-a.Stop().Done()
	eventually(t, 15*time.Second, func() (bool, string) { return b.coord.scheduling(), "b did not lead after a stopped" })
	step(fakeB, b, ticks[2], "b")
	l.wait(t, "thrice", ticks...)
	// The ticks after it are refused by the count: the next one b has
	// computed already, and at most one more whose Next was computed as the
	// refusal came; then b's schedule of the job ends.
	next := func() time.Time {
		for _, e := range b.Entries() {
			return e.Next
		}
		return time.Time{}
	}
	for refused := 0; !next().IsZero(); refused++ {
		if refused == 3 {
			t.Fatalf("b still schedules thrice after %d ticks past its limit: next %v", refused, next())
		}
		tick := next()
		step(fakeB, b, tick, "b")
		eventually(t, 15*time.Second, func() (bool, string) {
			return !next().Equal(tick), fmt.Sprintf("b's tick %v did not fire", tick)
		})
		idleWithin(t, b, 15*time.Second, "b's refused tick")
	}
	l.wait(t, "thrice", ticks...)
	events.mu.Lock()
	for _, ev := range events.all {
		// The ticks past the limit are no ticks missed. (In claim mode a
		// replica's start may catch up the tick at its clock's start, which a
		// later tick overtakes, and a tick may have run on another replica.)
		if e, ok := ev.(TickNotRun); ok && e.Tick.After(ticks[2]) && e.Reason != ReasonClaimedElsewhere {
			t.Errorf("a tick reported not run: %+v", e)
		}
	}
	events.mu.Unlock()
	select {
	case e := <-ended:
		if e.Job != "thrice" || e.MaxRuns != 3 || len(ended) > 0 {
			t.Errorf("ended: %+v and %d more, want thrice at 3 runs once", e, len(ended))
		}
	case <-time.After(15 * time.Second):
		t.Error("no JobEnded within 15s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) != 1 || st.Jobs[0].Runs != 3 || st.Jobs[0].MaxRuns != 3 || !st.Jobs[0].Ended(time.Now()) {
		t.Errorf("status: %+v, want thrice done at 3 of 3 runs", st.Jobs)
	}
}

// TestMaxRunsCountABufferedTick: a BufferOne job of at most two runs whose
// second tick waits behind its first run has had its two runs once that
// tick has run: the next tick is refused at the limit (JobEnded), not run.
func TestMaxRunsCountABufferedTick(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	h := newHeldJob()
	ended := make(chan JobEnded, 8)
	pc := newPolicyCluster(t, "maxbuf", start, LeaderMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("slow", h.job(), WithOverlap(BufferOne), WithMaxRuns(2)))
	}, WithObserver(Observer{OnJobEnded: func(e JobEnded) { ended <- e }}))
	pc.next(tick)
	waitStart(t, h.starts, "run of the first tick")
	second := tick.Add(time.Minute)
	pc.next(second)
	pc.waitBuffered("slow", second)
	h.release <- struct{}{}
	if s := waitStart(t, h.starts, "run of the buffered tick"); !s.info.Tick.Equal(second) {
		t.Fatalf("ran %v, want the buffered tick %v", s.info.Tick, second)
	}
	h.release <- struct{}{}
	pc.history("slow", 2)

	pc.next(second.Add(time.Minute))
	select {
	case e := <-ended:
		if e.Job != "slow" || e.MaxRuns != 2 {
			t.Errorf("told %+v ended, want slow at 2 runs", e)
		}
	case s := <-h.starts:
		t.Fatalf("ran %v, a third run of a job of at most two", s.info.Tick)
	case <-time.After(15 * time.Second):
		t.Fatal("the tick after two runs was neither refused nor run within 15s")
	}
	noStart(t, h.starts, 300*time.Millisecond, "past the job's maximum of runs")
}
