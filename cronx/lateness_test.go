package cronx

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestLatenessCountsFromTheJitteredStart: a jittered run is meant to start
// at its tick plus its delay, so its RunStarted.Lateness (the lateness
// metric's value) is how long after that it started, not the delay itself:
// a run that starts at its delay is not late, one that starts a second
// after it is a second late. In both modes, on real etcd.
func TestLatenessCountsFromTheJitteredStart(t *testing.T) {
	t.Parallel()
	const jitter = 3 * time.Second
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	next := tick.Add(time.Minute)
	// A job whose delays of both ticks are a second or more, so that a
	// lateness counted from the tick is told apart from one counted from
	// the delay.
	name := ""
	for i := 0; name == ""; i++ {
		n := fmt.Sprintf("spread-%d", i)
		if jitterOf(n, tick, jitter) >= time.Second && jitterOf(n, next, jitter) >= time.Second {
			name = n
		}
	}
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			srv := etcdtest.Shared(t)
			fake := clock.NewFake(start)
			ev := newEventLog()
			c := New(append(observed(ev), withClock(fake), WithLocation(time.UTC), WithEtcd(srv.Client(t)), WithName("late"),
				WithMode(mode), WithElection(election.WithIdentity("a"), election.WithTTL(2*time.Second)),
				WithJobOptions(WithJitter(jitter)))...)
			mustAdd(t, c, "* * * * *", Named(name, FuncJob(func() {})))
			c.Start()
			r := &replica{id: "a", cron: c, cli: srv.Client(t)}
			t.Cleanup(func() { r.stop(t) })

			for _, tc := range []struct {
				tick time.Time
				late time.Duration // after the delay
			}{{tick, 0}, {next, time.Second}} {
				delay := jitterOf(name, tc.tick, jitter)
				eventually(t, 10*time.Second, func() (bool, string) { return c.coord.scheduling(), "not scheduling" })
				if !fake.WaitDue(tc.tick, 10*time.Second) {
					t.Fatalf("no timer armed for the tick %v", tc.tick)
				}
				fake.Set(tc.tick)
				if !fake.WaitDue(tc.tick.Add(delay), 10*time.Second) {
					t.Fatalf("no timer armed for the delay of %v, %v", tc.tick, delay)
				}
				fake.Set(tc.tick.Add(delay + tc.late))
				e := waitFor(t, ev, 10*time.Second, fmt.Sprintf("run of %v", tc.tick), func(e RunStarted) bool { return e.Tick.Equal(tc.tick) })
				if e.Lateness != tc.late {
					t.Errorf("tick %v, delay %v, started %v after it: Lateness %v, want %v", tc.tick, delay, tc.late, e.Lateness, tc.late)
				}
			}
		})
	}
}
