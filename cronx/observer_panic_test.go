package cronx

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/clock"
)

// kvLog keeps the Error lines of a Logger with their keys and values.
type kvLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *kvLog) Info(string, ...any) {}
func (l *kvLog) Error(err error, msg string, kv ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("%s: %v %v", msg, err, kv))
}

// all returns every line so far.
func (l *kvLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func (l *kvLog) matching(subs ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(s, sub)
		}
		if all {
			out = append(out, s)
		}
	}
	return out
}

// TestPanickingObserverIsReportedAndGetsTheNextEvents: an observer whose
// functions panic does not end the program; each panic is logged as an
// error naming the function, once, with the panic's value and the stack,
// and the observer gets every event after it.
func TestPanickingObserverIsReportedAndGetsTheNextEvents(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	fake := clock.NewFake(start)
	ended := make(chan RunEnded, 8)
	obs := Observer{
		OnJobAdded:   func(e JobAdded) { panic("added " + e.Job) },
		OnRunStarted: func(e RunStarted) { panic(fmt.Errorf("started %v", e.Tick.Format(time.TimeOnly))) },
		OnRunEnded:   func(e RunEnded) { ended <- e },
	}
	logs := &kvLog{}
	// The logger comes after the observer: the panic is reported where the
	// Cron logs.
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithObserver(obs), WithLogger(logs))
	mustAdd(t, c, "* * * * * *", Named("beat", FuncJob(func() {})))
	c.Start()
	defer func() { <-c.Stop().Done() }()
	const ticks = 2
	for i := 1; i <= ticks; i++ {
		tick := start.Add(time.Duration(i) * time.Second)
		if !fake.WaitDue(tick, 10*time.Second) {
			t.Fatalf("no timer armed for %v", tick)
		}
		fake.Set(tick)
		select {
		case e := <-ended:
			if !e.Tick.Equal(tick) {
				t.Errorf("OnRunEnded of %v, want %v", e.Tick, tick)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("tick %v: no OnRunEnded after the panics before it", tick)
		}
	}
	if lines := logs.matching("observer panicked", "OnJobAdded", "added beat", "stack"); len(lines) != 1 {
		t.Errorf("logged %q, want one error naming OnJobAdded with its panic and stack", logs.all())
	}
	for i := 1; i <= ticks; i++ {
		at := start.Add(time.Duration(i) * time.Second).Format(time.TimeOnly)
		if lines := logs.matching("observer panicked", "OnRunStarted", "started "+at); len(lines) != 1 {
			t.Errorf("logged %q, want one error naming OnRunStarted of %s", logs.all(), at)
		}
	}
}
