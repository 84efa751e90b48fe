package election

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// gatedWatches is a Watcher whose first Watch of one key (a hold's of its
// own, not a lock queue's of its prefix) waits for gate, and that counts
// those watches whose channel their caller may still read: one from Watch
// until the channel is closed.
type gatedWatches struct {
	clientv3.Watcher
	entered, gate chan struct{}
	first         atomic.Bool
	open          atomic.Int64
}

func (w *gatedWatches) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	inner := w.Watcher.Watch
	if strings.HasSuffix(key, "/") {
		return inner(ctx, key, opts...)
	}
	w.open.Add(1)
	if w.first.CompareAndSwap(false, true) {
		close(w.entered)
		<-w.gate
	}
	watched := inner(ctx, key, opts...)
	out := make(chan clientv3.WatchResponse)
	go func() {
		defer close(out)
		defer w.open.Add(-1)
		for wr := range watched {
			select {
			case out <- wr:
			case <-ctx.Done():
			}
		}
	}()
	return out
}

// TestUnlockReturnsOnceItsHoldsWatchHasEnded: a hold watches its own key
// until it ends, from a goroutine of its own; Unlock (and a Once's Done or
// Release) returns only once that watch has ended, so that a client closed
// right after it is no longer in use by the hold (the race detector saw a
// Close beside a hold's Watch that began after its Unlock). The hold's
// first Watch is held up until Unlock has had 200 ms to return.
func TestUnlockReturnsOnceItsHoldsWatchHasEnded(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	w := &gatedWatches{Watcher: cli.Watcher, entered: make(chan struct{}), gate: make(chan struct{})}
	cli.Watcher = w
	m := newTestMutex(t, cli, "watched", "a")
	ctx := deadlineCtx(t, 10*time.Second)
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.entered:
	case <-ctx.Done():
		t.Fatal("the hold opened no watch of its key")
	}
	unlocked := make(chan error, 1)
	go func() { unlocked <- m.Unlock(ctx) }()
	select {
	case err := <-unlocked:
		t.Fatalf("Unlock returned (%v) while its hold's watch was still being opened", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(w.gate)
	if err := <-unlocked; err != nil {
		t.Fatal(err)
	}
	if n := w.open.Load(); n != 0 {
		t.Fatalf("Unlock returned with %d watches of the hold open", n)
	}
}
