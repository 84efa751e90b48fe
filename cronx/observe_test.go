package cronx

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	"github.com/batonhq/baton/internal/notrun"
)

// eventLog is an Observer that keeps every event and hands each to the
// test as it comes.
type eventLog struct {
	mu  sync.Mutex
	all []any
	ch  chan any
}

func newEventLog() *eventLog { return &eventLog{ch: make(chan any, 4096)} }

func (l *eventLog) add(ev any) {
	l.mu.Lock()
	l.all = append(l.all, ev)
	l.mu.Unlock()
	select {
	case l.ch <- ev:
	default:
	}
}

func (l *eventLog) observer() Observer {
	return Observer{
		OnRunStarted:       func(e RunStarted) { l.add(e) },
		OnRunEnded:         func(e RunEnded) { l.add(e) },
		OnTickNotRun:       func(e TickNotRun) { l.add(e) },
		OnLeadershipGained: func(e Leadership) { l.add(leadershipGained(e)) },
		OnLeadershipLost:   func(e Leadership) { l.add(leadershipLost(e)) },
		OnSessionLost:      func(e Session) { l.add(sessionLost(e)) },
		OnSessionRegained:  func(e Session) { l.add(sessionRegained(e)) },
		OnEtcdEmpty:        func(e EtcdEmpty) { l.add(e) },
		OnJobAdded:         func(e JobAdded) { l.add(e) },
		OnEtcdRefused:      func(e EtcdRefusal) { l.add(etcdRefused(e)) },
		OnEtcdAccepted:     func(e EtcdRefusal) { l.add(etcdAccepted(e)) },
	}
}

// logOnFailure has t log every event l saw, if t fails: what the replicas
// said happened, to read beside the failure.
func (l *eventLog) logOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, ev := range l.all {
			t.Logf("event %T %+v", ev, ev)
		}
	})
}

// notRun returns the ticks of job reported not run for reason so far.
func (l *eventLog) notRun(job string, reason Reason) []TickNotRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []TickNotRun
	for _, ev := range l.all {
		if e, ok := ev.(TickNotRun); ok && e.Job == job && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// waitFor returns the first event of type T, from now on, that match
// accepts, or fails the test after d.
func waitFor[T any](t *testing.T, l *eventLog, d time.Duration, what string, match func(T) bool) T {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev := <-l.ch:
			if e, ok := ev.(T); ok && (match == nil || match(e)) {
				return e
			}
		case <-deadline:
			var zero T
			t.Fatalf("no %s within %v", what, d)
			return zero
		}
	}
}

// waitLost waits until l has seen a term lost and a session lost, in
// either order: when etcd is cut off, the runners' session can expire
// before the term's or after it, and the term is reported lost only once
// its claims ahead are withdrawn.
func waitLost(t *testing.T, l *eventLog, d time.Duration, who string) (leadershipLost, sessionLost) {
	t.Helper()
	deadline := time.After(d)
	var term *leadershipLost
	var sess *sessionLost
	for term == nil || sess == nil {
		select {
		case ev := <-l.ch:
			switch e := ev.(type) {
			case leadershipLost:
				term = &e
			case sessionLost:
				sess = &e
			}
		case <-deadline:
			t.Fatalf("within %v, %s lost its term: %v, its session: %v; want both", d, who, term != nil, sess != nil)
		}
	}
	return *term, *sess
}

// waitNotRun waits for a tick of job reported not run for reason.
func waitNotRun(t *testing.T, l *eventLog, job string, reason Reason, d time.Duration) TickNotRun {
	t.Helper()
	return waitFor(t, l, d, fmt.Sprintf("tick of %s not run for %s", job, reason), func(e TickNotRun) bool {
		return e.Job == job && e.Reason == reason
	})
}

// observed returns the options of a replica observed by l, whose ticks not
// run are written to etcd every 100 ms.
func observed(l *eventLog) []Option {
	return []Option{WithObserver(l.observer()), func(c *Cron) { c.flushEvery = 100 * time.Millisecond }}
}

