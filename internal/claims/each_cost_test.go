package claims

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
)

// TestACrowdedTickIsOneTransactionOfClaims: a crowded tick is claimed in
// one transaction of MaxEach items, of jobs that never ran as of jobs that
// ran before, and of a mix of both; a batch that holds a paused job takes
// a second, and each item's outcome is what ClaimSeq would say.
func TestACrowdedTickIsOneTransactionOfClaims(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	var txns atomic.Int64
	cli := sp.TxnSeeingClient(t, func(*etcdserverpb.TxnRequest) { txns.Add(1) })
	ctx := deadlineCtx(t, 20*time.Second)
	sess, err := election.NewSession(ctx, cli, election.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	termResp, err := cli.Put(ctx, "/cost/leader", "me")
	if err != nil {
		t.Fatal(err)
	}
	term := election.Fence{Key: "/cost/leader", Revision: termResp.Header.Revision}
	key := func(i int) string { return fmt.Sprintf("/cost/%03d/last", i) }
	tick := func(seq int64) []ClaimItem {
		items := make([]ClaimItem, MaxEach)
		for i := range items {
			items[i] = ClaimItem{Key: key(i), Seq: seq, Opts: []election.ClaimOption{
				election.UnderTerm(term), election.ClaimedBy("me"),
				WithMarker(fmt.Sprintf("/cost/%03d/running/%d", i, seq), sess.Lease()),
				UnlessExists(fmt.Sprintf("/cost/%03d/paused", i), errPausedForTest)}}
		}
		return items
	}
	claimed := func(what string, items []ClaimItem, want func(i int) error) (n int64) {
		t.Helper()
		before := txns.Load()
		cs, errs, err := ClaimEach(ctx, cli, items)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for i := range items {
			w := want(i)
			switch {
			case w == nil && (errs[i] != nil || cs[i].Revision == 0 || cs[i].Fence.Revision != cs[i].Revision):
				t.Errorf("%s: %s: %+v, %v; want a claim and its marker's fence", what, items[i].Key, cs[i], errs[i])
			case w != nil && !errors.Is(errs[i], w):
				t.Errorf("%s: %s: %v, want %v", what, items[i].Key, errs[i], w)
			}
		}
		return txns.Load() - before
	}
	if n := claimed("the first tick of jobs that never ran", tick(1), func(int) error { return nil }); n != 1 {
		t.Errorf("the first tick of %d jobs took %d transactions, want 1", MaxEach, n)
	}
	// Job 1 never claimed, the others claimed before: one transaction.
	if _, err := cli.Delete(ctx, key(1)); err != nil {
		t.Fatal(err)
	}
	if n := claimed("a tick of jobs that ran and one new job", tick(2), func(int) error { return nil }); n != 1 {
		t.Errorf("a tick of %d jobs, one new, took %d transactions, want 1", MaxEach, n)
	}
	// Job 0 paused: a second transaction, which tells why job 0 failed.
	if _, err := cli.Put(ctx, "/cost/000/paused", "x"); err != nil {
		t.Fatal(err)
	}
	n := claimed("a tick with a paused job", tick(3), func(i int) error {
		if i == 0 {
			return errPausedForTest
		}
		return nil
	})
	if n != 2 {
		t.Errorf("a tick with a paused job took %d transactions, want 2", n)
	}
	for i := range MaxEach {
		want := int64(3)
		if i == 0 {
			want = 2
		}
		if seq, _ := lastClaim(t, cli, key(i)); seq != want {
			t.Errorf("%s holds %d, want %d", key(i), seq, want)
		}
	}
}

// TestAHeldItemsPutsGoOnce: the steady tick of jobs whose keys the caller
// claimed before (Held) is one transaction in which each job's puts are
// written once, where a claim that may find its key absent writes them
// for each way of claiming it; a Held item whose key is gone after all is
// claimed by its absence, in a second transaction.
func TestAHeldItemsPutsGoOnce(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	var txns, puts atomic.Int64
	cli := sp.TxnSeeingClient(t, func(txn *etcdserverpb.TxnRequest) {
		txns.Add(1)
		puts.Add(int64(etcdtest.PutsEnding(txn, "/last")))
	})
	ctx := deadlineCtx(t, 20*time.Second)
	key := func(i int) string { return fmt.Sprintf("/held/%03d/last", i) }
	tick := func(seq int64, held bool) []ClaimItem {
		items := make([]ClaimItem, MaxEach)
		for i := range items {
			items[i] = ClaimItem{Key: key(i), Seq: seq, Held: held, Opts: []election.ClaimOption{election.ClaimedBy("me"),
				UnlessExists(fmt.Sprintf("/held/%03d/paused", i), errPausedForTest)}}
		}
		return items
	}
	claim := func(what string, items []ClaimItem) (txn, put int64) {
		t.Helper()
		t0, p0 := txns.Load(), puts.Load()
		_, errs, err := ClaimEach(ctx, cli, items)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s: %s: %v", what, items[i].Key, err)
			}
			if seq, _ := lastClaim(t, cli, items[i].Key); seq != items[i].Seq {
				t.Fatalf("%s: %s holds %d, want %d", what, items[i].Key, seq, items[i].Seq)
			}
		}
		return txns.Load() - t0, puts.Load() - p0
	}
	if txn, put := claim("the first tick", tick(1, false)); txn != 1 || put != 2*MaxEach {
		t.Errorf("the first tick: %d transactions putting %d keys, want 1 putting each key twice (%d)", txn, put, 2*MaxEach)
	}
	if txn, put := claim("the next tick, held", tick(2, true)); txn != 1 || put != MaxEach {
		t.Errorf("the next tick: %d transactions putting %d keys, want 1 putting each key once (%d)", txn, put, MaxEach)
	}
	if _, err := cli.Delete(ctx, key(7)); err != nil {
		t.Fatal(err)
	}
	if txn, _ := claim("a tick, held, of a key gone", tick(3, true)); txn != 2 {
		t.Errorf("a tick whose held key is gone: %d transactions, want 2", txn)
	}
}
