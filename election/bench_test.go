package election

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// reportPercentiles adds p50 and p99 of samples, in milliseconds, to b's output.
func reportPercentiles(b *testing.B, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	at := func(q float64) float64 {
		return float64(samples[int(q*float64(len(samples)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkHandover measures a graceful handover on one embedded member: from
// the moment the leader's work returns (it then resigns) to the moment the
// next candidate is elected. Run it with enough handovers for a p99:
//
//	go test -run '^$' -bench Handover -benchtime 200x ./election/
func BenchmarkHandover(b *testing.B) {
	srv := etcdtest.Shared(b)
	cli := srv.Client(b)
	elected := make(chan time.Time, 1)
	resign := make(chan struct{})
	run := func(ctx context.Context, id string) {
		e, err := New(cli, "bench", WithIdentity(id), WithTTL(5*time.Second))
		if err != nil {
			b.Error(err)
			return
		}
		e.Run(ctx, func(ctx context.Context, _ Term) {
			elected <- time.Now()
			select {
			case <-resign:
			case <-ctx.Done():
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	// Two candidates take turns; each, once it has resigned, joins again.
	for _, id := range []string{"a", "b"} {
		wg.Go(func() {
			for ctx.Err() == nil {
				run(ctx, id)
			}
		})
	}
	<-elected
	waitQueued := func() {
		for {
			resp, err := cli.Get(ctx, DefaultPrefix+"/election/bench/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil || resp.Count == 2 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	var samples []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		waitQueued()
		start := time.Now()
		resign <- struct{}{}
		samples = append(samples, (<-elected).Sub(start))
	}
	b.StopTimer()
	reportPercentiles(b, samples)
}

// BenchmarkCrashFailover measures how long after its leader is cut off from
// etcd (a crash without resignation) the next candidate leads, as a fraction
// of the TTL. The bound is TTL + 1 s.
//
//	go test -run '^$' -bench CrashFailover -benchtime 5x ./election/
func BenchmarkCrashFailover(b *testing.B) {
	const ttl = 2 * time.Second
	srv := etcdtest.Shared(b)
	var samples []time.Duration
	for i := 0; i < b.N; i++ {
		proxy := etcdtest.NewProxy(b, srv.Addr())
		victim := srv.NewClient(b, proxy.Endpoint())
		ctx, cancel := context.WithCancel(context.Background())
		elected := make(chan time.Time, 2)
		var wg sync.WaitGroup
		for _, cli := range []*clientv3.Client{victim, srv.Client(b)} {
			e, err := New(cli, "crash", WithTTL(ttl))
			if err != nil {
				b.Fatal(err)
			}
			wg.Go(func() {
				e.Run(ctx, func(ctx context.Context, _ Term) {
					elected <- time.Now()
					<-ctx.Done()
				})
			})
			if cli == victim {
				<-elected
			}
		}
		start := time.Now()
		proxy.Blackhole()
		samples = append(samples, (<-elected).Sub(start))
		proxy.Close()
		victim.Close()
		cancel()
		wg.Wait()
	}
	slices.Sort(samples)
	b.ReportMetric(samples[len(samples)/2].Seconds()/ttl.Seconds(), "median-ttl-fraction")
	b.ReportMetric(samples[len(samples)-1].Seconds(), "max-s")
	b.ReportMetric(0, "ns/op")
}

// rpcCounter counts the gRPC calls and streams a client opens, by method.
type rpcCounter struct {
	mu    sync.Mutex
	calls map[string]int
	total atomic.Int64
}

func (c *rpcCounter) add(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[method]++
	c.total.Add(1)
}

func (c *rpcCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]int{}
	for k, v := range c.calls {
		m[k] = v
	}
	return m
}

// countingClient is a client of srv whose calls are counted: a member of
// the test's own, with no auth, whose clients make no call but the test's.
func countingClient(t testing.TB, srv *etcdtest.Member) (*clientv3.Client, *rpcCounter) {
	c := &rpcCounter{calls: map[string]int{}}
	return etcdtest.CountingClient(t, srv.Endpoint(), func(method string, _ any) { c.add(method) }), c
}

// TestIdleFollowerCostsOnlyKeepalivesAndOneWatch checks that a follower does
// not poll: over several TTLs it sends etcd nothing but lease keepalives and
// holds one watch stream.
func TestIdleFollowerCostsOnlyKeepalivesAndOneWatch(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	// Longer than a pause of the test process, which runs the etcd server:
	// a session lapsed in a pause would make the follower campaign anew.
	const ttl = 6 * time.Second
	srv := etcdtest.Start(t)
	leader := startCandidate(t, srv.Client(t), "idle", "leader", WithTTL(ttl))
	waitFor(t, leader.terms, 5*time.Second, "leader elected")

	cli, counter := countingClient(t, srv)
	follower := startCandidate(t, cli, "idle", "follower", WithTTL(ttl))
	// The follower queues: a watch, its key, one read of who is ahead.
	eventually(t, 5*time.Second, "follower to queue", func() bool {
		return counter.snapshot()["/etcdserverpb.KV/Range"] == 1
	})
	before := counter.snapshot()
	idle := 3 * ttl
	time.Sleep(idle) // measuring a rate over a period needs the period to pass
	after := counter.snapshot()

	keepalives := 0
	for method, n := range after {
		d := n - before[method]
		switch {
		case d == 0:
		case strings.HasSuffix(method, "/LeaseKeepAlive"):
			keepalives = d
		default:
			t.Errorf("idle follower called %s %d times", method, d)
		}
	}
	// One keepalive per TTL/3, and a little slack for timer alignment.
	if max := int(idle/(ttl/3)) + 2; keepalives > max {
		t.Errorf("idle follower sent %d keepalives in %v, want at most %d", keepalives, idle, max)
	}
	select {
	case tm := <-follower.terms:
		t.Fatalf("follower elected while the leader runs: %+v", tm)
	default:
	}
}
