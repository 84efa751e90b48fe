package cronx

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
)

// countingSchedule counts the calls of its schedule's Next.
type countingSchedule struct {
	Schedule
	calls int
}

func (s *countingSchedule) Next(t time.Time) time.Time {
	s.calls++
	return s.Schedule.Next(t)
}

// TestLatestTickSearchesNotWalks: the latest tick in a window is the one a
// walk over every tick finds, and a year of an every-second job costs a
// few dozen calls of Next, not thirty million.
func TestLatestTickSearchesNotWalks(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 9, 30, 17, 400_000_000, time.UTC)
	walk := func(s Schedule, window time.Duration) time.Time {
		var last time.Time
		for t := s.Next(now.Add(-window)); !t.IsZero() && !t.After(now); t = s.Next(t) {
			last = t
		}
		return last
	}
	for _, tc := range []struct {
		spec   string
		window time.Duration
	}{
		{"* * * * * *", time.Minute},
		{"*/5 * * * * *", 3 * time.Second},
		{"*/5 * * * * *", 2 * time.Second}, // none in the window
		{"0 0 2 * * *", 2 * time.Hour},     // none in the window
		{"0 0 2 * * *", 8 * time.Hour},
		{"0 0 2 * * *", 40 * 24 * time.Hour},
		{"0 30 9 * * *", time.Minute},
		{"17 30 9 * * *", time.Second}, // the tick at now's second
		{"@every 7s", 20 * time.Second},
		{"0 0 0 29 2 *", 5 * 365 * 24 * time.Hour},
	} {
		s, err := secondParser.Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := latestTick(s, now, tc.window), walk(s, tc.window); !got.Equal(want) {
			t.Errorf("%q within %v: latest tick %v, want %v", tc.spec, tc.window, got, want)
		}
	}
	s, _ := secondParser.Parse("* * * * * *")
	cs := &countingSchedule{Schedule: s}
	if got, want := latestTick(cs, now, 365*24*time.Hour), now.Truncate(time.Second); !got.Equal(want) {
		t.Errorf("every second within a year: latest tick %v, want %v", got, want)
	}
	if cs.calls > 2*walkTicks {
		t.Errorf("every second within a year: %d calls of Next, want at most %d", cs.calls, 2*walkTicks)
	}
}

// secondParser parses specs with a seconds field, as WithSeconds does.
var secondParser = NewParser(Second | Minute | Hour | Dom | Month | Dow | Descriptor)

// catchUpLedger records the ticks each job ran, on which replica.
type catchUpLedger struct {
	mu  sync.Mutex
	ran map[string][]Info
}

func (l *catchUpLedger) job(name string) Job {
	return ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.ran == nil {
			l.ran = map[string][]Info{}
		}
		l.ran[name] = append(l.ran[name], info)
		return nil
	})
}

// ticks returns the ticks job ran.
func (l *catchUpLedger) ticks(job string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Time
	for _, info := range l.ran[job] {
		out = append(out, info.Tick)
	}
	return out
}

// wait waits until job has run want, and fails t if it ran anything else.
func (l *catchUpLedger) wait(t *testing.T, job string, want ...time.Time) {
	t.Helper()
	eventually(t, 15*time.Second, func() (bool, string) {
		got := l.ticks(job)
		return len(got) >= len(want), fmt.Sprintf("%s ran %v, want %v", job, got, want)
	})
	if got := l.ticks(job); !slices.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("%s ran %v, want %v", job, got, want)
	}
}

// catchUpJobs are the jobs of the catch-up tests, on a nightly schedule:
// one catches up within two hours, one within an hour, one under the
// Cron's misfire (RunOnce within a minute).
func catchUpJobs(t *testing.T, c *Cron, l *catchUpLedger) {
	mustAdd(t, c, "0 0 2 * * *", Named("two-hours", l.job("two-hours"), WithCatchUp(2*time.Hour)))
	mustAdd(t, c, "0 0 2 * * *", Named("one-hour", l.job("one-hour"), WithCatchUp(time.Hour)))
	mustAdd(t, c, "0 0 2 * * *", Named("misfire", l.job("misfire")))
}

