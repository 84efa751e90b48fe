package clock

import (
	"testing"
	"time"
)

// TestFakeWaitsForATimerByADueTime checks the waits tests rely on before
// they move a fake clock: WaitDueBy ignores a timer due later than asked
// (an idle wait) and returns once one due in time is armed; WaitDue wants
// the exact time.
func TestFakeWaitsForATimerByADueTime(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	idle := f.NewTimer(time.Hour)
	defer idle.Stop()
	tick := start.Add(time.Minute)
	if f.WaitDueBy(tick, 20*time.Millisecond) {
		t.Fatal("WaitDueBy(tick) returned with only a timer due an hour later armed")
	}
	armed := make(chan Timer)
	go func() { armed <- f.NewTimer(30 * time.Second) }()
	if !f.WaitDueBy(tick, 5*time.Second) {
		t.Fatal("WaitDueBy(tick) did not see a timer due 30s before the tick")
	}
	soon := <-armed
	defer soon.Stop()
	if f.WaitDue(tick, 20*time.Millisecond) {
		t.Error("WaitDue(tick) returned with no timer due at the tick")
	}
	if !f.WaitDue(start.Add(30*time.Second), time.Second) {
		t.Error("WaitDue missed the timer due at its exact time")
	}
}
