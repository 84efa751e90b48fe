package cronx

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestTTLBelowServerMinimumIsOneError: a TTL that etcd refuses for good
// (1 s, under the embedded server's minimum of 2 s) runs nothing, and says
// so once, as an error naming the TTL and the server's minimum: in leader
// mode as the campaign ends (no tick is then fired), in claim mode at the
// first tick, whose claim and every later one are not run with
// ReasonEtcdRefused, without a line more and without waiting out their
// misfire deadline.
func TestTTLBelowServerMinimumIsOneError(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			srv := etcdtest.Shared(t)
			start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
			fake := clock.NewFake(start)
			logs := &kvLog{}
			ev := newEventLog()
			ran := make(chan time.Time, 8)
			c := New(append(observed(ev), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(logs),
				WithEtcd(srv.Client(t)), WithName("short"), WithMode(mode), WithMisfire(RunOnce, time.Hour),
				WithElection(election.WithIdentity("a"), election.WithTTL(time.Second)))...)
			mustAdd(t, c, "* * * * * *", Named("beat", FuncJob(func() { ran <- fake.Now() })))
			c.Start()
			r := &replica{id: "a", cron: c, cli: srv.Client(t)}
			t.Cleanup(func() { r.stop(t) })

			refused := func() []string { return logs.matching("asked for 1s", "at least 2s", "scheduler short") }
			if mode == LeaderMode {
				eventually(t, 10*time.Second, func() (bool, string) {
					return len(refused()) > 0, fmt.Sprintf("logged %q, want an error naming the TTL and the minimum", logs.all())
				})
			}
			for i := 1; mode == ClaimMode && i <= 3; i++ {
				tick := start.Add(time.Duration(i) * time.Second)
				if !fake.WaitDue(tick, 10*time.Second) {
					t.Fatalf("no timer armed for %v", tick)
				}
				fake.Set(tick)
				// Under an hour's misfire grace: only a claim given up at
				// once is reported before the clock moves on.
				waitFor(t, ev, 10*time.Second, fmt.Sprintf("tick %v not run, etcd_refused", tick), func(e TickNotRun) bool {
					return e.Job == "beat" && e.Tick.Equal(tick) && e.Reason == ReasonEtcdRefused
				})
			}
			if lines := refused(); len(lines) != 1 || len(logs.all()) != 1 {
				t.Errorf("logged %q, want one error naming the TTL and the server's minimum, and nothing else", logs.all())
			}
			select {
			case at := <-ran:
				t.Errorf("the job ran at %v with a TTL the server does not grant", at)
			default:
			}
		})
	}
}
