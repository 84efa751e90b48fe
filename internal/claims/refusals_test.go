package claims

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestRefusalsTellTheClaimsClaimEachWouldRefuse: of items whose keys hold
// a claim of their tick, a later one, an earlier one or none, Refusals
// refuses the first two as ClaimEach does, and leaves the others; under a
// term that has ended it refuses none, and ClaimEach says the term ended.
func TestRefusalsTellTheClaimsClaimEachWouldRefuse(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	term, err := cli.Put(ctx, "/refusals/leader", "me")
	if err != nil {
		t.Fatal(err)
	}
	fence := election.Fence{Key: "/refusals/leader", Revision: term.Header.Revision}
	// Three claimed at 10, by another leader; one never.
	var setup []ClaimItem
	for _, k := range []string{"/refusals/same", "/refusals/later", "/refusals/earlier"} {
		setup = append(setup, ClaimItem{Key: k, Seq: 10, Opts: []election.ClaimOption{election.ClaimedBy("old")}})
	}
	if _, errs, err := ClaimEach(ctx, cli, setup); err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	opts := []election.ClaimOption{election.UnderTerm(fence), election.ClaimedBy("me")}
	items := []ClaimItem{
		{Key: "/refusals/same", Seq: 10, Opts: opts},
		{Key: "/refusals/later", Seq: 9, Opts: opts},
		{Key: "/refusals/earlier", Seq: 11, Opts: opts},
		{Key: "/refusals/never", Seq: 11, Opts: opts},
	}
	refusals, ok, err := Refusals(ctx, cli, items)
	if err != nil || !ok {
		t.Fatalf("Refusals: ok %v, %v", ok, err)
	}
	_, want, err := ClaimEach(ctx, cli, items[:2])
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		var got, exp string
		if refusals[i] != nil {
			got = refusals[i].Error()
		}
		if i < 2 {
			exp = want[i].Error()
		}
		if got != exp {
			t.Errorf("%s seq %d: refused with %q, where ClaimEach says %q", it.Key, it.Seq, got, exp)
		}
	}

	// The term ends: nothing is refused by the read.
	if _, err := cli.Delete(ctx, "/refusals/leader"); err != nil {
		t.Fatal(err)
	}
	if refusals, ok, err := Refusals(ctx, cli, items); err != nil || ok || refusals != nil {
		t.Errorf("under an ended term: refusals %v, ok %v, %v; want none", refusals, ok, err)
	}
}