// checkCaughtUp checks, on the replica that took over at a day's 03:30,
// that the day's 02:00 ran once, on it, for the job within two hours, and
// not for the others, which it reports not run.
func checkCaughtUp(t *testing.T, l *catchUpLedger, events *eventLog, c *Cron, first, missed time.Time, who string) {
	t.Helper()
	l.wait(t, "two-hours", first, missed)
	for _, job := range []string{"one-hour", "misfire"} {
		eventually(t, 15*time.Second, func() (bool, string) {
			return len(events.notRun(job, ReasonNoLeader)) > 0, job + "'s missed tick not reported"
		})
		if got := events.notRun(job, ReasonNoLeader); len(got) != 1 || !got[0].Tick.Equal(missed) || got[0].Instance != who {
			t.Errorf("%s: ticks reported not run for no_leader: %v, want %v once, on %s", job, got, missed, who)
		}
	}
	idleWithin(t, c, 15*time.Second, who+"'s takeover")
	l.wait(t, "one-hour", first)
	l.wait(t, "misfire", first)
	l.mu.Lock()
	if got := l.ran["two-hours"][1]; got.Instance != who {
		t.Errorf("the missed tick ran on %s, want %s", got.Instance, who)
	}
	for _, info := range l.ran["two-hours"] {
		if info.CaughtUp != info.Tick.Equal(missed) {
			t.Errorf("the job's run of %v has Info.CaughtUp %v", info.Tick, info.CaughtUp)
		}
	}
	l.mu.Unlock()
	// Observers, and the history that baton status shows, tell the missed
	// tick's run from the others.
	events.mu.Lock()
	for _, ev := range events.all {
		if e, ok := ev.(RunStarted); ok && e.Job == "two-hours" && e.CaughtUp != e.Tick.Equal(missed) {
			t.Errorf("the run of %v started with CaughtUp %v", e.Tick, e.CaughtUp)
		}
	}
	events.mu.Unlock()
	eventually(t, 15*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := c.Status(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, j := range st.Jobs {
			if j.Name != "two-hours" {
				continue
			}
			var got []bool
			for _, r := range j.History {
				got = append(got, r.CaughtUp)
			}
			return slices.Equal(got, []bool{false, true}), fmt.Sprintf("two-hours' history, caught up: %v, want [false true]", got)
		}
		return false, "no status of two-hours"
	})
}

// TestCatchUpWindowAfterEveryReplicaStopped: a nightly tick falls while
// every replica is down; the replica started an hour and a half later runs
// it once for the job whose window is two hours, and not for the job whose
// window is one hour nor for the one under the Cron's misfire grace; the
// next night runs on time for all three.
func TestCatchUpWindowAfterEveryReplicaStopped(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	var l catchUpLedger
	events := newEventLog()
	replica := func(id string, fake *clock.Fake) *Cron {
		c := New(append(observed(events), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(srv.Client(t)), WithName("catch-up-all"),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))...)
		catchUpJobs(t, c, &l)
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	first := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	fakeA, fakeB := clock.NewFake(first.Add(-time.Second)), clock.NewFake(first.Add(-time.Second))
	a := replica("a", fakeA)
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	b := replica("b", fakeB)
	waitCandidates(t, srv.Client(t), "catch-up-all", 2)
	if !fakeA.WaitDueBy(first, wait) {
		t.Fatal("a armed no timer for the first night")
	}
	fakeA.Set(first)
	fakeB.Set(first)
	for _, job := range []string{"two-hours", "one-hour", "misfire"} {
		l.wait(t, job, first)
	}
	idleWithin(t, a, 15*time.Second, "a's first night")

	// Every replica stops; the next night's tick comes with none up.
	shutdown(t, b, "b")
	shutdown(t, a, "a")
	missed := first.AddDate(0, 0, 1)
	fakeC := clock.NewFake(missed.Add(90 * time.Minute))
	c := replica("c", fakeC)
	checkCaughtUp(t, &l, events, c, first, missed, "c")

	// The night after runs on time, for every job.
	next := missed.AddDate(0, 0, 1)
	if !fakeC.WaitDueBy(next, wait) {
		t.Fatal("c armed no timer for the next night")
	}
	fakeC.Set(next)
	l.wait(t, "two-hours", first, missed, next)
	l.wait(t, "one-hour", first, next)
	l.wait(t, "misfire", first, next)
}

