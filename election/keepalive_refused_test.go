package election

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// refusalHold makes the first error the server ends a keepalive stream
// with reach the receiver only after a keepalive has been sent on the
// ended stream: the moment, otherwise a matter of scheduling, when a second
// session sends before the first one's refusal is read.
type refusalHold struct {
	holding chan struct{} // closed when the refusal is held
	sent    chan struct{} // closed when a keepalive was sent after it
	first   sync.Once
	after   sync.Once
}

// refusalStream is one keepalive stream under a refusalHold.
type refusalStream struct {
	grpc.ClientStream
	h *refusalHold
}

func (s *refusalStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		return nil
	}
	s.h.first.Do(func() {
		close(s.h.holding)
		select {
		case <-s.h.sent:
		case <-time.After(10 * time.Second):
		}
	})
	return err
}

func (s *refusalStream) SendMsg(m any) error {
	err := s.ClientStream.SendMsg(m)
	select {
	case <-s.h.holding:
		s.h.after.Do(func() { close(s.h.sent) })
	default:
	}
	return err
}

// TestEverySessionSeesEtcdsRefusalOfItsKeepalive: when etcd refuses a
// keepalive (a role that lost its write permission) it ends the shared
// stream, and a keepalive another session sends on it before the
// refusal is read is refused with it: each session's last keepalive
// error is etcd's permission denied, which the session's end names, not
// the bare end of the stream (io.EOF) that gRPC gives a send on a stream
// the server ended.
func TestEverySessionSeesEtcdsRefusalOfItsKeepalive(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	rw := etcdtest.User{Name: "app", Password: "app-secret", Prefix: "/app/", Perm: clientv3.PermissionType(clientv3.PermReadWrite)}
	admin := srv.EnableAuth(t, "root-secret", rw)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	h := &refusalHold{holding: make(chan struct{}), sent: make(chan struct{})}
	cfg := etcdtest.ClientConfig(srv.Endpoint())
	cfg.Username, cfg.Password = "app", "app-secret"
	cfg.DialOptions = append(cfg.DialOptions,
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			cs, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil || method != "/etcdserverpb.Lease/LeaseKeepAlive" {
				return cs, err
			}
			return &refusalStream{ClientStream: cs, h: h}, nil
		}))
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	const ttl = 60 * time.Second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fake := clock.NewFake(t0)
	a, err := NewSession(ctx, cli, WithTTL(ttl), withClock(fake))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if !fake.WaitTimers(2, 10*time.Second) {
		t.Fatal("the first session's keepalive loop did not start")
	}
	fake.Advance(time.Second)
	b, err := NewSession(ctx, cli, WithTTL(ttl), withClock(fake))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	if !fake.WaitTimers(4, 10*time.Second) {
		t.Fatal("the second session's keepalive loop did not start")
	}

	// etcd checks a keepalive against the keys on its lease.
	must(cli.Put(ctx, "/app/a", "", clientv3.WithLease(a.Lease())))
	must(cli.Put(ctx, "/app/b", "", clientv3.WithLease(b.Lease())))
	must(admin.RoleGrantPermission(ctx, "app", "/app/", clientv3.GetPrefixRangeEnd("/app/"), clientv3.PermissionType(clientv3.PermRead)))
	fake.Advance(ttl/3 - time.Second) // a's keepalive, which etcd refuses
	select {
	case <-h.holding:
	case <-time.After(10 * time.Second):
		t.Fatal("etcd did not refuse the first session's keepalive within 10s")
	}
	fake.Advance(time.Second) // b's keepalive, on the stream etcd ended
	for _, s := range []struct {
		name string
		s    *Session
	}{{"first", a}, {"second", b}} {
		var last error
		deadline := time.Now().Add(10 * time.Second)
		for last == nil && time.Now().Before(deadline) {
			s.s.mu.Lock()
			last = s.s.lastErr
			s.s.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
		if !errors.Is(last, rpctypes.ErrPermissionDenied) {
			t.Errorf("the %s session's last keepalive failed with %v, want etcd's %v", s.name, last, rpctypes.ErrPermissionDenied)
		}
	}
}