// waitNotRunCount waits until Status counts at least n ticks of job not run
// for reason, and returns the counts.
func waitNotRunCount(t *testing.T, c *Cron, job string, reason Reason, n int) map[Reason]int {
	t.Helper()
	var got map[Reason]int
	eventually(t, 15*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := c.Status(ctx)
		if err != nil {
			return false, err.Error()
		}
		j, _ := jobStatus(st, job)
		got = j.NotRun
		return got[reason] >= n, fmt.Sprintf("Status counts %v of %s's ticks not run, want %s ≥ %d", got, job, reason, n)
	})
	return got
}

// TestPausedTicksAreReportedAndCountedOnce: three claim-mode replicas of a
// paused job each report its ticks as paused; etcd counts each tick once,
// and a tick that ran is never counted.
func TestPausedTicksAreReportedAndCountedOnce(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	l := newLedger()
	var logs []*eventLog
	var replicas []*replica
	for _, id := range []string{"a", "b", "c"} {
		ev := newEventLog()
		logs = append(logs, ev)
		replicas = append(replicas, startReplica(t, srv.Client(t), id, l, ClaimMode, observed(ev)...))
	}
	l.waitTicks(t, 1, 10*time.Second)
	ctx := context.Background()
	// A tick may run before the job's spec is published; pausing needs it.
	eventually(t, 10*time.Second, func() (bool, string) {
		err := replicas[0].cron.Pause(ctx, "tick")
		return err == nil, fmt.Sprint(err)
	})
	for _, ev := range logs {
		waitNotRun(t, ev, "tick", ReasonPaused, 10*time.Second)
		waitNotRun(t, ev, "tick", ReasonPaused, 10*time.Second)
	}
	for _, r := range replicas[1:] {
		r.stop(t)
	}
	paused := map[time.Time]bool{}
	for _, ev := range logs {
		for _, e := range ev.notRun("tick", ReasonPaused) {
			if n := l.count(e.Tick); n != 0 {
				t.Errorf("tick %v reported paused ran %d times", e.Tick, n)
			}
			paused[e.Tick] = true
		}
	}
	replicas[0].stop(t)
	// Stopped, the replicas have written what they reported; each tick
	// reported by several counts once. (Read from the job's key: with no
	// replica left, Status no longer lists the job.)
	cli := srv.Client(t)
	key := jobkeys.New(election.DefaultPrefix, "test").NotRun("tick")
	// A tick that a loaded machine's etcd held up past the next
	// (ReasonOvertaken) may be counted too, if a replica reported it.
	eventually(t, 15*time.Second, func() (bool, string) {
		reported := map[Reason]int{}
		for _, reason := range Reasons() {
			ticks := map[time.Time]bool{}
			for _, ev := range logs {
				for _, e := range ev.notRun("tick", reason) {
					ticks[e.Tick] = true
				}
			}
			reported[reason] = len(ticks)
		}
		resp, err := cli.Get(ctx, key)
		if err != nil {
			return false, err.Error()
		}
		var counts map[Reason]int
		if len(resp.Kvs) > 0 {
			counts, _ = notRunCounts(notrun.Parse(resp.Kvs[0].Value), time.Now())
		}
		ok := counts[ReasonPaused] == reported[ReasonPaused]
		for reason, n := range counts {
			ok = ok && n <= reported[reason]
		}
		return ok, fmt.Sprintf("the job's counts %v, want %d paused (the distinct ticks reported), and no other tick unreported", counts, reported[ReasonPaused])
	})
}

