package claims

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestClaimAllIsAllOrNothing: a batch commits every claim or none, with the
// conditions of single claims, and its claims then block single ones.
func TestClaimAllIsAllOrNothing(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := election.NewSession(ctx, cli, election.WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	termResp, err := cli.Put(ctx, "/t/leader", "me")
	if err != nil {
		t.Fatal(err)
	}
	term := election.Fence{Key: "/t/leader", Revision: termResp.Header.Revision}

	items := func(seq int64, fresh bool) []ClaimItem {
		var out []ClaimItem
		for i := range 3 {
			key := fmt.Sprintf("/t/jobs/j%d/last", i)
			out = append(out, ClaimItem{Key: key, Seq: seq, Fresh: fresh, Opts: []election.ClaimOption{
				election.UnderTerm(term), election.ClaimedBy("me"),
				WithMarker(fmt.Sprintf("/t/jobs/j%d/running/%d", i, seq), sess.Lease()),
			}})
		}
		return out
	}
	claims, err := ClaimAll(ctx, cli, items(10, true))
	if err != nil {
		t.Fatalf("first batch: %v", err)
	}
	for i, c := range claims {
		if c.Fence.Revision != c.Revision || c.Revision == 0 {
			t.Errorf("claim %d: fence %v, revision %d", i, c.Fence, c.Revision)
		}
	}
	// Once claimed, a single claim of the same tick fails, and so does a
	// batch; a later tick in a batch commits.
	if _, err := election.ClaimSeq(ctx, cli, "/t/jobs/j1/last", 10); !errors.Is(err, election.ErrClaimed) {
		t.Fatalf("single claim of a batched tick: %v, want election.ErrClaimed", err)
	}
	if _, err := ClaimAll(ctx, cli, items(10, false)); !errors.Is(err, ErrClaimConflict) {
		t.Fatalf("batch of claimed ticks: %v, want ErrClaimConflict", err)
	}
	if _, err := ClaimAll(ctx, cli, items(11, false)); err != nil {
		t.Fatalf("batch of the next tick: %v", err)
	}

	// One item that cannot be claimed fails the whole batch: nothing of it
	// is written.
	if _, err := election.ClaimSeq(ctx, cli, "/t/jobs/j2/last", 12); err != nil {
		t.Fatal(err)
	}
	if _, err := ClaimAll(ctx, cli, items(12, false)); !errors.Is(err, ErrClaimConflict) {
		t.Fatalf("batch with one claimed item: %v, want ErrClaimConflict", err)
	}
	for i := range 2 {
		seq, _, _, err := election.LastClaim(ctx, cli, fmt.Sprintf("/t/jobs/j%d/last", i))
		if err != nil || seq != 11 {
			t.Fatalf("j%d's last claim is %d (%v) after a failed batch, want 11", i, seq, err)
		}
	}

	// A deposed term fails the batch.
	if _, err := cli.Delete(ctx, term.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := ClaimAll(ctx, cli, items(13, false)); !errors.Is(err, ErrClaimConflict) {
		t.Fatalf("batch under a deposed term: %v, want ErrClaimConflict", err)
	}
}
