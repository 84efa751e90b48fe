package election

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// deadlineCtx is a context for one test step: done after d or at the end of
// the test.
func deadlineCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// keyCount returns how many keys exist under prefix.
func keyCount(t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cli.Get(deadlineCtx(t, 5*time.Second), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("count keys under %s: %v", prefix, err)
	}
	return resp.Count
}

// waitKeys waits, watching prefix, until exactly n keys exist under it.
func waitKeys(t *testing.T, cli *clientv3.Client, prefix string, n int64) {
	t.Helper()
	ctx := deadlineCtx(t, 5*time.Second)
	for {
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatalf("waiting for %d keys under %s: %v", n, prefix, err)
		}
		if resp.Count == n {
			return
		}
		wctx, cancel := context.WithCancel(ctx)
		select {
		case <-cli.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)):
		case <-ctx.Done():
		}
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("timed out waiting for %d keys under %s; have %d", n, prefix, resp.Count)
		}
	}
}

func newTestMutex(t *testing.T, cli *clientv3.Client, name, id string, opts ...Option) *Mutex {
	t.Helper()
	m, err := NewMutex(cli, name, append([]Option{WithPrefix("/t"), WithIdentity(id), WithTTL(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// End a hold the test left, before its client closes.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m.Unlock(ctx)
	})
	return m
}

// lockAsync calls m.Lock in the background and reports its result.
func lockAsync(ctx context.Context, m *Mutex) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- m.Lock(ctx) }()
	return ch
}

func TestMutexLockExcludesUntilUnlock(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	const queue = "/t/lock/report/"
	a := newTestMutex(t, cli, "report", "a")
	b := newTestMutex(t, cli, "report", "b") // same client, same process: still a second holder
	ctx := deadlineCtx(t, 20*time.Second)

	if err := a.Lock(ctx); err != nil {
		t.Fatalf("a.Lock: %v", err)
	}
	bLocked := lockAsync(ctx, b)
	waitKeys(t, cli, queue, 2) // b is in the queue behind a
	select {
	case err := <-bLocked:
		t.Fatalf("b.Lock returned %v while a holds the lock", err)
	default:
	}

	c := newTestMutex(t, cli, "report", "c")
	if err := c.TryLock(ctx); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while a holds the lock = %v, want ErrLocked", err)
	}
	if n := keyCount(t, cli, queue); n != 2 {
		t.Fatalf("a failed TryLock left a key behind: %d keys under %s, want 2", n, queue)
	}

	if err := a.Unlock(ctx); err != nil {
		t.Fatalf("a.Unlock: %v", err)
	}
	if err := waitFor(t, bLocked, 5*time.Second, "b to get the lock after a unlocked"); err != nil {
		t.Fatalf("b.Lock: %v", err)
	}
	if err := c.TryLock(ctx); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while b holds the lock = %v, want ErrLocked", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatalf("b.Unlock: %v", err)
	}
	if err := c.TryLock(ctx); err != nil {
		t.Fatalf("TryLock of a free lock: %v", err)
	}
	if err := c.Unlock(ctx); err != nil {
		t.Fatalf("c.Unlock: %v", err)
	}
	if n := keyCount(t, cli, queue); n != 0 {
		t.Fatalf("%d keys left under %s after every holder unlocked", n, queue)
	}
}