// TestOverlappingTicksAreReported: a Forbid job whose run outlasts its
// period has its next ticks reported as overlap, and counted.
func TestOverlappingTicksAreReported(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	l := newLedger()
	ev := newEventLog()
	release := make(chan struct{})
	defer close(release)
	r := startReplica(t, srv.Client(t), "a", l, LeaderMode, append(observed(ev), func(c *Cron) {
		mustAdd(t, c, "* * * * * *", Named("long", l.job("a", func(ctx context.Context) {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}), WithOverlap(Forbid)))
	})...)
	e := waitNotRun(t, ev, "long", ReasonOverlap, 10*time.Second)
	if n := l.countJob("long", e.Tick); n != 0 {
		t.Errorf("tick %v reported as overlapping ran %d times", e.Tick, n)
	}
	waitNotRunCount(t, r.cron, "long", ReasonOverlap, 1)
}

// TestClaimedElsewhereIsAnEventNotATickNotRun: in claim mode the replica
// that loses a tick's claim reports it claimed elsewhere; the tick ran, so
// Status counts nothing.
func TestClaimedElsewhereIsAnEventNotATickNotRun(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	l := newLedger()
	ea, eb := newEventLog(), newEventLog()
	a := startReplica(t, srv.Client(t), "a", l, ClaimMode, observed(ea)...)
	startReplica(t, srv.Client(t), "b", l, ClaimMode, observed(eb)...)
	var lost TickNotRun
	select {
	case <-time.After(15 * time.Second):
		t.Fatal("no replica reported a tick claimed elsewhere within 15s")
	case lost = <-firstNotRun(ea, ReasonClaimedElsewhere):
	case lost = <-firstNotRun(eb, ReasonClaimedElsewhere):
	}
	eventually(t, 5*time.Second, func() (bool, string) { // the winner's run may start after the loser hears
		n := l.count(lost.Tick)
		return n == 1, fmt.Sprintf("tick %v claimed elsewhere ran %d times, want once", lost.Tick, n)
	})
	l.waitTicks(t, len(l.snapshot())+2, 10*time.Second)
	st, err := a.cron.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := jobStatus(st, "tick"); len(j.NotRun) != 0 {
		t.Errorf("Status counts %v ticks not run of a job that ran every tick", j.NotRun)
	}
}

// countJob returns how many runs job had at tick.
func (l *ledger) countJob(job string, tick time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.runs {
		if r.Job == job && r.Tick.Equal(tick) {
			n++
		}
	}
	return n
}

// firstNotRun hands over the first tick l reports not run for reason.
func firstNotRun(l *eventLog, reason Reason) <-chan TickNotRun {
	ch := make(chan TickNotRun, 1)
	go func() {
		for end := time.After(15 * time.Second); ; {
			select {
			case ev := <-l.ch:
				if e, ok := ev.(TickNotRun); ok && e.Reason == reason {
					ch <- e
					return
				}
			case <-end:
				return
			}
		}
	}()
	return ch
}

// TestLateWakeUpIsMisfireSkipped: a leader whose loop wakes up past a
// tick's misfire grace (a stalled process; here the injected clock jumps)
// skips the tick and reports it, while a tick it wakes up for on time runs.
func TestLateWakeUpIsMisfireSkipped(t *testing.T) {
	t.Parallel()
	lw := newLateLeader(t, "late", "0 * * * * *", "minute")
	fake, ev, l, c := lw.fake, lw.ev, lw.l, lw.c
	tick := lw.start.Add(30 * time.Second)
	armed := lw.armed
	eventually(t, 10*time.Second, armed(tick))
	fake.Set(tick.Add(10 * time.Second)) // 10 s late, past the 5 s grace
	e := waitNotRun(t, ev, "minute", ReasonMisfireSkipped, 10*time.Second)
	if !e.Tick.Equal(tick) {
		t.Errorf("misfire reported for %v, want %v", e.Tick, tick)
	}

	next := tick.Add(time.Minute)
	eventually(t, 10*time.Second, armed(next))
	fake.Set(next)
	if got := runAfter(t, l.ch, tick.Add(-time.Second), 10*time.Second, "the on-time tick"); !got.Tick.Equal(next) {
		t.Errorf("ran tick %v, want %v (and not the late %v)", got.Tick, next, tick)
	}
	waitNotRunCount(t, c, "minute", ReasonMisfireSkipped, 1)
}

