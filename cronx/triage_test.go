package cronx

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestATickRefusedAsItsTermEndsIsCaughtUpByTheNextTerm: etcd may refuse a
// claim as not under the current term (ErrNotLeader) before the term's
// watch has ended the run's context, as when a paused leader wakes past
// its TTL and fires the tick it slept through. Nothing of the tick is in
// etcd, so it is noted as given up unclaimed: this replica's next term
// catches it up, where it would otherwise count it fired and skip it.
func TestATickRefusedAsItsTermEndsIsCaughtUpByTheNextTerm(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	c := New(WithSeconds(), WithLocation(time.UTC), WithLogger(DiscardLogger), WithEtcd(srv.Client(t)), WithName("refused-term"),
		WithElection(election.WithIdentity("a")))
	id, err := c.AddJob("*/10 * * * * *", Named("tens", FuncJob(func() {})))
	if err != nil {
		t.Fatal(err)
	}
	e := c.Entry(id)
	tick := t0.Add(10 * time.Second)
	r := newRun(c.runs, c.coord, refOf(&e), tick)
	c.coord.claims.triage(r, fmt.Errorf("claim /k seq %d: %w", tick.UnixNano(), election.ErrNotLeader))
	e.Prev = tick // fired
	if got := c.coord.catchUpTick(&e, tick.Add(3*time.Second)); !got.Equal(tick) {
		t.Errorf("the next term catches up %v, want the tick refused as not under the term, %v", got, tick)
	}
}

// TestAClaimModeTickOvertakenByItsOwnLaterTickIsASkipNotAnError: in claim
// mode a replica claims a later tick of a job first only when this tick's
// claim was held up past the next tick's (etcd out, or its client sending
// the claim again on a connection opened after an outage): the later tick
// stands for it, as after any outage. The tick is reported not run,
// overtaken, and logged as a skip, not as an error; in leader mode, where
// nothing explains it but a clock gone back, it is an error.
func TestAClaimModeTickOvertakenByItsOwnLaterTickIsASkipNotAnError(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	for _, mode := range []Mode{ClaimMode, LeaderMode} {
		logs := &logLines{}
		reasons := make(chan Reason, 1)
		c := New(WithSeconds(), WithLocation(time.UTC), WithLogger(logs), WithEtcd(srv.Client(t)), WithName("overtaken-self"),
			WithMode(mode), WithElection(election.WithIdentity("a")),
			WithObserver(Observer{OnTickNotRun: func(e TickNotRun) { reasons <- e.Reason }}))
		id, err := c.AddJob("* * * * * *", Named("each", FuncJob(func() {})))
		if err != nil {
			t.Fatal(err)
		}
		e := c.Entry(id)
		tick, later := t0.Add(time.Second), t0.Add(4*time.Second)
		r := newRun(c.runs, c.coord, refOf(&e), tick)
		if mode == ClaimMode {
			c.coord.claims.fired.note("each", tick)
			c.coord.claims.fired.note("each", later) // the later tick fired, and was claimed first
		} else {
			r.term = &termState{}
		}
		c.coord.claims.triage(r, &election.ClaimedError{Key: "/k", Want: tick.UnixNano(), Seq: later.UnixNano(), Holder: "a"})
		select {
		case got := <-reasons:
			if got != ReasonOvertaken {
				t.Errorf("%v: the tick is reported not run as %v, want %v", mode, got, ReasonOvertaken)
			}
		case <-time.After(wait):
			t.Fatalf("%v: the tick was not reported not run within %v", mode, wait)
		}
		errs, skips := logs.matching("ERROR cronx: tick not run"), logs.matching("INFO cronx: skipped: a later tick ran")
		if mode == ClaimMode && (len(errs) > 0 || len(skips) != 1) {
			t.Errorf("claim mode logged %q and %q, want one skip and no error", errs, skips)
		}
		if mode == LeaderMode && (len(errs) != 1 || len(skips) > 0) {
			t.Errorf("leader mode logged %q and %q, want one error", errs, skips)
		}
	}
}
