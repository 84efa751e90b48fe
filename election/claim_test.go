package election

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// claimResult is what one racing claimant got.
type claimResult struct {
	who   int
	seq   int64
	claim Claim
	err   error
}

// raceClaims runs n claimants, each on a client of its own, released at the
// same moment; claimant i claims seq(i) at key.
func raceClaims(t *testing.T, srv *etcdtest.Space, key string, n int, seq func(i int) int64) []claimResult {
	t.Helper()
	clients := make([]*clientv3.Client, n)
	for i := range clients {
		clients[i] = srv.Client(t)
	}
	ctx := deadlineCtx(t, 10*time.Second)
	start := make(chan struct{})
	results := make([]claimResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			c, err := ClaimSeq(ctx, clients[i], key, seq(i), ClaimedBy(fmt.Sprint("replica-", i)))
			results[i] = claimResult{who: i, seq: seq(i), claim: c, err: err}
		})
	}
	close(start)
	wg.Wait()
	return results
}

func lastClaim(t *testing.T, cli *clientv3.Client, key string) (int64, string) {
	t.Helper()
	seq, holder, ok, err := LastClaim(deadlineCtx(t, 5*time.Second), cli, key)
	if err != nil || !ok {
		t.Fatalf("LastClaim(%s) = %d, %q, %v, %v; want a claim", key, seq, holder, ok, err)
	}
	return seq, holder
}

func TestClaimSeqOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 10*time.Second)
	const key = "/t/jobs/s/report/last"

	if _, _, ok, err := LastClaim(ctx, cli, key); ok || err != nil {
		t.Fatalf("LastClaim of a fresh key = ok %v, %v; want nothing", ok, err)
	}
	if _, err := ClaimSeq(ctx, cli, key, 99); err != nil {
		t.Fatalf("first claim: %v", err)
	}

	results := raceClaims(t, srv, key, 8, func(int) int64 { return 100 })
	var winner *claimResult
	for i, r := range results {
		switch {
		case r.err == nil && winner != nil:
			t.Fatalf("seq 100 claimed twice: by replica-%d and replica-%d", winner.who, r.who)
		case r.err == nil:
			winner = &results[i]
		case !errors.Is(r.err, ErrClaimed):
			t.Fatalf("replica-%d: %v, want ErrClaimed", r.who, r.err)
		}
	}
	if winner == nil {
		t.Fatal("nobody claimed seq 100")
	}
	if seq, holder := lastClaim(t, cli, key); seq != 100 || holder != fmt.Sprint("replica-", winner.who) {
		t.Fatalf("LastClaim = %d by %q, want 100 by replica-%d", seq, holder, winner.who)
	}

	for _, seq := range []int64{100, 99, 0} {
		_, err := ClaimSeq(ctx, cli, key, seq)
		var ce *ClaimedError
		if !errors.Is(err, ErrClaimed) || !errors.As(err, &ce) {
			t.Errorf("claim of seq %d after 100 = %v, want a ClaimedError", seq, err)
			continue
		}
		if want := (ClaimedError{Key: key, Want: seq, Seq: 100, Holder: fmt.Sprint("replica-", winner.who)}); *ce != want {
			t.Errorf("claim of seq %d after 100: %+v, want %+v", seq, *ce, want)
		}
	}
	next, err := ClaimSeq(ctx, cli, key, 101, ClaimedBy("late"))
	if err != nil {
		t.Fatalf("claim of seq 101: %v", err)
	}
	if next.Seq != 101 || next.Revision <= winner.claim.Revision {
		t.Fatalf("claim = %+v; want seq 101 with a revision above %d", next, winner.claim.Revision)
	}
	if seq, holder := lastClaim(t, cli, key); seq != 101 || holder != "late" {
		t.Fatalf("LastClaim = %d by %q, want 101 by late", seq, holder)
	}
}