// lateLeader is a leader of one job, named job, on a fake clock, whose
// misfire grace under RunOnce is 5 s, for tests of a loop that wakes up
// late: the test moves the clock past the tick it waits for.
type lateLeader struct {
	start time.Time
	fake  *clock.Fake
	ev    *eventLog
	l     *ledger
	c     *Cron
}

func newLateLeader(t *testing.T, name, spec, job string) *lateLeader {
	srv := etcdtest.Shared(t)
	lw := &lateLeader{start: time.Now().Truncate(time.Minute).Add(30 * time.Second), ev: newEventLog(), l: newLedger()}
	lw.fake = clock.NewFake(lw.start)
	lw.c = New(append(observed(lw.ev), WithSeconds(), WithEtcd(srv.Client(t)), WithName(name), withClock(lw.fake),
		WithMisfire(RunOnce, 5*time.Second), WithElection(election.WithIdentity("a"), election.WithTTL(2*time.Second)))...)
	mustAdd(t, lw.c, spec, Named(job, lw.l.job("a", nil)))
	lw.c.Start()
	r := &replica{id: "a", cron: lw.c, cli: srv.Client(t)}
	t.Cleanup(func() { r.stop(t) })
	waitFor[leadershipGained](t, lw.ev, 10*time.Second, "leadership", nil)
	return lw
}

// armed is a condition that the loop sleeps until at.
func (lw *lateLeader) armed(at time.Time) func() (bool, string) {
	return func() (bool, string) {
		due, ok := lw.fake.NextDue()
		return ok && due.Equal(at), fmt.Sprintf("next wake-up %v (%v), want %v", due, ok, at)
	}
}

// TestALeaderWakingLateRunsTheLatestTickAndReportsTheOthers: a leader
// whose loop wakes up past several ticks of a job (a stalled process; here
// the injected clock jumps) runs the latest of them, within the misfire
// grace, and reports each earlier one misfire_skipped, where robfig's loop
// would run the earliest and let the others pass unseen.
func TestALeaderWakingLateRunsTheLatestTickAndReportsTheOthers(t *testing.T) {
	t.Parallel()
	lw := newLateLeader(t, "stalled", "*/10 * * * * *", "ten")
	start, fake, ev, l, c := lw.start, lw.fake, lw.ev, lw.l, lw.c
	tick := start.Add(10 * time.Second)
	eventually(t, 10*time.Second, lw.armed(tick))
	fake.Set(tick.Add(32 * time.Second)) // four ticks due, the latest 2 s ago
	latest := tick.Add(30 * time.Second)
	if got := runAfter(t, l.ch, start, 10*time.Second, "the latest tick"); !got.Tick.Equal(latest) {
		t.Errorf("ran tick %v, want the latest due, %v", got.Tick, latest)
	}
	for i := range 3 {
		want := tick.Add(time.Duration(i) * 10 * time.Second)
		if e := waitNotRun(t, ev, "ten", ReasonMisfireSkipped, 10*time.Second); !e.Tick.Equal(want) {
			t.Errorf("misfire_skipped reported for %v, want %v", e.Tick, want)
		}
	}
	if got := waitNotRunCount(t, c, "ten", ReasonMisfireSkipped, 3); got[ReasonMisfireSkipped] != 3 || len(got) != 1 {
		t.Errorf("Status counts %v ticks not run, want misfire_skipped 3", got)
	}
	if n := len(l.snapshot()); n != 1 {
		t.Errorf("%d ticks ran, want 1", n)
	}
}

