package election

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// The key layout is etcd's own, so programs that use concurrency.Election,
// concurrency.Mutex, `etcdctl elect` or `etcdctl lock` on P/election/<name>
// and P/lock/<name> take part as equals.

func plainSession(t *testing.T, cli *clientv3.Client) *concurrency.Session {
	t.Helper()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestInteropElectionBatonLeadsPlainWaits(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	ctx := deadlineCtx(t, 20*time.Second)
	const queue = "/t/election/jobs/"

	b := startCandidate(t, srv.Client(t), "jobs", "baton", WithPrefix("/t"))
	tb := waitFor(t, b.terms, 5*time.Second, "baton elected")

	plain := concurrency.NewElection(plainSession(t, srv.Client(t)), "/t/election/jobs")
	campaigned := make(chan error, 1)
	go func() { campaigned <- plain.Campaign(ctx, "etcdctl") }()
	waitKeys(t, srv.Client(t), queue, 2)
	select {
	case err := <-campaigned:
		t.Fatalf("plain Campaign returned %v while baton leads", err)
	default:
	}
	if tb.ctx.Err() != nil {
		t.Fatalf("baton's term ended when a plain candidate queued: %v", context.Cause(tb.ctx))
	}

	close(b.release) // baton's lead returns: it resigns
	if err := waitFor(t, campaigned, 5*time.Second, "plain candidate elected after baton resigned"); err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	if err := b.wait(t); err != nil {
		t.Fatalf("Run after lead returned = %v, want nil", err)
	}
	resp, err := plain.Leader(ctx)
	if err != nil || string(resp.Kvs[0].Value) != "etcdctl" {
		t.Fatalf("plain Leader = %v, %v", resp, err)
	}
	if resp.Kvs[0].CreateRevision <= tb.term.Revision {
		t.Fatalf("the plain leader's revision %d is not above baton's fence %d", resp.Kvs[0].CreateRevision, tb.term.Revision)
	}
}

func TestInteropElectionPlainLeadsBatonWaits(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	ctx := deadlineCtx(t, 20*time.Second)
	cli := srv.Client(t)

	plain := concurrency.NewElection(plainSession(t, srv.Client(t)), "/t/election/jobs")
	if err := plain.Campaign(ctx, "etcdctl"); err != nil {
		t.Fatal(err)
	}
	observed, err := Observe(ctx, cli, "/t", "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if l := waitFor(t, observed, 5*time.Second, "Observe to report the plain leader"); l.Identity != "etcdctl" || l.None() {
		t.Fatalf("Observe = %+v, want the plain candidate's raw value etcdctl", l)
	}

	b := startCandidate(t, srv.Client(t), "jobs", "baton", WithPrefix("/t"))
	waitKeys(t, cli, "/t/election/jobs/", 2)
	select {
	case tb := <-b.terms:
		t.Fatalf("baton elected while a plain candidate leads: %+v", tb.term)
	default:
	}
	l, err := b.e.Leader(ctx)
	if err != nil || l.Identity != "etcdctl" || l.Fence.Key != plain.Key() || l.Fence.Revision != plain.Rev() {
		t.Fatalf("Leader = %+v, %v; want etcdctl at %s@%d", l, err, plain.Key(), plain.Rev())
	}

	if err := plain.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	tb := waitFor(t, b.terms, 5*time.Second, "baton elected after the plain leader resigned")
	if tb.term.Revision <= plain.Rev() {
		t.Fatalf("baton's fence %d is not above the plain leader's %d", tb.term.Revision, plain.Rev())
	}
	for {
		l := waitFor(t, observed, 5*time.Second, "Observe to report baton")
		if l.Identity == "baton" {
			if l.Fence != tb.term.Fence {
				t.Fatalf("Observe reports baton with fence %v, want %v", l.Fence, tb.term.Fence)
			}
			break
		}
		if l.Identity != "" && l.Identity != "etcdctl" {
			t.Fatalf("Observe reports %+v between the plain leader and baton", l)
		}
	}
}

func TestInteropMutexBatonHoldsPlainWaits(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	m := newTestMutex(t, cli, "report", "baton")
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}

	plain := concurrency.NewMutex(plainSession(t, srv.Client(t)), "/t/lock/report")
	if err := plain.TryLock(ctx); !errors.Is(err, concurrency.ErrLocked) {
		t.Fatalf("plain TryLock while baton holds = %v, want ErrLocked", err)
	}
	locked := make(chan error, 1)
	go func() { locked <- plain.Lock(ctx) }()
	waitKeys(t, cli, "/t/lock/report/", 2)
	select {
	case err := <-locked:
		t.Fatalf("plain Lock returned %v while baton holds the lock", err)
	default:
	}

	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, locked, 5*time.Second, "plain Lock after baton unlocked"); err != nil {
		t.Fatalf("plain Lock: %v", err)
	}
	if err := plain.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestInteropMutexPlainHoldsBatonWaits(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	plain := concurrency.NewMutex(plainSession(t, srv.Client(t)), "/t/lock/report")
	if err := plain.Lock(ctx); err != nil {
		t.Fatal(err)
	}

	m := newTestMutex(t, cli, "report", "baton")
	if err := m.TryLock(ctx); !errors.Is(err, ErrLocked) {
		t.Fatalf("baton TryLock while a plain mutex holds = %v, want ErrLocked", err)
	}
	h, err := Holder(ctx, cli, "/t", "report")
	if err != nil || h.Fence.Key != plain.Key() {
		t.Fatalf("Holder = %+v, %v; want the plain holder %s", h, err, plain.Key())
	}
	locked := lockAsync(ctx, m)
	waitKeys(t, cli, "/t/lock/report/", 2)
	select {
	case err := <-locked:
		t.Fatalf("baton Lock returned %v while a plain mutex holds the lock", err)
	default:
	}

	if err := plain.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, locked, 5*time.Second, "baton Lock after the plain mutex unlocked"); err != nil {
		t.Fatalf("baton Lock: %v", err)
	}
	if h, err := Holder(ctx, cli, "/t", "report"); err != nil || h.Identity != "baton" {
		t.Fatalf("Holder = %+v, %v; want baton", h, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
