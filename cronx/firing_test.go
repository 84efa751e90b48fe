package cronx

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestACrowdedTicksClaimsWaitForFullRecordsWhileTheLoopFires: the claims
// of a tick of 2148 jobs that the loop is still firing go in records of
// claims.MaxTickJobs, not in the small batches of the first runs fired,
// which took every flusher while the rest of the tick waited. The loop's
// pass here holds its last job until every other run's claim has reached
// the batcher, as a loop firing thousands of entries does for a while.
func TestACrowdedTicksClaimsWaitForFullRecordsWhileTheLoopFires(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	const jobs = 2*claims.MaxTickJobs + 100
	first := t0.Add(time.Minute)
	seq := fmt.Sprintf("%020d", first.UnixNano())
	var mu sync.Mutex
	claimTxns := 0
	cli := sp.TxnSeeingClient(t, func(txn *etcdserverpb.TxnRequest) {
		claimed := false
		etcdtest.EachPut(txn, func(p *etcdserverpb.PutRequest) {
			k := string(p.Key)
			claimed = claimed || strings.Contains(k, "/.ticks/"+seq) || strings.Contains(k, "/running/"+seq)
		})
		if claimed {
			mu.Lock()
			claimTxns++
			mu.Unlock()
		}
	})
	fake := clock.NewFake(first.Add(-time.Second))
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(cli), WithName("firing"), WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	var l tickLedger
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%04d", i)
		// Daily, at the tick: the term that starts a second before has no
		// tick to catch up, whose claims would hold the jobs' keys.
		mustAdd(t, c, "0 1 9 * * *", Named(names[i], l.job(names[i])))
	}
	b := c.coord.claims.batch
	// waiting says how many of the tick's runs fired have not reached the
	// batcher yet.
	waiting := func() int {
		b.mu.Lock()
		pending := len(b.pending)
		b.mu.Unlock()
		c.runs.mu.Lock()
		defer c.runs.mu.Unlock()
		return c.runs.count(func(r *run) bool { return r.tick.Equal(first) && r.stage == stageFired }) - pending
	}
	fired := 0
	held := make(chan string, 1)
	c.fireHook = func(_ Entry, tick time.Time) {
		if !tick.Equal(first) {
			return
		}
		if fired++; fired != jobs {
			return
		}
		deadline := time.Now().Add(30 * time.Second)
		for waiting() > 0 {
			if time.Now().After(deadline) {
				held <- fmt.Sprintf("%d of the tick's runs fired had not reached the batcher within 30s", waiting())
				return
			}
			time.Sleep(time.Millisecond)
		}
		held <- ""
	}
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	eventually(t, wait, func() (bool, string) { return c.coord.scheduling(), "a does not lead" })
	// The term's catch-up of the jobs, none of which has run, is claimed
	// and settled before the tick.
	eventually(t, wait, func() (bool, string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.busy) == 0 && len(b.pending) == 0, fmt.Sprintf("%d claim keys busy, %d claims pending", len(b.busy), len(b.pending))
	})
	fireTick(t, fake, first)
	if msg := <-held; msg != "" {
		t.Fatal(msg)
	}
	eventually(t, time.Minute, func() (bool, string) { return ranTicks(&l, names, 1, first) })
	mu.Lock()
	defer mu.Unlock()
	// Two full records, the rest in one or two: the last job's run may
	// come after the flusher took the others.
	if claimTxns > 4 {
		t.Errorf("the tick's %d jobs were claimed in %d transactions, want 2 full records and the rest in one or two", jobs, claimTxns)
	}
}
