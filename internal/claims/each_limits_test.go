package claims

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestAFullBatchOfTheMostGuardedClaimsIsWithinEtcdsLimits: MaxEach items,
// each with every condition a job's claim can carry (a term, a pause, two
// exclusive prefixes, a counter, a marker and a publication mark), are
// taken by an etcd at its default --max-txn-ops and --max-request-bytes,
// both with no reads (the jobs claimed) and with reads (every job paused,
// each told why); with short keys, and with keys as long as a scheduler's
// and a job's longest names make them, which no one transaction of
// MaxEach items holds within etcd's bytes.
func TestAFullBatchOfTheMostGuardedClaimsIsWithinEtcdsLimits(t *testing.T) {
	t.Parallel()
	for name, dir := range map[string]string{"short keys": "/guarded/", "long keys": "/guarded/" + strings.Repeat("s", 200) + "/" + strings.Repeat("j", 195)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fullBatchOfGuardedClaims(t, dir)
		})
	}
}

func fullBatchOfGuardedClaims(t *testing.T, root string) {
	cli := etcdtest.Shared(t).Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	sess, err := election.NewSession(ctx, cli, election.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	termResp, err := cli.Put(ctx, root+"leader", "me")
	if err != nil {
		t.Fatal(err)
	}
	term := election.Fence{Key: root + "leader", Revision: termResp.Header.Revision}
	since := func(i int) string { return fmt.Sprintf("%s%03d/since", root, i) }
	var ops []clientv3.Op
	for i := range MaxEach {
		ops = append(ops, clientv3.OpPut(since(i), "00000000000000000000 me"))
	}
	putInTxns(t, ctx, cli, ops)
	known, err := cli.Get(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	errMax := errors.New("max runs")
	tick := func(seq int64) []ClaimItem {
		items := make([]ClaimItem, MaxEach)
		for i := range items {
			dir := fmt.Sprintf("%s%03d/", root, i)
			items[i] = ClaimItem{Key: dir + "last", Seq: seq, Opts: []election.ClaimOption{
				election.UnderTerm(term), election.ClaimedBy("me"),
				UnlessExists(dir+"paused", errPausedForTest),
				Exclusive(dir + "running/"), Exclusive(dir + "buffer/"),
				Counted(dir+"runs", 10, "me", errMax),
				WithMarker(fmt.Sprintf("%srunning/%020d", dir, seq), sess.Lease()),
				IfClaimedOrKnownBefore(since(i), known.Header.Revision+1)}}
		}
		return items
	}
	cs, errs, err := ClaimEach(ctx, cli, tick(5))
	if err != nil {
		t.Fatalf("the first tick of %d jobs: %v", MaxEach, err)
	}
	ops = ops[:0]
	for i := range cs {
		if errs[i] != nil || cs[i].Revision == 0 {
			t.Fatalf("job %d: %+v, %v; want it claimed", i, cs[i], errs[i])
		}
		ops = append(ops, clientv3.OpDelete(cs[i].Fence.Key), clientv3.OpPut(fmt.Sprintf("%s%03d/paused", root, i), "x"))
	}
	putInTxns(t, ctx, cli, ops)
	_, errs, err = ClaimEach(ctx, cli, tick(6))
	if err != nil {
		t.Fatalf("a tick of %d paused jobs: %v", MaxEach, err)
	}
	for i := range errs {
		if !errors.Is(errs[i], errPausedForTest) {
			t.Fatalf("job %d: %v, want %v", i, errs[i], errPausedForTest)
		}
	}
}

// putInTxns commits ops in transactions of etcd's default --max-txn-ops
// (128): a few round trips, where one a key took most of a loaded
// machine's deadline.
func putInTxns(t *testing.T, ctx context.Context, cli *clientv3.Client, ops []clientv3.Op) {
	t.Helper()
	for len(ops) > 0 {
		n := min(len(ops), 128)
		if _, err := cli.Txn(ctx).Then(ops[:n]...).Commit(); err != nil {
			t.Fatal(err)
		}
		ops = ops[n:]
	}
}
