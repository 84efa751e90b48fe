// Package clock lets time-dependent code take its time from an interface, so
// that tests step time instead of sleeping.
package clock

import (
	"sync"
	"time"
)

// Clock is the source of time for schedulers, deadlines and backoff.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that sends the time on its channel once d has
	// passed.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that baton uses.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether it stopped the
	// timer before it fired.
	Stop() bool
	// Reset changes the timer to fire after d.
	Reset(d time.Duration) bool
}

// Real is the wall clock.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Fake is a clock that moves only when told to. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever timers change
}

// NewFake returns a fake clock reading now.
func NewFake(now time.Time) *Fake {
	return &Fake{now: now, changed: make(chan struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires when the fake time reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{clock: f, c: make(chan time.Time, 1)}
	f.arm(t, d)
	return t
}

// Advance moves the fake time forward by d and fires every timer that falls due,
// in order of their due time.
func (f *Fake) Advance(d time.Duration) {
	f.Set(f.Now().Add(d))
}

// Set moves the fake time to t (never backwards) and fires the timers due by then.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.Before(f.now) {
		return
	}
	for {
		var next *fakeTimer
		for _, ft := range f.timers {
			if !ft.when.After(t) && (next == nil || ft.when.Before(next.when)) {
				next = ft
			}
		}
		if next == nil {
			break
		}
		f.now = next.when
		f.disarm(next)
		select {
		case next.c <- next.when:
		default:
		}
	}
	f.now = t
}

// Timers returns how many timers are armed.
func (f *Fake) Timers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// WaitTimers blocks until at least n timers are armed or deadline passes on the
// real clock, and reports whether n were reached. Tests use it to know that the
// code under test is waiting before they advance time.
func (f *Fake) WaitTimers(n int, deadline time.Duration) bool {
	limit := time.NewTimer(deadline)
	defer limit.Stop()
	for {
		f.mu.Lock()
		armed, changed := len(f.timers), f.changed
		f.mu.Unlock()
		if armed >= n {
			return true
		}
		select {
		case <-changed:
		case <-limit.C:
			return false
		}
	}
}

// WaitDue blocks until a timer due at t is armed or deadline passes on the
// real clock, and reports whether one was. Tests use it to know that the
// code under test waits for t before they move time past it.
func (f *Fake) WaitDue(t time.Time, deadline time.Duration) bool {
	return f.waitFor(func(when time.Time) bool { return when.Equal(t) }, deadline)
}

// WaitDueBy blocks until a timer due at or before t is armed or deadline
// passes on the real clock, and reports whether one was. Tests use it to
// know that a scheduler has armed its timer for a tick, rather than an idle
// wait, before they move time to the tick.
func (f *Fake) WaitDueBy(t time.Time, deadline time.Duration) bool {
	return f.waitFor(func(when time.Time) bool { return !when.After(t) }, deadline)
}

// waitFor blocks until an armed timer's due time satisfies due or deadline
// passes on the real clock, and reports whether one did.
func (f *Fake) waitFor(due func(time.Time) bool, deadline time.Duration) bool {
	limit := time.NewTimer(deadline)
	defer limit.Stop()
	for {
		f.mu.Lock()
		found, changed := false, f.changed
		for _, ft := range f.timers {
			found = found || due(ft.when)
		}
		f.mu.Unlock()
		if found {
			return true
		}
		select {
		case <-changed:
		case <-limit.C:
			return false
		}
	}
}

// NextDue returns when the earliest armed timer fires, and false if none is armed.
func (f *Fake) NextDue() (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var due time.Time
	for _, ft := range f.timers {
		if due.IsZero() || ft.when.Before(due) {
			due = ft.when
		}
	}
	return due, !due.IsZero()
}

func (f *Fake) arm(t *fakeTimer, d time.Duration) {
	t.when = f.now.Add(d)
	if d <= 0 {
		select {
		case t.c <- f.now:
		default:
		}
		f.notify()
		return
	}
	f.timers = append(f.timers, t)
	f.notify()
}

func (f *Fake) disarm(t *fakeTimer) bool {
	for i, ft := range f.timers {
		if ft == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			f.notify()
			return true
		}
	}
	return false
}

func (f *Fake) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

type fakeTimer struct {
	clock *Fake
	when  time.Time
	c     chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	return t.clock.disarm(t)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	active := t.clock.disarm(t)
	t.clock.arm(t, d)
	return active
}

// Offset is the real clock shifted by d: the clock of a machine whose time is
// d ahead (or behind, for a negative d) of this one's. Timers are not
// shifted; they measure durations.
func Offset(d time.Duration) Clock {
	if d == 0 {
		return Real
	}
	return offsetClock{d}
}

type offsetClock struct{ d time.Duration }

func (o offsetClock) Now() time.Time               { return time.Now().Add(o.d) }
func (offsetClock) NewTimer(d time.Duration) Timer { return Real.NewTimer(d) }
