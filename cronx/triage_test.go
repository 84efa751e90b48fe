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