// TestALeaderWakingLateWithinGraceRunsTheEarliestTick: a leader whose
// loop wakes up 3 s late for a job of every second, within the 5 s
// misfire grace, runs the earliest tick due, as robfig/cron does, and
// counts the three after it misfire_skipped.
func TestALeaderWakingLateWithinGraceRunsTheEarliestTick(t *testing.T) {
	t.Parallel()
	lw := newLateLeader(t, "stalled-short", "* * * * * *", "second")
	tick := lw.start.Add(time.Second)
	eventually(t, 10*time.Second, lw.armed(tick))
	lw.fake.Set(tick.Add(3 * time.Second))
	if got := runAfter(t, lw.l.ch, lw.start, 10*time.Second, "the earliest tick"); !got.Tick.Equal(tick) {
		t.Errorf("ran tick %v, want the earliest due, %v", got.Tick, tick)
	}
	for i := 1; i <= 3; i++ {
		want := tick.Add(time.Duration(i) * time.Second)
		if e := waitNotRun(t, lw.ev, "second", ReasonMisfireSkipped, 10*time.Second); !e.Tick.Equal(want) {
			t.Errorf("misfire_skipped reported for %v, want %v", e.Tick, want)
		}
	}
	if got := waitNotRunCount(t, lw.c, "second", ReasonMisfireSkipped, 3); got[ReasonMisfireSkipped] != 3 || len(got) != 1 {
		t.Errorf("Status counts %v ticks not run, want misfire_skipped 3", got)
	}
}

// TestALeaderWakingLatePastManyTicksCountsTheFirstOnes: a leader whose
// loop wakes up twenty minutes late for a job of every second counts the
// first maxGapTicks ticks it skipped, and still runs the latest.
func TestALeaderWakingLatePastManyTicksCountsTheFirstOnes(t *testing.T) {
	t.Parallel()
	lw := newLateLeader(t, "stalled-long", "* * * * * *", "second")
	start, fake, l, c := lw.start, lw.fake, lw.l, lw.c
	eventually(t, 10*time.Second, lw.armed(start.Add(time.Second)))
	now := start.Add(20*time.Minute + 500*time.Millisecond)
	fake.Set(now)
	if got := runAfter(t, l.ch, start, 10*time.Second, "the latest tick"); !got.Tick.Equal(now.Truncate(time.Second)) {
		t.Errorf("ran tick %v, want the latest due, %v", got.Tick, now.Truncate(time.Second))
	}
	if got := waitNotRunCount(t, c, "second", ReasonMisfireSkipped, maxGapTicks); got[ReasonMisfireSkipped] != maxGapTicks {
		t.Errorf("Status counts %v ticks not run, want misfire_skipped %d", got, maxGapTicks)
	}
}

