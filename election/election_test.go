package election

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// waitFor receives from ch within d or fails the test.
func waitFor[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out after %v waiting for %s", d, what)
		var zero T
		return zero
	}
}

type elected struct {
	id   string
	term Term
	ctx  context.Context
	at   time.Time
}

// candidate runs an elector in the background and reports its terms.
type candidate struct {
	e       *Elector
	cancel  context.CancelFunc
	terms   chan elected
	release chan struct{} // closing it makes lead return while leading
	done    chan struct{} // closed when Run returned
	err     error         // what Run returned
}

func startCandidate(t *testing.T, cli *clientv3.Client, name, id string, opts ...Option) *candidate {
	t.Helper()
	e, err := New(cli, name, append([]Option{WithIdentity(id), WithTTL(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{e: e, cancel: cancel, terms: make(chan elected, 16), release: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = e.Run(ctx, func(ctx context.Context, term Term) {
			c.terms <- elected{id: id, term: term, ctx: ctx, at: time.Now()}
			select {
			case <-ctx.Done():
			case <-c.release:
			}
		})
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

func (c *candidate) stop(t *testing.T) error {
	t.Helper()
	c.cancel()
	return c.wait(t)
}

func (c *candidate) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-c.done:
		return c.err
	case <-time.After(10 * time.Second):
		t.Errorf("Run did not return within 10s")
		return nil
	}
}

func TestElectionOneLeaderAndGracefulHandover(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	// A TTL far longer than the wait for b: only a resignation hands over
	// in time, not the expiry of a's lease.
	a := startCandidate(t, srv.Client(t), "jobs", "a", WithTTL(time.Minute))
	ta := waitFor(t, a.terms, 5*time.Second, "a elected")
	b := startCandidate(t, srv.Client(t), "jobs", "b", WithTTL(time.Minute))

	l, err := b.e.Leader(context.Background())
	if err != nil || l.Identity != "a" || l.Fence != ta.term.Fence {
		t.Fatalf("Leader() = %+v, %v; want a with fence %v", l, err, ta.term.Fence)
	}
	select {
	case tb := <-b.terms:
		t.Fatalf("b elected while a leads: %+v", tb.term)
	default:
	}

	a.cancel() // graceful stop: a resigns
	tb := waitFor(t, b.terms, 5*time.Second, "b elected after a resigned")
	if ta.ctx.Err() == nil {
		t.Fatal("a's term context is live after a stopped")
	}
	if err := a.wait(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if tb.term.Revision <= ta.term.Revision {
		t.Fatalf("fence did not grow: a %d, b %d", ta.term.Revision, tb.term.Revision)
	}
}

// eventually polls cond until it holds or d passes on the real clock.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkNoLeaks fails the test if a goroutine started by this package's
// non-test code is still running shortly after everything was stopped.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	files := []string{"/election/session.go", "/election/election.go", "/election/observe.go", "/election/mutex.go", "/election/claim.go"}
	var stuck string
	leaked := func() bool {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			for _, f := range files {
				if strings.Contains(g, f) {
					stuck = g
					return true
				}
			}
		}
		return false
	}
	deadline := time.Now().Add(5 * time.Second)
	for leaked() {
		if time.Now().After(deadline) {
			t.Fatalf("goroutine still running after stop:\n%s", stuck)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunReturnsAfterLeadReturnsAndResigns(t *testing.T) {
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	a := startCandidate(t, cli, "once", "a")
	ta := waitFor(t, a.terms, 5*time.Second, "a elected")
	close(a.release) // lead returns while a still leads
	if err := a.wait(t); err != nil {
		t.Fatalf("Run = %v, want nil after lead returned", err)
	}
	resp, err := cli.Get(context.Background(), ta.term.Key)
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("leader key still present after resign: %v %v", resp, err)
	}
	checkNoLeaks(t)
}

// TestPartitionedLeaderStopsBeforeSuccessorStarts is G2: the old leader's
// context is done before any other candidate can be elected.
func TestPartitionedLeaderStopsBeforeSuccessorStarts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	for run := 0; run < 3; run++ {
		t.Run(fmt.Sprint("run", run), func(t *testing.T) {
			t.Parallel()
			srv := etcdtest.Shared(t)
			proxy := etcdtest.NewProxy(t, srv.Addr())
			a := startCandidate(t, srv.NewClient(t, proxy.Endpoint()), "part", "a")
			ta := waitFor(t, a.terms, 5*time.Second, "a elected")
			b := startCandidate(t, srv.Client(t), "part", "b")

			aDone := make(chan time.Time, 1)
			go func() {
				<-ta.ctx.Done()
				aDone <- time.Now()
			}()
			proxy.Blackhole()
			tb := waitFor(t, b.terms, 10*time.Second, "b elected after a was partitioned")
			stoppedAt := waitFor(t, aDone, time.Second, "a's term context to be done")
			if !stoppedAt.Before(tb.at) {
				t.Fatalf("a's term ended at %v, after b was elected at %v", stoppedAt, tb.at)
			}
			if cause := context.Cause(ta.ctx); !errors.Is(cause, ErrSessionExpired) {
				t.Fatalf("a's term ended with %v, want ErrSessionExpired", cause)
			}
			t.Logf("a stopped %v before b was elected", tb.at.Sub(stoppedAt))

			// A deposed leader's guarded write does not commit.
			cli := srv.Client(t)
			resp, err := cli.Txn(context.Background()).If(ta.term.Cmp()).Then(clientv3.OpPut("/fenced", "a")).Commit()
			if err != nil || resp.Succeeded {
				t.Fatalf("write fenced by a's old term: succeeded=%v err=%v", resp != nil && resp.Succeeded, err)
			}
			resp, err = cli.Txn(context.Background()).If(tb.term.Cmp()).Then(clientv3.OpPut("/fenced", "b")).Commit()
			if err != nil || !resp.Succeeded {
				t.Fatalf("write fenced by b's current term failed: %v", err)
			}
		})
	}
}

func TestCandidateRecampaignsAfterEtcdLosesItsData(t *testing.T) {
	srv := etcdtest.Start(t)
	a := startCandidate(t, srv.Client(t), "wipe", "a")
	ta := waitFor(t, a.terms, 5*time.Second, "a elected")
	b := startCandidate(t, srv.Client(t), "wipe", "b")

	srv.Wipe(t)
	waitFor(t, ta.ctx.Done(), 5*time.Second, "a's term to end after etcd lost its lease")
	var next elected
	select {
	case next = <-a.terms:
	case next = <-b.terms:
	case <-time.After(10 * time.Second):
		t.Fatal("no candidate elected after etcd came back empty")
	}
	l, err := a.e.Leader(context.Background())
	if err != nil || l.Fence != next.term.Fence || l.Identity != next.id {
		t.Fatalf("Leader() = %+v, %v; want %s at %v", l, err, next.id, next.term.Fence)
	}
	// Exactly one term is live.
	select {
	case other := <-a.terms:
		t.Fatalf("second leader %s while %s leads", other.id, next.id)
	case other := <-b.terms:
		t.Fatalf("second leader %s while %s leads", other.id, next.id)
	default:
	}
	a.stop(t)
	b.stop(t)
	checkNoLeaks(t)
}

func TestObserveReportsLeadersAndNoLeader(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs, err := Observe(ctx, cli, DefaultPrefix, "obs")
	if err != nil {
		t.Fatal(err)
	}
	if l := waitFor(t, obs, 5*time.Second, "first observation"); !l.None() {
		t.Fatalf("first observation = %+v, want no leader", l)
	}
	a := startCandidate(t, cli, "obs", "a")
	waitFor(t, a.terms, 5*time.Second, "a elected")
	next := func() Leader {
		for {
			l := waitFor(t, obs, 5*time.Second, "an observation")
			if l.None() || !l.Since.IsZero() {
				return l // skip the moment between election and recording it
			}
		}
	}
	if l := next(); l.Identity != "a" {
		t.Fatalf("observed %+v, want a", l)
	}
	a.stop(t)
	if l := next(); !l.None() {
		t.Fatalf("observed %+v after a stopped, want no leader", l)
	}

	// Survives compaction: compact past the watch's revision, then elect b.
	resp, err := cli.Get(ctx, "any")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	b := startCandidate(t, cli, "obs", "b")
	waitFor(t, b.terms, 5*time.Second, "b elected")
	if l := next(); l.Identity != "b" {
		t.Fatalf("observed %+v, want b", l)
	}
	cancel()
	for range obs {
	}
}

// TestLeadershipSurvivesLossOfTheRaftLeader runs candidates on a
// three-member cluster and kills the member that leads raft: the quorum
// elects a new raft leader, and baton still has exactly one leader, which
// keeps its term if it keeps its session.
func TestLeadershipSurvivesLossOfTheRaftLeader(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartCluster(t, 3)
	a := startCandidate(t, cluster.Client(t), "quorum", "a")
	ta := waitFor(t, a.terms, 10*time.Second, "a elected")
	b := startCandidate(t, cluster.Client(t), "quorum", "b")

	raftLeader := cluster.RaftLeader(t)
	raftLeader.Kill()
	cluster.WaitHealthy(t)

	// Either a keeps leading, or its term ended and one candidate leads a
	// new term; never two at once.
	cli := cluster.Client(t)
	eventually(t, 15*time.Second, "a leader after the raft leader's loss", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		l, err := a.e.Leader(ctx)
		return err == nil && l.Since != (time.Time{})
	})
	if ta.ctx.Err() == nil {
		select {
		case tb := <-b.terms:
			t.Fatalf("b elected (fence %d) while a's term is live", tb.term.Revision)
		default:
		}
		resp, err := cli.Txn(context.Background()).If(ta.term.Cmp()).Then(clientv3.OpPut("/quorum", "a")).Commit()
		if err != nil || !resp.Succeeded {
			t.Fatalf("a's live term cannot write: %v", err)
		}
	}
	raftLeader.Restart(t)
	cluster.WaitHealthy(t)
}
