package claims

import (
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestCountedClaimsStopAtTheirMax: claims counted under one key commit
// while fewer than the maximum were, whether made one by one (ClaimSeq) or
// together (ClaimEach), and the one past it fails with the counter's error
// and writes nothing.
func TestCountedClaimsStopAtTheirMax(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	errMax := errors.New("at the maximum")
	counted := Counted("/c/runs", 3, "3", errMax)
	for seq := int64(1); seq <= 2; seq++ {
		if _, err := election.ClaimSeq(ctx, cli, "/c/last", seq, counted); err != nil {
			t.Fatalf("claim %d: %v", seq, err)
		}
	}
	_, errs, err := ClaimEach(ctx, cli, []ClaimItem{{Key: "/c/last", Seq: 3, Opts: []election.ClaimOption{counted}}})
	if err != nil || errs[0] != nil {
		t.Fatalf("the third claim, in a ClaimEach: %v, %v", err, errs)
	}
	if _, err := election.ClaimSeq(ctx, cli, "/c/last", 4, counted); !errors.Is(err, errMax) {
		t.Errorf("the fourth claim, by ClaimSeq: %v, want %v", err, errMax)
	}
	_, errs, err = ClaimEach(ctx, cli, []ClaimItem{{Key: "/c/last", Seq: 5, Opts: []election.ClaimOption{counted}}})
	if err != nil || !errors.Is(errs[0], errMax) {
		t.Errorf("the fifth claim, in a ClaimEach: %v, %v, want %v", err, errs, errMax)
	}
	resp, err := cli.Get(ctx, "/c/runs")
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Version != 3 {
		t.Fatalf("the counter: %v, %v, want version 3", resp, err)
	}
	if seq, _, ok, err := election.LastClaim(ctx, cli, "/c/last"); err != nil || !ok || seq != 3 {
		t.Errorf("the last claim: %d, %v, %v, want 3", seq, ok, err)
	}
}
