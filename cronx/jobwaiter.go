package cronx

import (
	"context"
	"sync"
)

// jobWaiter counts the runs in progress, so that Stop can hand out a context
// that is done when the last of them returns. A sync.WaitGroup would need a
// goroutine per Stop call to turn Wait into a context, and could not report
// at once that nothing runs.
type jobWaiter struct {
	mu      sync.Mutex
	running int
	waiters []context.CancelFunc
}

func (w *jobWaiter) add() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running++
}

func (w *jobWaiter) done() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.running--
	if w.running > 0 {
		return
	}
	for _, cancel := range w.waiters {
		cancel()
	}
	w.waiters = nil
}

// idle returns a context that is done once no run is in progress: at once if
// none is now, else when the count next falls to zero.
func (w *jobWaiter) idle() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running == 0 {
		cancel()
	} else {
		w.waiters = append(w.waiters, cancel)
	}
	return ctx
}
