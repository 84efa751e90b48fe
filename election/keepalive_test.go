package election

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// TestSessionsShareOneKeepAliveStream: the sessions of a client that logs
// in with a password keep their leases alive on one stream. etcd's client
// authenticates at every stream it opens, and etcd checks the password
// (bcrypt) each time: a stream per keepalive cost etcd a password check per
// session every TTL/3. The stream goes with the last session, and one
// reopened after a cut connection carries the keepalives again.
func TestSessionsShareOneKeepAliveStream(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t) // auth on, a non-root user
	proxy := etcdtest.NewProxy(t, sp.Addr())
	var logins, streams atomic.Int64
	cfg := sp.ClientConfig(proxy.Endpoint())
	cfg.DialOptions = append(cfg.DialOptions,
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if method == "/etcdserverpb.Auth/Authenticate" {
				logins.Add(1)
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			if method == "/etcdserverpb.Lease/LeaseKeepAlive" {
				streams.Add(1)
			}
			return streamer(ctx, desc, cc, method, opts...)
		}))
	raw, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	cli := sp.Within(raw)
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// The real lease outlasts the test; the fake clock drives the
	// keepalives.
	const ttl, sessions, rounds = 60 * time.Second, 5, 3
	var all []*Session
	for range sessions {
		s, err := NewSession(context.Background(), cli, WithTTL(ttl), withClock(fake))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
	}
	// Each loop's two timers are armed when it waits, not while its
	// keepalive is out.
	waiting := func() {
		t.Helper()
		if !fake.WaitTimers(2*sessions, 10*time.Second) {
			t.Fatal("the keepalive loops did not come back to wait")
		}
	}
	deadlines := func() []time.Time {
		var d []time.Time
		for _, s := range all {
			d = append(d, s.Deadline())
		}
		return d
	}
	moved := func(since []time.Time) bool {
		for i, s := range all {
			if !s.Deadline().After(since[i]) {
				return false
			}
		}
		return true
	}
	waiting()
	before := logins.Load()
	for round := range rounds {
		d := deadlines()
		fake.Advance(ttl / 3)
		waiting()
		if !moved(d) {
			t.Fatalf("round %d: a session's keepalive was not acknowledged", round)
		}
	}
	if n := streams.Load(); n != 1 {
		t.Errorf("%d sessions kept alive %d times opened %d keepalive streams, want 1", sessions, rounds, n)
	}
	if n := logins.Load() - before; n > 1 {
		t.Errorf("%d sessions kept alive %d times authenticated %d times, want at most once", sessions, rounds, n)
	}
	// A cut connection fails the stream; a keepalive after it opens
	// another, on which every session is kept alive again.
	proxy.Cut()
	d := deadlines()
	fake.Advance(ttl / 3)
	waiting()
	for try := 0; !moved(d); try++ {
		if try == 10 {
			t.Fatal("the sessions were not kept alive after a cut connection")
		}
		fake.Advance(ttl / 20) // a failed keepalive's retry
		waiting()
	}
	if n := streams.Load(); n < 2 {
		t.Errorf("after a cut, %d keepalive streams opened, want another", n)
	}
	for _, s := range all {
		if err := s.Err(); err != nil {
			t.Errorf("a session ended: %v", err)
		}
	}
	for _, s := range all {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
		cancel()
	}
	shared.mu.Lock()
	left := shared.m[cli]
	shared.mu.Unlock()
	if left != nil {
		t.Error("the keepalive stream outlived the client's last session")
	}
}
