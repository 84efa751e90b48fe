package etcdtest

import (
	"context"
	"testing"
	"time"
)

func get(t *testing.T, p *Proxy, d time.Duration) error {
	t.Helper()
	cli := NewClient(t, p.Endpoint())
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := cli.Get(ctx, "k")
	return err
}

func TestProxyPassDelayBlackholeCut(t *testing.T) {
	t.Parallel()
	m := Start(t)
	p := NewProxy(t, m.Addr())
	cli := NewClient(t, p.Endpoint())
	ctx := context.Background()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("through a passing proxy: %v", err)
	}

	p.Delay(150 * time.Millisecond)
	start := time.Now()
	if _, err := cli.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	// A round trip crosses the proxy at least twice.
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("a delayed round trip took %v, want at least 300ms", took)
	}
	p.Pass()

	p.Blackhole()
	if err := get(t, p, 500*time.Millisecond); err == nil {
		t.Fatal("a request got through a blackholed proxy")
	}
	p.Pass()
	if _, err := cli.Get(ctx, "k"); err != nil {
		t.Fatalf("after the blackhole ended: %v", err)
	}

	p.Cut()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Get(rctx, "k"); err != nil {
		t.Fatalf("the client did not reconnect after a cut: %v", err)
	}
}

func TestWipedMemberComesBackEmpty(t *testing.T) {
	t.Parallel()
	m := Start(t)
	cli := m.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	m.Wipe(t)
	resp, err := cli.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 0 {
		t.Fatalf("a wiped member still has %q", resp.Kvs[0].Key)
	}
}

// TestProxyRetarget: a retargeted proxy sends its client to the new server,
// and one pointed at a closed port refuses it.
func TestProxyRetarget(t *testing.T) {
	t.Parallel()
	a, b := Start(t), Start(t)
	if _, err := b.Client(t).Put(context.Background(), "k", "on b"); err != nil {
		t.Fatal(err)
	}
	p := NewProxy(t, a.Addr())
	cli := NewClient(t, p.Endpoint())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := cli.Get(ctx, "k"); err != nil || resp.Count != 0 {
		t.Fatalf("through the proxy to a: %v, %v; want no key", resp, err)
	}

	p.Retarget("127.0.0.1:1") // nothing listens there
	if err := get(t, p, 500*time.Millisecond); err == nil {
		t.Fatal("a request got through a proxy pointed at a closed port")
	}
	p.Retarget(b.Addr())
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "on b" {
		t.Fatalf("after retargeting to b: %v, %v; want k = on b", resp, err)
	}
}
