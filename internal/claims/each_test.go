package claims

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestClaimEachTellsEachOutcome: one transaction claims the items that may
// be claimed and tells, for each other, what ClaimSeq would say; a term
// that ended claims nothing.
func TestClaimEachTellsEachOutcome(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	sess, err := election.NewSession(ctx, cli, election.WithTTL(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	termResp, err := cli.Put(ctx, "/e/leader", "me")
	if err != nil {
		t.Fatal(err)
	}
	term := election.Fence{Key: "/e/leader", Revision: termResp.Header.Revision}
	put := func(key string) {
		t.Helper()
		if _, err := cli.Put(ctx, key, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := election.ClaimSeq(ctx, cli, "/e/done/last", 20); err != nil {
		t.Fatal(err)
	}
	if _, err := election.ClaimSeq(ctx, cli, "/e/old/last", 5); err != nil {
		t.Fatal(err)
	}
	put("/e/paused/paused")
	put("/e/busy/running/1")
	// Known before knownRev: since the sequence claimed, and since after it.
	for key, seq := range map[string]int64{"/e/known/since": 10, "/e/after/since": 11} {
		if _, err := cli.Put(ctx, key, claimcond.Value(seq, "publisher")); err != nil {
			t.Fatal(err)
		}
	}
	knownRev := termResp.Header.Revision + 100
	item := func(job string, opts ...election.ClaimOption) ClaimItem {
		return ClaimItem{Key: "/e/" + job + "/last", Seq: 10, Opts: append([]election.ClaimOption{
			election.UnderTerm(term), election.ClaimedBy("me"),
			WithMarker(fmt.Sprintf("/e/%s/running/10", job), sess.Lease()),
			UnlessExists("/e/"+job+"/paused", errPausedForTest)}, opts...)}
	}
	items := []ClaimItem{
		item("new"),
		item("old"),
		item("done"),
		item("paused"),
		item("busy", Exclusive("/e/busy/running/")),
		item("never", IfClaimedBefore()),
		item("known", IfClaimedOrKnownBefore("/e/known/since", knownRev)),
		item("unknown", IfClaimedOrKnownBefore("/e/unknown/since", knownRev)),
		item("after", IfClaimedOrKnownBefore("/e/after/since", knownRev)),
	}
	claims, errs, err := ClaimEach(ctx, cli, items)
	if err != nil {
		t.Fatal(err)
	}
	want := []error{nil, nil, election.ErrClaimed, errPausedForTest, election.ErrBusy, ErrNeverClaimed, nil, ErrNeverClaimed, ErrNeverClaimed}
	for i, w := range want {
		switch {
		case w == nil && errs[i] != nil:
			t.Errorf("%s: %v, want a claim", items[i].Key, errs[i])
		case w == nil && (claims[i].Revision == 0 || claims[i].Fence.Revision != claims[i].Revision):
			t.Errorf("%s: claim %+v, want a revision and the marker's fence", items[i].Key, claims[i])
		case w != nil && !errors.Is(errs[i], w):
			t.Errorf("%s: %v, want %v", items[i].Key, errs[i], w)
		}
	}
	var ce *election.ClaimedError
	if !errors.As(errs[2], &ce) || ce.Seq != 20 {
		t.Errorf("done: %v, want a ClaimedError of seq 20", errs[2])
	}
	for _, job := range []string{"new", "old", "known"} {
		if seq, _ := lastClaim(t, cli, "/e/"+job+"/last"); seq != 10 {
			t.Errorf("%s's last claim is %d, want 10", job, seq)
		}
	}
	// A term that ended claims nothing.
	if _, err := cli.Delete(ctx, term.Key); err != nil {
		t.Fatal(err)
	}
	_, errs, err = ClaimEach(ctx, cli, []ClaimItem{{Key: "/e/next/last", Seq: 1, Opts: []election.ClaimOption{election.UnderTerm(term)}}})
	if err != nil || !errors.Is(errs[0], election.ErrNotLeader) {
		t.Fatalf("under an ended term: %v, %v; want ErrNotLeader", errs, err)
	}
	if _, _, ok, _ := election.LastClaim(ctx, cli, "/e/next/last"); ok {
		t.Error("a claim committed under an ended term")
	}
}

var errPausedForTest = errors.New("paused")