func TestMutexFenceGuardsWritesOfDeposedHolder(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	m := newTestMutex(t, cli, "ledger", "a")

	// guardedPut writes the fencing token to "data" only while f is current,
	// as a downstream store guarded by the fence would.
	guardedPut := func(f Fence, val string) bool {
		t.Helper()
		resp, err := cli.Txn(ctx).If(f.Cmp()).Then(clientv3.OpPut("/data", val)).Commit()
		if err != nil {
			t.Fatalf("guarded put: %v", err)
		}
		return resp.Succeeded
	}
	data := func() string {
		t.Helper()
		resp, err := cli.Get(ctx, "/data")
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return ""
		}
		return string(resp.Kvs[0].Value)
	}

	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	f1 := m.Fence()
	if !guardedPut(f1, "hold 1") {
		t.Fatal("the holder's guarded write did not commit")
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if guardedPut(f1, "after unlock") {
		t.Fatal("a guarded write committed after Unlock")
	}

	// Deposed by deleting the holder key.
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	f2 := m.Fence()
	if f2.Revision <= f1.Revision {
		t.Fatalf("fencing token did not grow: %d then %d", f1.Revision, f2.Revision)
	}
	if _, err := cli.Delete(ctx, f2.Key); err != nil {
		t.Fatal(err)
	}
	if guardedPut(f2, "deposed by delete") {
		t.Fatal("a guarded write committed after the holder key was deleted")
	}
	if ok, err := f2.Valid(ctx, cli); err != nil || ok {
		t.Fatalf("Valid after delete = %v, %v; want false", ok, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Deposed by revoking the hold's lease; a new holder takes over.
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	f3 := m.Fence()
	if f3.Revision <= f2.Revision {
		t.Fatalf("fencing token did not grow: %d then %d", f2.Revision, f3.Revision)
	}
	revokeLeaseOf(t, cli, f3.Key)
	waitFor(t, m.Context().Done(), 5*time.Second, "the deposed holder's context to end")
	other := newTestMutex(t, cli, "ledger", "b")
	if err := other.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	f4 := other.Fence()
	if f4.Revision <= f3.Revision {
		t.Fatalf("new holder's token %d is not above the deposed one %d", f4.Revision, f3.Revision)
	}
	if guardedPut(f3, "deposed by revoke") {
		t.Fatal("a deposed holder's guarded write committed")
	}
	if !guardedPut(f4, "hold 4") {
		t.Fatal("the new holder's guarded write did not commit")
	}
	if got := data(); got != "hold 4" {
		t.Fatalf("data = %q, want the new holder's write", got)
	}
}

// revokeLeaseOf revokes the lease key is attached to, as an operator or an
// expired lease would end it.
func revokeLeaseOf(t *testing.T, cli *clientv3.Client, key string) {
	t.Helper()
	ctx := deadlineCtx(t, 5*time.Second)
	resp, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Fatalf("key %s: %v; want one key with a lease", key, resp.Kvs)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatalf("revoke: %v", err)
	}
}

func TestMutexContextEndsWithTheHold(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	m := newTestMutex(t, cli, "job", "a")

	if err := m.Context().Err(); err == nil {
		t.Fatal("Context without a hold is not done")
	}

	t.Run("Unlock", func(t *testing.T) {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		hold := m.Context()
		if hold.Err() != nil {
			t.Fatalf("hold context done while held: %v", context.Cause(hold))
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, hold.Done(), 5*time.Second, "the hold's context to end after Unlock")
		if m.Context().Err() == nil {
			t.Fatal("Context after Unlock is not done")
		}
	})

	t.Run("LeaseRevoked", func(t *testing.T) {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		hold := m.Context()
		revokeLeaseOf(t, cli, m.Fence().Key)
		waitFor(t, hold.Done(), 5*time.Second, "the hold's context to end after its lease was revoked")
		if cause := context.Cause(hold); !errors.Is(cause, ErrLeaseLost) {
			t.Fatalf("cause = %v, want ErrLeaseLost", cause)
		}
		if owned, err := m.Owned(ctx); err != nil || owned {
			t.Fatalf("Owned after the lease was revoked = %v, %v; want false", owned, err)
		}
		// The lost hold does not stand in the way of the next one.
		if err := m.Lock(ctx); err != nil {
			t.Fatalf("Lock after a lost hold: %v", err)
		}
		if m.Context().Err() != nil {
			t.Fatal("context of the new hold is done")
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})

	// The key deleted while the session lives (etcdctl del): the lock is
	// free for the next holder, so the hold ends.
	t.Run("KeyDeleted", func(t *testing.T) {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		hold := m.Context()
		if _, err := cli.Delete(ctx, m.Fence().Key); err != nil {
			t.Fatal(err)
		}
		waitFor(t, hold.Done(), 5*time.Second, "the hold's context to end after its key was deleted")
		if cause := context.Cause(hold); !errors.Is(cause, ErrLockLost) || !strings.Contains(cause.Error(), "/t/lock/job/") {
			t.Fatalf("cause = %v, want ErrLockLost naming the key", cause)
		}
		if err := m.Lock(ctx); err != nil {
			t.Fatalf("Lock after a lost hold: %v", err)
		}
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})

	// Unlock deletes the key too; that is no loss.
	t.Run("UnlockIsNoLoss", func(t *testing.T) {
		if err := m.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		hold := m.Context()
		if err := m.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if cause := context.Cause(hold); errors.Is(cause, ErrLockLost) {
			t.Fatalf("cause after Unlock = %v", cause)
		}
	})
}

// A hold that expired locally (the session's safe deadline passed) while its
// lease still lives on the server must not block the same Mutex's next Lock
// or TryLock until the server expires the old lease.
func TestMutexRelockAfterLocalExpiry(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	// A long TTL keeps the old lease alive on the server for the whole test;
	// the wide margin puts the local deadline (2s) before the first keepalive
	// (TTL/3), so advancing the fake clock expires the hold deterministically.
	m := newTestMutex(t, cli, "job", "a", WithTTL(10*time.Second), WithMargin(8*time.Second), withClock(fake))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	hold := m.Context()
	fake.Advance(2 * time.Second)
	waitFor(t, hold.Done(), 5*time.Second, "the hold to expire at its safe deadline")
	if cause := context.Cause(hold); !errors.Is(cause, ErrSessionExpired) {
		t.Fatalf("cause = %v, want ErrSessionExpired", cause)
	}
	if err := m.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after the hold expired locally: %v", err)
	}
	if n := keyCount(t, cli, "/t/lock/job/"); n != 1 {
		t.Fatalf("%d keys under the lock, want only the new hold's", n)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestMutexLockCancelledWhileWaitingLeavesNoKey(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	const queue = "/t/lock/job/"
	ctx := deadlineCtx(t, 20*time.Second)
	// The holder's lease outlasts a pause of the test process, which runs
	// the etcd server: its key must be the one left.
	holder := newTestMutex(t, cli, "job", "holder", WithTTL(30*time.Second))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		timeout time.Duration // zero: the test cancels once the waiter is queued
		want    error
	}{
		{"cancel", 0, context.Canceled},
		{"deadline", 1500 * time.Millisecond, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			waiter := newTestMutex(t, cli, "job", "waiter")
			var wctx context.Context
			var cancel context.CancelFunc
			if tc.timeout > 0 {
				wctx, cancel = context.WithTimeout(ctx, tc.timeout)
			} else {
				wctx, cancel = context.WithCancel(ctx)
			}
			defer cancel()
			locked := lockAsync(wctx, waiter)
			waitKeys(t, cli, queue, 2)
			if tc.timeout == 0 {
				cancel()
			}
			err := waitFor(t, locked, 5*time.Second, "Lock to return after its context ended")
			if !errors.Is(err, tc.want) {
				t.Fatalf("Lock = %v, want %v", err, tc.want)
			}
			if n := keyCount(t, cli, queue); n != 1 {
				t.Fatalf("%d keys under %s after the waiter gave up, want the holder's only", n, queue)
			}
			if f := waiter.Fence(); f != (Fence{}) {
				t.Fatalf("Fence of a Mutex whose Lock failed = %v, want zero", f)
			}
			if err := waiter.Unlock(ctx); !errors.Is(err, ErrNotLocked) {
				t.Fatalf("Unlock after a failed Lock = %v, want ErrNotLocked", err)
			}
		})
	}
}

func TestMutexMisuse(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	m := newTestMutex(t, cli, "job", "a")

	if err := m.Unlock(ctx); !errors.Is(err, ErrNotLocked) {
		t.Fatalf("Unlock without Lock = %v, want ErrNotLocked", err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	f := m.Fence()
	if err := m.Lock(ctx); !errors.Is(err, ErrAlreadyLocked) {
		t.Fatalf("second Lock = %v, want ErrAlreadyLocked", err)
	}
	if err := m.TryLock(ctx); !errors.Is(err, ErrAlreadyLocked) {
		t.Fatalf("TryLock while held = %v, want ErrAlreadyLocked", err)
	}
	if got := m.Fence(); got != f {
		t.Fatalf("a refused Lock changed the fence from %v to %v", f, got)
	}
	if owned, err := m.Owned(ctx); err != nil || !owned {
		t.Fatalf("a refused Lock lost the hold: Owned = %v, %v", owned, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx); !errors.Is(err, ErrNotLocked) {
		t.Fatalf("second Unlock = %v, want ErrNotLocked", err)
	}
}

func TestMutexOwnedAndHolder(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 20*time.Second)
	a := newTestMutex(t, cli, "job", "web-1")
	b := newTestMutex(t, cli, "job", "web-2")

	if _, err := Holder(ctx, cli, "/t", "job"); !errors.Is(err, ErrNoLeader) {
		t.Fatalf("Holder of a free lock = %v, want ErrNoLeader", err)
	}
	if owned, err := a.Owned(ctx); err != nil || owned {
		t.Fatalf("Owned before Lock = %v, %v; want false", owned, err)
	}
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if owned, err := a.Owned(ctx); err != nil || !owned {
		t.Fatalf("Owned while held = %v, %v; want true", owned, err)
	}
	h, err := Holder(ctx, cli, "/t", "job")
	if err != nil || h.Identity != "web-1" || h.Fence != a.Fence() {
		t.Fatalf("Holder = %+v, %v; want web-1 with fence %v", h, err, a.Fence())
	}

	bLocked := lockAsync(ctx, b)
	waitKeys(t, cli, "/t/lock/job/", 2)
	// A Mutex is safe for concurrent use: its accessors answer while its
	// Lock waits.
	answered := make(chan error, 1)
	go func() {
		owned, err := b.Owned(ctx)
		if err == nil && owned {
			err = errors.New("Owned = true")
		}
		if err == nil && (b.Fence() != Fence{} || b.Context().Err() == nil) {
			err = errors.New("a waiter has a fence or a live context")
		}
		answered <- err
	}()
	if err := waitFor(t, answered, 2*time.Second, "Owned, Fence and Context of a waiting Mutex"); err != nil {
		t.Fatal(err)
	}
	if h, err := Holder(ctx, cli, "/t", "job"); err != nil || h.Identity != "web-1" {
		t.Fatalf("Holder with a waiter queued = %+v, %v; want web-1", h, err)
	}

	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if owned, err := a.Owned(ctx); err != nil || owned {
		t.Fatalf("Owned after Unlock = %v, %v; want false", owned, err)
	}
	if err := waitFor(t, bLocked, 5*time.Second, "b to get the lock"); err != nil {
		t.Fatal(err)
	}
	if h, err := Holder(ctx, cli, "/t", "job"); err != nil || h.Identity != "web-2" || h.Fence != b.Fence() {
		t.Fatalf("Holder after handover = %+v, %v; want web-2 with fence %v", h, err, b.Fence())
	}

	// Owned reads etcd: a hold whose key was deleted is not owned.
	if _, err := cli.Delete(ctx, b.Fence().Key); err != nil {
		t.Fatal(err)
	}
	if owned, err := b.Owned(ctx); err != nil || owned {
		t.Fatalf("Owned after the key was deleted = %v, %v; want false", owned, err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := Holder(ctx, cli, "/t", "a/b"); err == nil {
		t.Fatal("Holder accepted the lock name \"a/b\"")
	}
}
