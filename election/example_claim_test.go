package election_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/batonhq/baton/election"
)

func ExampleClaimSeq() {
	cli := connect()
	defer cli.Close()
	ctx := context.Background()

	tick := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC).UnixNano()
	for _, replica := range []string{"web-1", "web-2", "web-3"} {
		_, err := election.ClaimSeq(ctx, cli, "/baton/example/nightly", tick, election.ClaimedBy(replica))
		var claimed *election.ClaimedError
		switch {
		case err == nil:
			fmt.Println(replica, "runs the tick")
		case errors.As(err, &claimed):
			fmt.Println(replica, "skips it: claimed by", claimed.Holder)
		default:
			log.Fatal(err)
		}
	}
	_, by, _, _ := election.LastClaim(ctx, cli, "/baton/example/nightly")
	fmt.Println("ran on", by)
	// Output:
	// web-1 runs the tick
	// web-2 skips it: claimed by web-1
	// web-3 skips it: claimed by web-1
	// ran on web-1
}

// A leader claims under its term, so a claim fails once the term is over,
// even from a leader that was paused past its deadline and does not know.
func ExampleUnderTerm() {
	cli := connect()
	defer cli.Close()

	e, err := election.New(cli, "billing", election.WithIdentity("web-1"), election.WithTTL(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	var term election.Term
	err = e.Run(context.Background(), func(ctx context.Context, t election.Term) {
		term = t
		c, err := election.ClaimSeq(ctx, cli, "/baton/example/billing", 1, election.UnderTerm(t.Fence), election.ClaimedBy(t.Identity))
		fmt.Println("claimed in the term:", err == nil, c.Revision > t.Revision)
		// Returning resigns: the term ends.
	})
	fmt.Println("Run returned:", err)
	_, err = election.ClaimSeq(context.Background(), cli, "/baton/example/billing", 2, election.UnderTerm(term.Fence))
	fmt.Println("claim after the term:", errors.Is(err, election.ErrNotLeader))
	// Output:
	// claimed in the term: true true
	// Run returned: <nil>
	// claim after the term: true
}

// ClaimOnce runs a piece of work once for a key however often it is asked,
// as a retried timer asks: not while another run holds it, and not again
// within the window after one succeeded.
func ExampleClaimOnce() {
	cli := connect()
	defer cli.Close()
	ctx := context.Background()
	const key = "export-2026-11-30"
	if err := election.CheckOnceKey(key); err != nil {
		log.Fatal(err)
	}
	claim := func(who string) (*election.Once, error) {
		return election.ClaimOnce(ctx, cli, key, time.Hour, election.WithIdentity(who), election.WithTTL(5*time.Second))
	}

	once, err := claim("web-1")
	if err != nil {
		log.Fatal(err)
	}
	// The work runs under once.Context(), which ends if the claim is lost.
	_, err = claim("web-2")
	fmt.Println("while web-1 runs:", errors.Is(err, election.ErrBusy))
	if err := once.Succeeded(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = claim("web-3")
	var done *election.OnceError
	if errors.As(err, &done) && errors.Is(err, election.ErrDone) {
		fmt.Println("after it succeeded: done by", done.By)
	}
	// Output:
	// while web-1 runs: true
	// after it succeeded: done by web-1
}