// TestCatchUpAfterAYearResumesAtOnce: every replica is down for a year;
// the one that starts then catches up the latest tick of each job whose
// window covers the year, once, and goes on with the next tick: no walk
// over a year of ticks, no burst, no job left behind.
func TestCatchUpAfterAYearResumesAtOnce(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	var l catchUpLedger
	year := 366 * 24 * time.Hour
	replica := func(id string, fake *clock.Fake) *Cron {
		c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(srv.Client(t)), WithName("catch-up-year"),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		mustAdd(t, c, "* * * * * *", Named("every-second", l.job("every-second"), WithCatchUp(year+time.Hour)))
		mustAdd(t, c, "0 0 2 * * *", Named("nightly", l.job("nightly"), WithCatchUp(year+time.Hour)))
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	first := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	fakeA := clock.NewFake(first.Add(-time.Second))
	a := replica("a", fakeA)
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	if !fakeA.WaitDueBy(first, wait) {
		t.Fatal("a armed no timer for the first tick")
	}
	fakeA.Set(first)
	l.wait(t, "every-second", first)
	l.wait(t, "nightly", first)
	idleWithin(t, a, 15*time.Second, "a's first tick")
	shutdown(t, a, "a")

	back := first.Add(year).Add(8*time.Hour + 500*time.Millisecond) // 10:00:00.5 a year on
	fakeB := clock.NewFake(back)
	b := replica("b", fakeB)
	l.wait(t, "every-second", first, back.Truncate(time.Second))
	l.wait(t, "nightly", first, first.Add(year))
	idleWithin(t, b, 15*time.Second, "b's takeover")
	next := back.Truncate(time.Second).Add(time.Second)
	if !fakeB.WaitDueBy(next, wait) {
		t.Fatal("b armed no timer for the next second")
	}
	fakeB.Set(next)
	l.wait(t, "every-second", first, back.Truncate(time.Second), next)
	l.wait(t, "nightly", first, first.Add(year))
}

// TestCatchUpWindowAfterAnEtcdOutage: etcd is down over a nightly tick, for
// long enough that both replicas lose their terms; when it is back, the
// replica that leads runs the tick once for the job whose window covers the
// outage, and not for the others.
func TestCatchUpWindowAfterAnEtcdOutage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	srv := etcdtest.Start(t) // stopped and restarted
	var l catchUpLedger
	events := newEventLog()
	first := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	var crons []*Cron
	var fakes []*clock.Fake
	for _, id := range []string{"a", "b"} {
		fake := clock.NewFake(first.Add(-time.Second))
		c := New(append(observed(events), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(srv.Client(t)), WithName("catch-up-etcd"),
			WithElection(election.WithIdentity(id), election.WithTTL(3*time.Second)))...)
		catchUpJobs(t, c, &l)
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		crons, fakes = append(crons, c), append(fakes, fake)
		if id == "a" {
			eventually(t, wait, func() (bool, string) { return c.coord.scheduling(), "a does not lead" })
		}
	}
	waitCandidates(t, srv.Client(t), "catch-up-etcd", 2)
	if !fakes[0].WaitDueBy(first, wait) {
		t.Fatal("a armed no timer for the first night")
	}
	for _, f := range fakes {
		f.Set(first)
	}
	for _, job := range []string{"two-hours", "one-hour", "misfire"} {
		l.wait(t, job, first)
	}
	idleWithin(t, crons[0], 15*time.Second, "a's first night")

	srv.Stop()
	waitFor(t, events, 20*time.Second, "a's term lost with etcd", func(e leadershipLost) bool { return e.Instance == "a" })
	missed := first.AddDate(0, 0, 1)
	for _, f := range fakes {
		f.Set(missed.Add(90 * time.Minute))
	}
	srv.Restart(t)
	var leader *Cron
	var who string
	eventually(t, 30*time.Second, func() (bool, string) {
		for i, c := range crons {
			if c.coord.scheduling() {
				leader, who = c, []string{"a", "b"}[i]
				return true, ""
			}
		}
		return false, "no replica leads after etcd came back"
	})
	checkCaughtUp(t, &l, events, leader, first, missed, who)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := srv.Client(t).Get(ctx, jobkeys.New(election.DefaultPrefix, "catch-up-etcd").Last("one-hour"))
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("one-hour's last claim: %v, %v", resp, err)
	}
	if seq, _, err := jobkeys.ParseLast(string(resp.Kvs[0].Value)); err != nil || seq != first.UnixNano() {
		t.Errorf("one-hour's last claim is %d (%v), want the first night's %d", seq, err, first.UnixNano())
	}
}

