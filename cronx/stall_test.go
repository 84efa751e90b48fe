package cronx

import (
	"sync"
	"testing"
	"time"
)

// The tests that count ticks run on real time: a test process that the
// machine does not schedule for seconds (a loaded CI runner) misses ticks
// by the misfire policy, as any process would. stalls notes each such gap
// so that a failing test says whether it happened, rather than leaving a
// reader to guess.
var stalls stallLog

type stall struct {
	at  time.Time // when the gap ended
	gap time.Duration
}

type stallLog struct {
	once sync.Once
	mu   sync.Mutex
	seen []stall
}

// stallThreshold is the gap between two turns of the watcher, each due
// after stallStep, that counts as the process not being scheduled.
const (
	stallStep      = 50 * time.Millisecond
	stallThreshold = 500 * time.Millisecond
)

// start runs the watcher for the rest of the test binary's life.
func (s *stallLog) start() {
	s.once.Do(func() {
		go func() {
			last := time.Now()
			for {
				time.Sleep(stallStep)
				now := time.Now()
				if gap := now.Sub(last); gap > stallThreshold {
					s.mu.Lock()
					s.seen = append(s.seen, stall{at: now, gap: gap})
					s.mu.Unlock()
				}
				last = now
			}
		}()
	})
}

// report logs the stalls that ended after since.
func (s *stallLog) report(t *testing.T, since time.Time) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.seen {
		if st.at.After(since) {
			t.Logf("the test process was not scheduled for %v, until %v", st.gap.Round(time.Millisecond), st.at.Format(time.TimeOnly+".000"))
			n++
		}
	}
	if n == 0 {
		t.Logf("the test process was never unscheduled for more than %v since %v", stallThreshold, since.Format(time.TimeOnly+".000"))
	}
}