// Claimants of different sequences race on a key nobody claimed yet: each
// success must have raised the stored sequence, and the highest must win.
func TestClaimSeqFirstClaimRace(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	const key = "/t/jobs/s/fresh/last"
	const n = 10
	results := raceClaims(t, srv, key, n, func(i int) int64 { return int64(1000 + (i*7)%n) })

	ctx := deadlineCtx(t, 10*time.Second)
	successes := 0
	for _, r := range results {
		if r.err != nil {
			if !errors.Is(r.err, ErrClaimed) {
				t.Errorf("replica-%d seq %d: %v, want success or ErrClaimed", r.who, r.seq, r.err)
			}
			continue
		}
		successes++
		if r.claim.Seq != r.seq {
			t.Errorf("replica-%d: Claim.Seq = %d, want %d", r.who, r.claim.Seq, r.seq)
		}
		// What the key held just before this claim committed, and just after.
		before, err := cli.Get(ctx, key, clientv3.WithRev(r.claim.Revision-1))
		if err != nil {
			t.Fatal(err)
		}
		if len(before.Kvs) > 0 {
			prev, _, err := claimcond.Parse(string(before.Kvs[0].Value))
			if err != nil || prev >= r.seq {
				t.Errorf("replica-%d claimed seq %d over a stored seq %d (%v)", r.who, r.seq, prev, err)
			}
		}
		after, err := cli.Get(ctx, key, clientv3.WithRev(r.claim.Revision))
		if err != nil || len(after.Kvs) != 1 || after.Kvs[0].ModRevision != r.claim.Revision {
			t.Fatalf("replica-%d: key at its claim's revision %d: %v, %v", r.who, r.claim.Revision, after, err)
		}
		if got, _, _ := claimcond.Parse(string(after.Kvs[0].Value)); got != r.seq {
			t.Errorf("replica-%d: stored seq %d at its claim's revision, want %d", r.who, got, r.seq)
		}
	}
	if successes == 0 {
		t.Fatal("no claim succeeded")
	}
	if seq, _ := lastClaim(t, cli, key); seq != 1000+n-1 {
		t.Fatalf("LastClaim = %d, want the highest sequence %d", seq, 1000+n-1)
	}
}

func TestClaimUnderTermFailsForDeposedLeader(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	const key = "/t/jobs/s/report/last"

	a := startCandidate(t, srv.Client(t), "jobs", "a", WithPrefix("/t"))
	ta := waitFor(t, a.terms, 5*time.Second, "a elected")
	if _, err := ClaimSeq(ctx, cli, key, 1, UnderTerm(ta.term.Fence)); err != nil {
		t.Fatalf("claim under a current term: %v", err)
	}

	b := startCandidate(t, srv.Client(t), "jobs", "b", WithPrefix("/t"))
	waitKeys(t, cli, "/t/election/jobs/", 2)
	close(a.release) // a resigns; b leads
	tb := waitFor(t, b.terms, 5*time.Second, "b elected")

	if _, err := ClaimSeq(ctx, cli, key, 2, UnderTerm(ta.term.Fence)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("claim under a's ended term = %v, want ErrNotLeader", err)
	}
	if seq, _ := lastClaim(t, cli, key); seq != 1 {
		t.Fatalf("a deposed leader's claim was stored: LastClaim = %d", seq)
	}
	if _, err := ClaimSeq(ctx, cli, key, 2, UnderTerm(tb.term.Fence)); err != nil {
		t.Fatalf("claim under b's term: %v", err)
	}

	// A term whose key is deleted is over at once, whoever deleted it.
	if _, err := cli.Delete(ctx, tb.term.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := ClaimSeq(ctx, cli, key, 3, UnderTerm(tb.term.Fence)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("claim under a term whose key was deleted = %v, want ErrNotLeader", err)
	}
	// The first claim of a key is guarded by the term, too.
	if _, err := ClaimSeq(ctx, cli, "/t/jobs/s/other/last", 1, UnderTerm(tb.term.Fence)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("first claim of a key under an ended term = %v, want ErrNotLeader", err)
	}
	if _, _, ok, _ := LastClaim(ctx, cli, "/t/jobs/s/other/last"); ok {
		t.Fatal("an ended term's first claim was stored")
	}
}

func TestClaimBadInput(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 10*time.Second)
	for _, tc := range []struct {
		name string
		cli  *clientv3.Client
		key  string
		seq  int64
		opts []ClaimOption
		want string // in the error message
	}{
		{"nil client", nil, "/t/k", 1, nil, "nil etcd client"},
		{"empty key", cli, "", 1, nil, `claim ""`},
		{"negative seq", cli, "/t/k", -1, nil, "seq -1"},
		{"nil option", cli, "/t/k", 1, []ClaimOption{nil}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("panic: %v", p)
					}
				}()
				_, err = ClaimSeq(ctx, tc.cli, tc.key, tc.seq, tc.opts...)
			}()
			if strings.HasPrefix(fmt.Sprint(err), "panic") {
				t.Fatalf("ClaimSeq panicked: %v", err)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ClaimSeq = %v, want success", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ClaimSeq = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := cli.Put(ctx, "/t/garbage", "not a claim"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := LastClaim(ctx, cli, "/t/garbage"); err == nil || !strings.Contains(err.Error(), "/t/garbage") {
		t.Fatalf("LastClaim of a malformed value = %v, want an error naming the key", err)
	}
}
