package election

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestSessionDeadlineFollowsAcknowledgedKeepalives steps a fake clock: the
// deadline is the send time of the last acknowledged keepalive plus the TTL
// less the margin, and the session ends exactly when it passes.
func TestSessionDeadlineFollowsAcknowledgedKeepalives(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	cli := srv.NewClient(t, proxy.Endpoint())
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fake := clock.NewFake(start)
	const ttl, margin = 30 * time.Second, 600 * time.Millisecond // the real lease outlasts any pause of the test

	s, err := NewSession(context.Background(), cli, WithTTL(ttl), WithMargin(margin), withClock(fake))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Close(ctx) // cannot reach the server: the lease expires by itself
	}()
	if got, want := s.Deadline(), start.Add(ttl-margin); !got.Equal(want) {
		t.Fatalf("first deadline %v, want grant time + TTL - margin = %v", got, want)
	}
	if !fake.WaitTimers(2, 5*time.Second) {
		t.Fatal("keepalive loop did not arm its timers")
	}

	// The keepalive due at TTL/3 is acknowledged: the deadline moves to its
	// send time + TTL - margin.
	fake.Advance(ttl / 3)
	want := start.Add(ttl/3 + ttl - margin)
	eventually(t, 5*time.Second, "deadline to move after an acknowledged keepalive", func() bool {
		return s.Deadline().Equal(want)
	})

	// Cut the session off: keepalives no longer reach the server. Up to the
	// deadline the session stays live; past it the context is done.
	proxy.Blackhole()
	fake.Set(want.Add(-time.Millisecond))
	if err := s.Context().Err(); err != nil {
		t.Fatalf("session done %v before its deadline: %v", time.Millisecond, context.Cause(s.Context()))
	}
	fake.Set(want)
	waitFor(t, s.Done(), 5*time.Second, "session to end at its deadline")
	if cause := context.Cause(s.Context()); !errors.Is(cause, ErrSessionExpired) {
		t.Fatalf("cause %v, want ErrSessionExpired", cause)
	}
}

func TestSessionEndsWhenItsLeaseIsRevoked(t *testing.T) {
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	// A TTL longer than a pause of the test: the session ends of
	// the revoke, which its next keepalive (every TTL/3) finds, and not of
	// its own deadline.
	s, err := NewSession(context.Background(), cli, WithTTL(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(context.Background(), s.Lease()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, s.Done(), 15*time.Second, "session to notice its lease is gone")
	if cause := context.Cause(s.Context()); !errors.Is(cause, ErrLeaseLost) {
		t.Fatalf("cause %v, want ErrLeaseLost", cause)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("Close after loss: %v", err)
	}
	checkNoLeaks(t)
}

func TestSessionCloseRevokesTheLease(t *testing.T) {
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	// A TTL longer than a pause of the test: the key goes with the Close,
	// and the session ends of it, not of its own deadline.
	s, err := NewSession(context.Background(), cli, WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(context.Background(), "/held", "x", clientv3.WithLease(s.Lease())); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cause := context.Cause(s.Context()); !errors.Is(cause, ErrSessionClosed) {
		t.Fatalf("cause %v, want ErrSessionClosed", cause)
	}
	resp, err := cli.Get(context.Background(), "/held")
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("key attached to a closed session survives: %v %v", resp.Kvs, err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	checkNoLeaks(t)
}
