package claims

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func deadlineCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func lastClaim(t *testing.T, cli *clientv3.Client, key string) (int64, string) {
	t.Helper()
	seq, holder, ok, err := election.LastClaim(deadlineCtx(t, 5*time.Second), cli, key)
	if err != nil || !ok {
		t.Fatalf("LastClaim(%s) = %d, %q, %v, %v; want a claim", key, seq, holder, ok, err)
	}
	return seq, holder
}

func TestClaimExclusiveMarker(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	const (
		key     = "/t/jobs/s/report/last"
		running = "/t/jobs/s/report/running/"
	)
	newLease := func() clientv3.LeaseID {
		t.Helper()
		s, err := election.NewSession(ctx, cli, election.WithTTL(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s.Close(ctx)
		})
		return s.Lease()
	}
	claim := func(seq int64, marker string, lease clientv3.LeaseID) (election.Claim, error) {
		return election.ClaimSeq(ctx, cli, key, seq, WithMarker(running+marker, lease), Exclusive(running), election.ClaimedBy(marker))
	}

	c1, err := claim(1, "web-1", newLease())
	if err != nil {
		t.Fatal(err)
	}
	if c1.Fence.Key != running+"web-1" {
		t.Fatalf("claim fence = %v, want the marker %s", c1.Fence, running+"web-1")
	}
	if ok, err := c1.Fence.Valid(ctx, cli); err != nil || !ok {
		t.Fatalf("marker fence valid = %v, %v; want true", ok, err)
	}

	// A later tick while the run is in progress is skipped, not stored.
	if _, err := claim(2, "web-2", newLease()); !errors.Is(err, election.ErrBusy) {
		t.Fatalf("exclusive claim while a marker exists = %v, want election.ErrBusy", err)
	}
	if seq, _ := lastClaim(t, cli, key); seq != 1 {
		t.Fatalf("election.LastClaim = %d after a busy claim, want 1", seq)
	}

	if err := Release(ctx, cli, c1); err != nil {
		t.Fatal(err)
	}
	lease2 := newLease()
	c2, err := claim(2, "web-2", lease2)
	if err != nil {
		t.Fatalf("exclusive claim after Release: %v", err)
	}

	// The runner's session ends without a Release: its marker goes with it.
	if _, err := claim(3, "web-1", newLease()); !errors.Is(err, election.ErrBusy) {
		t.Fatalf("exclusive claim while web-2 runs = %v, want election.ErrBusy", err)
	}
	if _, err := cli.Revoke(ctx, lease2); err != nil {
		t.Fatal(err)
	}
	c3, err := claim(3, "web-1", newLease())
	if err != nil {
		t.Fatalf("exclusive claim after the runner's lease was revoked: %v", err)
	}
	if !(c1.Revision < c2.Revision && c2.Revision < c3.Revision) {
		t.Fatalf("claim revisions do not grow: %d, %d, %d", c1.Revision, c2.Revision, c3.Revision)
	}
	if seq, holder := lastClaim(t, cli, key); seq != 3 || holder != "web-1" {
		t.Fatalf("election.LastClaim = %d by %q, want 3 by web-1", seq, holder)
	}

	// c1's marker key now belongs to c3: releasing c1 again must not end c3.
	if err := Release(ctx, cli, c1); err != nil {
		t.Fatal(err)
	}
	if ok, err := c3.Fence.Valid(ctx, cli); err != nil || !ok {
		t.Fatalf("a stale Release removed the current run's marker: valid = %v, %v", ok, err)
	}
	if err := Release(ctx, cli, election.Claim{Seq: 9}); err != nil {
		t.Fatalf("Release of a claim without a marker = %v, want nil", err)
	}
}

// TestWithdrawGivesAClaimBack withdraws a claim not acted on: the sequence
// can be claimed again, and the marker is gone; a claim already superseded
// stays.
func TestWithdrawGivesAClaimBack(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 10*time.Second)
	sess, err := election.NewSession(ctx, cli, election.WithTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(context.Background())
	const key, marker = "/w/last", "/w/running/20"
	if _, err := election.ClaimSeq(ctx, cli, key, 10, election.ClaimedBy("a")); err != nil {
		t.Fatal(err)
	}
	c, err := election.ClaimSeq(ctx, cli, key, 20, election.ClaimedBy("a"), WithMarker(marker, sess.Lease()))
	if err != nil {
		t.Fatal(err)
	}
	if err := Withdraw(ctx, cli, key, c, 20, "a"); err == nil {
		t.Fatal("withdrawing to the claim's own sequence succeeded")
	}
	if err := Withdraw(ctx, cli, key, c, 10, "a"); err != nil {
		t.Fatal(err)
	}
	if seq, holder, _, err := election.LastClaim(ctx, cli, key); err != nil || seq != 10 || holder != "a" {
		t.Fatalf("after withdrawal the last claim is %d by %q (%v), want 10 by a", seq, holder, err)
	}
	if resp, _ := cli.Get(ctx, marker); len(resp.Kvs) != 0 {
		t.Fatal("the marker outlived the withdrawal")
	}
	// A successor claims the tick, once; the old claim cannot be withdrawn
	// over it.
	if _, err := election.ClaimSeq(ctx, cli, key, 20, election.ClaimedBy("b"), IfClaimedBefore()); err != nil {
		t.Fatalf("claim after withdrawal: %v", err)
	}
	if err := Withdraw(ctx, cli, key, c, 10, "a"); !errors.Is(err, ErrNotWithdrawn) {
		t.Fatalf("withdrawing a superseded claim: %v, want ErrNotWithdrawn", err)
	}
	if seq, holder, _, _ := election.LastClaim(ctx, cli, key); seq != 20 || holder != "b" {
		t.Fatalf("the successor's claim became %d by %q", seq, holder)
	}
}

// TestIfClaimedOrKnownBefore: a key never claimed is claimed only while the
// known key was created before the revision given and holds a sequence not
// after the one claimed; a key claimed before is claimed as with
// IfClaimedBefore.
func TestIfClaimedOrKnownBefore(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 10*time.Second)
	put := func(key string, seq int64) int64 {
		t.Helper()
		resp, err := cli.Put(ctx, key, claimcond.Value(seq, "publisher"))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	put("/k/early/since", 10)
	put("/k/after/since", 11)
	term := put("/k/term", 0)
	put("/k/late/since", 1)
	claim := func(job string) error {
		_, err := election.ClaimSeq(ctx, cli, "/k/"+job+"/last", 10, IfClaimedOrKnownBefore("/k/"+job+"/since", term))
		return err
	}
	if err := claim("early"); err != nil {
		t.Errorf("never claimed, known before the term, since the sequence: %v, want a claim", err)
	}
	if err := claim("early"); !errors.Is(err, election.ErrClaimed) {
		t.Errorf("claimed again: %v, want ErrClaimed", err)
	}
	if err := claim("after"); !errors.Is(err, ErrNeverClaimed) {
		t.Errorf("never claimed, known before the term, since after the sequence: %v, want ErrNeverClaimed", err)
	}
	if err := claim("late"); !errors.Is(err, ErrNeverClaimed) {
		t.Errorf("never claimed, known after the term: %v, want ErrNeverClaimed", err)
	}
	if err := claim("none"); !errors.Is(err, ErrNeverClaimed) {
		t.Errorf("never claimed, not known: %v, want ErrNeverClaimed", err)
	}
	if _, err := election.ClaimSeq(ctx, cli, "/k/late/last", 5); err != nil {
		t.Fatal(err)
	}
	if err := claim("late"); err != nil {
		t.Errorf("claimed before, spec after the term: %v, want a claim", err)
	}
}
