package main

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// TestPoolRunsUpToWorkersAtOnce: the pool keeps workers calls going at
// once and never more, and runs each index once, in order with one
// worker. The calls block until the test lets one end; synctest.Wait
// shows how many are running once nothing else can move.
func TestPoolRunsUpToWorkersAtOnce(t *testing.T) {
	for _, workers := range []int{1, 3, 10} {
		t.Run(strconv.Itoa(workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 7
				var running atomic.Int32
				end := make(chan struct{})
				var started []int // indices, in the order their calls started
				var mu sync.Mutex
				do := func(i int) int {
					running.Add(1)
					defer running.Add(-1)
					mu.Lock()
					started = append(started, i)
					mu.Unlock()
					<-end
					return i * i
				}
				results := map[int]int{}
				returned := make(chan struct{})
				go func() {
					pool(n, workers, do, func(i, r int) { results[i] = r })
					close(returned)
				}()
				for ended := range n {
					synctest.Wait()
					if got, want := running.Load(), int32(min(workers, n-ended)); got != want {
						t.Errorf("after %d calls ended: %d running, want %d", ended, got, want)
						break
					}
					end <- struct{}{}
				}
				close(end)
				<-returned
				for i := range n {
					if results[i] != i*i {
						t.Errorf("result %d: %d, want %d", i, results[i], i*i)
					}
				}
				if len(started) != n {
					t.Errorf("%d calls, want %d", len(started), n)
				}
				if workers == 1 && !slices.IsSorted(started) {
					t.Errorf("one worker ran %v, want the list's order", started)
				}
			})
		})
	}
}

// TestPoolHandsResultsOverOneAtATime: however many calls end at once,
// done runs for one result at a time, so that it may own what it writes
// (the report's rows and its output).
func TestPoolHandsResultsOverOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 5
		var inDone atomic.Int32
		next := make(chan struct{})
		got := map[int]bool{}
		returned := make(chan struct{})
		go func() {
			pool(n, n, func(i int) int { return i }, func(i, r int) {
				inDone.Add(1)
				defer inDone.Add(-1)
				<-next
				got[r] = true
			})
			close(returned)
		}()
		for range n {
			synctest.Wait()
			if k := inDone.Load(); k != 1 {
				t.Errorf("done runs %d times at once, want 1", k)
			}
			next <- struct{}{}
		}
		<-returned
		if len(got) != n {
			t.Errorf("done had %d results, want %d", len(got), n)
		}
	})
}