// TestCatchUpWindowBoundsALiveTicksClaim: in claim mode, etcd stops
// answering as a nightly tick comes, and the clock runs on for half an
// hour while the replica retries its claims; once etcd answers, the job
// whose window is two hours runs its tick, and the job under the Cron's
// misfire grace gave its tick up at the grace's end.
func TestCatchUpWindowBoundsALiveTicksClaim(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for a claim to time out; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	var l catchUpLedger
	events := newEventLog()
	first := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	fake := clock.NewFake(first.Add(-time.Second))
	// A TTL that outlives the claims' timeout: the session stays.
	c := New(append(observed(events), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(srv.NewClient(t, proxy.Endpoint())), WithName("catch-up-claim"), WithMode(ClaimMode),
		WithElection(election.WithIdentity("a"), election.WithTTL(20*time.Second)))...)
	mustAdd(t, c, "0 0 2 * * *", Named("two-hours", l.job("two-hours"), WithCatchUp(2*time.Hour)))
	mustAdd(t, c, "0 0 2 * * *", Named("misfire", l.job("misfire")))
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	if !fake.WaitDueBy(first, wait) {
		t.Fatal("no timer for the first night")
	}
	fake.Set(first)
	l.wait(t, "two-hours", first)
	l.wait(t, "misfire", first)
	idleWithin(t, c, 15*time.Second, "the first night")

	second := first.AddDate(0, 0, 1)
	if !fake.WaitDueBy(second, wait) {
		t.Fatal("no timer for the second night")
	}
	proxy.Blackhole()
	fake.Set(second)
	eventually(t, 15*time.Second, func() (bool, string) {
		return len(runsIn(c)) == 2, fmt.Sprintf("runs in flight: %v, want the two ticks'", runsIn(c))
	})
	fake.Set(second.Add(30 * time.Minute))
	// The misfire job's claim, which etcd does not answer, is given up
	// once its try ends past the grace.
	eventually(t, 15*time.Second, func() (bool, string) {
		return len(runsIn(c)) == 1, fmt.Sprintf("runs in flight: %v, want the two-hours job's alone", runsIn(c))
	})
	// etcd comes back as after an outage: what the partition held is lost
	// with its connections.
	proxy.Cut()
	proxy.Pass()
	l.wait(t, "two-hours", first, second)
	idleWithin(t, c, 15*time.Second, "the second night")
	l.wait(t, "misfire", first)
}

// TestCatchUpOfATickFiredAsEtcdWentDown: etcd goes down just before a
// nightly tick, so the only replica fires it while it still leads and its
// claim gets no answer; its term ends with etcd. When etcd is back an hour
// and a half later the same replica leads again, and runs the tick once for
// the job whose window covers it, though it fired it before.
func TestCatchUpOfATickFiredAsEtcdWentDown(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	srv := etcdtest.Start(t) // stopped and restarted
	var l catchUpLedger
	events := newEventLog()
	first := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	fake := clock.NewFake(first.Add(-time.Second))
	c := New(append(observed(events), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(srv.Client(t)), WithName("catch-up-fired"),
		// A term that outlives etcd's stop, so that the tick fires in it.
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))...)
	mustAdd(t, c, "0 0 2 * * *", Named("two-hours", l.job("two-hours"), WithCatchUp(2*time.Hour)))
	mustAdd(t, c, "0 0 2 * * *", Named("misfire", l.job("misfire")))
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	eventually(t, wait, func() (bool, string) { return c.coord.scheduling(), "a does not lead" })
	if !fake.WaitDueBy(first, wait) {
		t.Fatal("no timer for the first night")
	}
	fake.Set(first)
	l.wait(t, "two-hours", first)
	l.wait(t, "misfire", first)
	idleWithin(t, c, 15*time.Second, "the first night")

	missed := first.AddDate(0, 0, 1)
	if !fake.WaitDueBy(missed, wait) {
		t.Fatal("no timer for the second night")
	}
	srv.Stop()
	fake.Set(missed)
	eventually(t, 15*time.Second, func() (bool, string) {
		return len(runsIn(c)) > 0 || len(l.ticks("two-hours")) > 1, "a fired nothing of the second night"
	})
	waitFor(t, events, 30*time.Second, "a's term lost with etcd", func(e leadershipLost) bool { return e.Instance == "a" })
	idleWithin(t, c, 15*time.Second, "the runs of the term lost")
	fake.Set(missed.Add(90 * time.Minute))
	srv.Restart(t)
	eventually(t, 30*time.Second, func() (bool, string) { return c.coord.scheduling(), "a does not lead after etcd came back" })
	l.wait(t, "two-hours", first, missed)
	idleWithin(t, c, 15*time.Second, "a's takeover")
	l.wait(t, "two-hours", first, missed)
	l.wait(t, "misfire", first)
}
