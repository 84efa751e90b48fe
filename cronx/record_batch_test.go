package cronx

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestRunsEndingTogetherAreRecordedInAFewTransactions: the runs of a tick
// of a few dozen quick jobs end within a few milliseconds of one another,
// and their records go out in a few transactions, not one each: a
// recorder more starts only for more runs than those going take at their
// next pass.
func TestRunsEndingTogetherAreRecordedInAFewTransactions(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	var writes, runs atomic.Int64
	cli := sp.TxnSeeingClient(t, func(txn *etcdserverpb.TxnRequest) {
		if n := etcdtest.PutsEnding(txn, "/history"); n > 0 {
			writes.Add(1)
			runs.Add(int64(n))
		}
	})
	const jobs = 32 // a few dozen
	tick := t0.Add(time.Minute)
	fake := clock.NewFake(tick.Add(-time.Second))
	var l tickLedger
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(cli), WithName("record-together"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%02d", i)
		mustAdd(t, c, "0 * * * * *", Named(names[i], l.job(names[i])))
	}
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	eventually(t, wait, func() (bool, string) { return c.coord.scheduling(), "a does not lead" })
	// The loop arms the tick's timer once it is told that it leads: moved
	// past the tick before then, it would schedule the next minute.
	if !fake.WaitDueBy(tick, wait) {
		t.Fatalf("no timer armed for the tick %s", tick)
	}
	fake.Advance(time.Second)
	l.ranOnce(t, wait, tick, names...)
	eventually(t, wait, func() (bool, string) {
		return runs.Load() == jobs, fmt.Sprintf("%d of %d runs recorded", runs.Load(), jobs)
	})
	if got := writes.Load(); got > 5 {
		t.Errorf("%d runs that ended together were recorded in %d transactions, want a few", jobs, got)
	}
}

// claimPuts counts into seqs the puts of claim keys (<job>/last) in txn,
// in every branch of its nested transactions, by the sequence they claim.
func claimPuts(txn *etcdserverpb.TxnRequest, seqs map[int64]int) {
	etcdtest.EachPut(txn, func(p *etcdserverpb.PutRequest) {
		if seq, _, err := claimcond.Parse(string(p.Value)); err == nil && strings.HasSuffix(string(p.Key), "/last") {
			seqs[seq]++
		}
	})
}

// TestASteadyTicksClaimsPutEachKeyOnce: a leader's claims of a tick of
// jobs it fired before go with each job's puts once, not once for each way
// of claiming the key (claims.ClaimItem.Held): the steady tick costs etcd
// half the puts to read, check and decode that the jobs' first tick does.
func TestASteadyTicksClaimsPutEachKeyOnce(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	var mu sync.Mutex
	puts := map[int64]int{} // by the sequence claimed
	cli := sp.TxnSeeingClient(t, func(txn *etcdserverpb.TxnRequest) {
		mu.Lock()
		defer mu.Unlock()
		claimPuts(txn, puts)
	})
	const jobs = 20
	first := t0.Add(time.Minute)
	fake := clock.NewFake(first.Add(-time.Second))
	var l tickLedger
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(cli), WithName("steady-puts"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%02d", i)
		mustAdd(t, c, "* * * * * *", Named(names[i], l.job(names[i])))
	}
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	eventually(t, wait, func() (bool, string) { return c.coord.scheduling(), "a does not lead" })
	for n, tick := range []time.Time{first, first.Add(time.Second)} {
		if !fake.WaitDueBy(tick, wait) {
			t.Fatalf("no timer armed for the tick %s", tick)
		}
		fake.Set(tick)
		eventually(t, wait, func() (bool, string) {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, j := range names {
				if len(l.ran[j]) != n+1 || !l.ran[j][n].Equal(tick) {
					return false, fmt.Sprintf("%s ran %v, want its ticks to %s", j, l.ran[j], tick)
				}
			}
			return true, ""
		})
		mu.Lock()
		got, want := puts[tick.UnixNano()], jobs
		mu.Unlock()
		if n == 0 {
			want = 2 * jobs // by the key's value, or by its absence
		}
		if got != want {
			t.Errorf("tick %d: the claims put jobs' keys %d times, want %d", n+1, got, want)
		}
	}
}