// TestSlowObserverDoesNotSlowTheScheduler: an observer that does not
// return holds up no run; its queue fills and the events past it are
// dropped and counted, and told to it once it returns.
func TestSlowObserverDoesNotSlowTheScheduler(t *testing.T) {
	t.Parallel()
	start := time.Now().Truncate(time.Minute)
	fake := clock.NewFake(start)
	block := make(chan struct{})
	var delivered, dropped atomic.Int64
	obs := Observer{
		QueueSize:    8,
		OnRunStarted: func(RunStarted) { <-block; delivered.Add(1) },
		OnRunEnded:   func(RunEnded) { <-block; delivered.Add(1) },
		OnDropped:    func(n int) { dropped.Add(int64(n)) },
	}
	c := New(WithSeconds(), withClock(fake), WithObserver(obs))
	const jobs, ticks = 20, 3
	runs := make(chan time.Time, jobs*ticks)
	for range jobs {
		if _, err := c.AddFunc("* * * * * *", func() { runs <- fake.Now() }); err != nil {
			t.Fatal(err)
		}
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
	var once sync.Once
	release := func() { once.Do(func() { close(block) }) }
	defer release() // before Stop waits for the runs
	for i := 1; i <= ticks; i++ {
		fake.WaitTimers(1, 10*time.Second)
		fake.Set(start.Add(time.Duration(i) * time.Second))
		for n := range jobs {
			select {
			case <-runs:
			case <-time.After(5 * time.Second):
				t.Fatalf("tick %d: %d of %d jobs ran while the observer was blocked", i, n, jobs)
			}
		}
	}
	// Every run has returned, and so emitted its end, while the observer
	// is still blocked: no event comes after the release.
	select {
	case <-c.runs.idle().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("runs still going 10s after their ticks")
	}
	release()
	eventually(t, 10*time.Second, func() (bool, string) {
		d, x := delivered.Load(), dropped.Load()
		return d+x == 2*jobs*ticks, fmt.Sprintf("%d events delivered and %d dropped, want %d in all", d, x, 2*jobs*ticks)
	})
	if d := delivered.Load(); d > int64(obs.QueueSize)+1 {
		t.Errorf("%d events delivered to an observer blocked with a queue of %d", d, obs.QueueSize)
	}
}

// TestMergeNotRunCountsEachTickOnceAndOnlyIfNobodyRanIt is the tally's
// rule, case by case.
func TestMergeNotRunCountsEachTickOnceAndOnlyIfNobodyRanIt(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 30, 0, 0, time.UTC)
	at := func(d time.Duration) int64 { return now.Add(d).UnixNano() }
	one := func(d time.Duration, r Reason, strict bool) notRunEntry {
		return notRunEntry{tick: at(d), hour: hourOf(now.Add(d)), reason: r, n: 1, strict: strict}
	}
	old := notrun.Value{Upto: at(-2 * time.Minute), Hours: []notrun.Hour{
		{Hour: hourOf(now.Add(-30 * time.Hour)), Counts: map[string]int{"paused": 7}},
		{Hour: hourOf(now), Counts: map[string]int{"paused": 1}},
	}}
	ran := []Record{{Tick: now.Add(-40 * time.Second)}}
	for _, tc := range []struct {
		name    string
		entries []notRunEntry
		last    int64
		want    map[Reason]int
	}{
		{"a new tick counts", []notRunEntry{one(-time.Minute, ReasonPaused, false)}, -1, map[Reason]int{ReasonPaused: 2}},
		{"a tick counted already does not", []notRunEntry{one(-2*time.Minute, ReasonPaused, false)}, -1, map[Reason]int{ReasonPaused: 1}},
		{"the last claimed tick ran", []notRunEntry{one(-time.Minute, ReasonOverlap, false)}, at(-time.Minute), map[Reason]int{ReasonPaused: 1}},
		{"a tick in the history ran", []notRunEntry{one(-40*time.Second, ReasonOverlap, false)}, -1, map[Reason]int{ReasonPaused: 1}},
		{"strict: a later tick was claimed", []notRunEntry{one(-time.Minute, ReasonEtcdUnavailable, true)}, at(0), map[Reason]int{ReasonPaused: 1}},
		{"strict: nothing claimed since", []notRunEntry{one(-time.Minute, ReasonEtcdUnavailable, true)}, at(-5 * time.Minute), map[Reason]int{ReasonPaused: 1, ReasonEtcdUnavailable: 1}},
		{"a gap's hour counts whole", []notRunEntry{{tick: at(-time.Minute), hour: hourOf(now), reason: ReasonNoLeader, n: 25}}, -1, map[Reason]int{ReasonPaused: 1, ReasonNoLeader: 25}},
		{"the same tick twice counts once", []notRunEntry{one(-time.Minute, ReasonPaused, false), one(-time.Minute, ReasonPaused, false)}, -1, map[Reason]int{ReasonPaused: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := notrun.Parse([]byte(old.Encode()))
			mergeNotRun(&v, tc.entries, tc.last, ran, now)
			if got, _ := notRunCounts(v, now); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("counts %v, want %v", got, tc.want)
			}
			if len(v.Hours) != 1 {
				t.Errorf("hours %v: the hour older than a day was kept", v.Hours)
			}
		})
	}
}
