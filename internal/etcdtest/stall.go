package etcdtest

import (
	"sync"
	"testing"
	"time"
)

// Tests that wait on the wall clock (a lease's expiry, a tick) fail when
// the machine does not schedule the test process for seconds, as any
// process would. So every test that takes etcd from this package says, when
// it fails, whether that happened while it ran: a watcher notes each gap in
// its own turns, and a failed test's cleanup logs the gaps of its run.

// stallStep is the watcher's period; a turn later than stallThreshold
// counts as the process not being scheduled.
const (
	stallStep      = 50 * time.Millisecond
	stallThreshold = 500 * time.Millisecond
)

type stall struct {
	at  time.Time // when the gap ended
	gap time.Duration
}

var stalls struct {
	once sync.Once
	mu   sync.Mutex
	seen []stall
}

// WatchStalls makes t, when it fails, log each time the test process was
// not scheduled for more than half a second while t ran, or that it never
// was. Shared and Start call it.
func WatchStalls(t testing.TB) {
	StartStallWatch()
	since := time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			ReportStalls(t, since)
		}
	})
}

// StartStallWatch starts the watcher that ReportStalls reads, for the rest
// of the test binary's life, if it has not started yet.
func StartStallWatch() {
	stalls.once.Do(func() {
		go func() {
			last := time.Now()
			for {
				time.Sleep(stallStep)
				now := time.Now()
				if gap := now.Sub(last); gap > stallThreshold {
					stalls.mu.Lock()
					stalls.seen = append(stalls.seen, stall{at: now, gap: gap})
					stalls.mu.Unlock()
				}
				last = now
			}
		}()
	})
}

// ReportStalls logs the stalls of the test process that ended after since.
func ReportStalls(t testing.TB, since time.Time) {
	t.Helper()
	stalls.mu.Lock()
	defer stalls.mu.Unlock()
	n := 0
	for _, st := range stalls.seen {
		if st.at.After(since) {
			t.Logf("the test process was not scheduled for %v, until %v", st.gap.Round(time.Millisecond), st.at.Format(time.TimeOnly+".000"))
			n++
		}
	}
	if n == 0 {
		t.Logf("the test process was never unscheduled for more than %v since %v", stallThreshold, since.Format(time.TimeOnly+".000"))
	}
}
