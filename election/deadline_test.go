package election

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
)

// readClock is a fake clock that reports each reading of the time, so a
// test can act right after the session reads its keepalive's send time.
type readClock struct {
	*clock.Fake
	reads chan time.Time
}

func (c readClock) Now() time.Time {
	now := c.Fake.Now()
	select {
	case c.reads <- now:
	default:
	}
	return now
}

// TestSessionDeadlineCountsFromTheKeepalivesSendTime is G2 with a slow
// network: a keepalive acknowledged a second after it was sent moves the
// safe deadline to its send time + TTL − margin, not its arrival time + TTL
// − margin. The server counts the TTL from when the keepalive reached it,
// which is after the send, so only the send time is safe: the session ends
// at that deadline when no later keepalive gets through.
func TestSessionDeadlineCountsFromTheKeepalivesSendTime(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	cli := srv.NewClient(t, proxy.Endpoint())
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := readClock{Fake: clock.NewFake(start), reads: make(chan time.Time, 1)}
	const ttl, margin = 30 * time.Second, 600 * time.Millisecond // the real lease outlasts any pause of the test

	s, err := NewSession(context.Background(), cli, WithTTL(ttl), WithMargin(margin), withClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Close(ctx)
	}()
	first := s.Deadline()
	if !clk.WaitTimers(2, 5*time.Second) {
		t.Fatal("keepalive loop did not arm its timers")
	}
	select {
	case <-clk.reads: // the grant's send time
	default:
	}

	// Each chunk now takes 500 ms each way: the keepalive is in flight
	// for a second of real time.
	proxy.Delay(500 * time.Millisecond)
	clk.Advance(ttl / 3)
	var sent time.Time
	select {
	case sent = <-clk.reads:
	case <-time.After(5 * time.Second):
		t.Fatal("no keepalive sent within 5s of its timer")
	}
	// While it is in flight, a second passes on the clock.
	clk.Advance(time.Second)
	eventually(t, 10*time.Second, "deadline to move after the delayed keepalive is acknowledged", func() bool {
		return !s.Deadline().Equal(first)
	})
	proxy.Pass()
	want := sent.Add(ttl - margin)
	if got := s.Deadline(); !got.Equal(want) {
		t.Fatalf("deadline %v after a keepalive sent at %v and acknowledged at %v; want send time + TTL - margin = %v",
			got.Format(time.TimeOnly+".000"), sent.Format(time.TimeOnly+".000"), clk.Fake.Now().Format(time.TimeOnly+".000"),
			want.Format(time.TimeOnly+".000"))
	}

	// Cut off, the session ends at that deadline and not a moment later.
	proxy.Blackhole()
	clk.Set(want.Add(-time.Millisecond))
	if err := s.Context().Err(); err != nil {
		t.Fatalf("session done before its deadline: %v", context.Cause(s.Context()))
	}
	clk.Set(want)
	waitFor(t, s.Done(), 5*time.Second, "session to end at its deadline")
}

// stalledClock is a fake clock whose timers never fire: the session's own
// timer at its deadline stands for a goroutine that a loaded machine has not
// run yet.
type stalledClock struct{ *clock.Fake }

func (stalledClock) NewTimer(time.Duration) clock.Timer { return stalledTimer{make(chan time.Time)} }

type stalledTimer struct{ c chan time.Time }

func (t stalledTimer) C() <-chan time.Time    { return t.c }
func (stalledTimer) Stop() bool               { return true }
func (stalledTimer) Reset(time.Duration) bool { return true }

// TestSessionErrEndsASessionPastItsDeadline is G2 for work about to start:
// once the clock is past the safe deadline, Err says the session expired
// and ends it, even though the session's timer for that deadline has not
// been served.
func TestSessionErrEndsASessionPastItsDeadline(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := stalledClock{clock.NewFake(start)}
	const ttl, margin = 30 * time.Second, 600 * time.Millisecond

	s, err := NewSession(context.Background(), cli, WithTTL(ttl), WithMargin(margin), withClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Close(ctx)
	}()
	deadline := s.Deadline()
	clk.Set(deadline.Add(-time.Millisecond))
	if err := s.Err(); err != nil {
		t.Fatalf("Err %v a millisecond before the deadline", err)
	}
	clk.Set(deadline)
	if err := s.Err(); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("Err %v at the deadline, want ErrSessionExpired", err)
	}
	if !errors.Is(context.Cause(s.Context()), ErrSessionExpired) {
		t.Fatalf("the session's context %v after Err reported its expiry, want done with ErrSessionExpired", context.Cause(s.Context()))
	}
}
