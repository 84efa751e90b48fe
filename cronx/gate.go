package cronx

import "sync"

// claimGate bounds the goroutines of a leader's runs that wait for their
// batched claim. A crowded tick, or a new term's catch-up, fires a run per
// job at once, and each run's claim waits for its batch (batch.go), which
// etcd takes maxFlushers at a time: ten thousand goroutines for what a few
// hundred claims in flight do. A goroutine that ends leaves its runtime
// structure behind for good, so a term's peak stayed in the heap, about
// 500 bytes a job. Past maxClaimWaiters, a run waits here as a function to
// call, in the order it fired, and gets its goroutine when one of those
// waiting gets the first answer to its claim.
//
// Only runs that go straight to the batch are gated: a run that waits for
// its jitter, a buffered tick resumed, a recovery, a trigger or a backfill
// has its goroutine at once. A gated run gives its place up at its claim's
// first answer, so what it may wait for next (etcd back, its turn in its
// job's buffer, the run it replaces) holds no place: every run's first try
// goes out within a round trip per maxClaimWaiters runs ahead of it.
type claimGate struct {
	mu      sync.Mutex
	waiting int      // gated runs whose claim has not been answered
	queue   []func() // gated runs with no goroutine yet, oldest first
}

// do calls life in a goroutine of its own, at once if the run is not gated
// or fewer than maxClaimWaiters gated runs wait for their claim, else once
// one of them has its answer. life is given the function that says so,
// which it calls once its claim has a first answer or is given up; calling
// it again does nothing.
func (g *claimGate) do(gated bool, life func(answered func())) {
	if !gated {
		go life(func() {})
		return
	}
	g.mu.Lock()
	if g.waiting >= maxClaimWaiters { // mutation:claim-gate
		g.queue = append(g.queue, func() { life(g.answered()) })
		g.mu.Unlock()
		return
	}
	g.waiting++
	g.mu.Unlock()
	go life(g.answered())
}

// answered returns the function a gated run calls once its claim is
// answered: it hands its place to the oldest run queued, or frees it.
func (g *claimGate) answered() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			if len(g.queue) == 0 {
				g.waiting--
				return
			}
			next := g.queue[0]
			g.queue[0] = nil
			g.queue = g.queue[1:]
			if len(g.queue) == 0 {
				g.queue = nil // the crowd's backing array goes with it
			}
			go next()
		})
	}
}
