package cronx

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// BenchmarkANewTermOfManyJobs measures a new term of 10,000 jobs
// (BATON_BENCH_JOBS): a leader publishes them and steps down (Stop), and
// its follower, with the same jobs, takes over. From the follower's term
// gained, the time until every job's spec was checked, until every
// registration of its own was written, and until its catch-up of each
// job's tick of the last minute (RunOnce; every tick claimed by the leader
// before, as ranLatest leaves the claim keys) was answered and its runs
// done. On etcd with auth on and a
// non-root user, as `baton etcd` ships it (a key space of the shared
// member), and on a member without auth:
//
//	go test -run '^$' -bench ANewTermOfManyJobs -benchtime 1x ./cronx/
func BenchmarkANewTermOfManyJobs(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("BATON_BENCH_JOBS")); err == nil {
		n = v
	}
	// Each replica's client is as an app's on etcd as shipped: a user of
	// its own on its key prefix (BATON_PREFIX), with no namespace wrapper
	// around the client, whose copies of every compare and op would be
	// counted in the term's time.
	for _, etcd := range []struct {
		name   string
		config func(b *testing.B) (cfg clientv3.Config, prefix string)
	}{
		{"auth=on", func(b *testing.B) (clientv3.Config, string) {
			sp := etcdtest.Shared(b)
			return sp.ClientConfig(), sp.BatonPrefix(election.DefaultPrefix)
		}},
		{"auth=off", func(b *testing.B) (clientv3.Config, string) {
			return etcdtest.ClientConfig(etcdtest.Start(b).Endpoint()), election.DefaultPrefix
		}},
	} {
		b.Run(etcd.name, func(b *testing.B) {
			var specs, regs, catchUp time.Duration
			for i := range b.N {
				cfg, prefix := etcd.config(b)
				s, r, c := newTerm(b, cfg, prefix, fmt.Sprintf("newterm-%d", i), n)
				specs, regs, catchUp = specs+s, regs+r, catchUp+c
			}
			b.ReportMetric(float64(specs.Milliseconds())/float64(b.N), "specs-ms")
			b.ReportMetric(float64(regs.Milliseconds())/float64(b.N), "registrations-ms")
			b.ReportMetric(float64(catchUp.Milliseconds())/float64(b.N), "catch-up-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// termCalls follows what a follower's client sends once its term begins:
// the jobs whose specs it compared, the registrations it put, the claim
// keys it compared, and when each count was reached.
type termCalls struct {
	n int

	mu                  sync.Mutex
	from                time.Time // the term gained; zero before
	specs, regs, lasts  map[string]bool
	claimed             map[string]bool // the claim keys compared, by a claim
	specsDone, regsDone time.Time
	lastsDone           chan struct{}
	lastsClosed         bool
}

func newTermCalls(n int) *termCalls {
	return &termCalls{n: n, specs: map[string]bool{}, regs: map[string]bool{}, lasts: map[string]bool{}, claimed: map[string]bool{},
		lastsDone: make(chan struct{})}
}

// began marks the term's start: calls from now on are followed.
func (tc *termCalls) began() {
	tc.mu.Lock()
	tc.from = time.Now()
	tc.mu.Unlock()
}

func (tc *termCalls) seen(_ string, req, _ any) {
	txn, ok := req.(*etcdserverpb.TxnRequest)
	if !ok {
		return
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.from.IsZero() {
		return
	}
	tc.walk(txn)
	now := time.Now()
	if len(tc.specs) >= tc.n && tc.specsDone.IsZero() {
		tc.specsDone = now
	}
	if len(tc.regs) >= tc.n && tc.regsDone.IsZero() {
		tc.regsDone = now
	}
	if len(tc.lasts) >= tc.n && !tc.lastsClosed {
		tc.lastsClosed = true
		close(tc.lastsDone)
	}
}

func (tc *termCalls) walk(txn *etcdserverpb.TxnRequest) {
	for _, c := range txn.Compare {
		switch k := string(c.Key); {
		case strings.HasSuffix(k, "/spec"):
			tc.specs[k] = true
		case strings.HasSuffix(k, "/last"):
			tc.lasts[k], tc.claimed[k] = true, true
		}
	}
	// A catch-up's read of claim keys (claims.Refusals): groups of reads
	// at the head revision, where a gap's are at its term's.
	for _, op := range txn.Success {
		if nested := op.GetRequestTxn(); nested != nil {
			for _, r := range nested.Success {
				if g := r.GetRequestRange(); g != nil && g.Revision == 0 && strings.HasSuffix(string(g.Key), "/last") {
					tc.lasts[string(g.Key)] = true
				}
			}
		}
	}
	for _, op := range append(append([]*etcdserverpb.RequestOp{}, txn.Success...), txn.Failure...) {
		if p := op.GetRequestPut(); p != nil && strings.Contains(string(p.Key), "/by/") {
			tc.regs[string(p.Key)] = true
		}
		if nested := op.GetRequestTxn(); nested != nil {
			tc.walk(nested)
		}
	}
}

// newTerm runs one handover of n jobs on clients of cfg, under the key
// prefix prefix, and returns how long after the follower's term began its specs,
// its registrations and its catch-up were done.
func newTerm(b *testing.B, cfg clientv3.Config, prefix, name string, n int) (specs, regs, catchUp time.Duration) {
	tc := newTermCalls(n)
	start := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	fake := clock.NewFake(start)
	gained := make(chan struct{}, 1)
	replica := func(id string, follow bool) *Cron {
		cfg := cfg
		opts := []Option{withClock(fake), WithLocation(time.UTC), WithSeconds(), WithLogger(DiscardLogger), WithName(name),
			WithMisfire(RunOnce, time.Minute), WithElection(election.WithPrefix(prefix), election.WithIdentity(id), election.WithTTL(10*time.Second))}
		if follow {
			etcdtest.ObserveCalls(&cfg, tc.seen)
			opts = append(opts, WithObserver(Observer{OnLeadershipGained: func(Leadership) {
				tc.began()
				gained <- struct{}{}
			}}))
		}
		raw, err := clientv3.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { raw.Close() })
		c := New(append(opts, WithEtcd(raw))...)
		for i := range n {
			if _, err := c.AddJob(fmt.Sprintf("%d * * * * *", i%60), Named(fmt.Sprintf("job-%d", i), FuncJob(func() {}))); err != nil {
				b.Fatal(err)
			}
		}
		return c
	}
	cli, err := clientv3.New(cfg) // the benchmark's own, for what a leader leaves and the candidates
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	leader := replica("a", false)
	leader.Start()
	awaitLeading(b, leader)
	ranLatest(b, cli, prefix, name, n, start)
	follower := replica("b", true)
	follower.Start()
	defer func() { <-follower.Stop().Done() }()
	awaitCandidates(b, cli, prefix, name, 2)
	b.ResetTimer()
	<-leader.Stop().Done()
	select {
	case <-gained:
	case <-time.After(time.Minute):
		b.Fatal("the follower did not lead within 1m of the leader's Stop")
	}
	select {
	case <-tc.lastsDone:
	case <-time.After(2 * time.Minute):
		b.Fatal("the new term did not claim every job's catch-up within 2m")
	}
	<-follower.runs.idle().Done()
	done := time.Now()
	for deadline := done.Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		tc.mu.Lock()
		specsDone, regsDone, nspecs, nregs := tc.specsDone, tc.regsDone, len(tc.specs), len(tc.regs)
		tc.mu.Unlock()
		if !specsDone.IsZero() && !regsDone.IsZero() {
			b.StopTimer()
			tc.mu.Lock()
			from := tc.from
			tc.mu.Unlock()
			return specsDone.Sub(from), regsDone.Sub(from), done.Sub(from)
		}
		if time.Now().After(deadline) {
			b.Fatalf("the new term compared %d specs and put %d registrations of %d jobs within 2m of its catch-up", nspecs, nregs, n)
		}
	}
}

// ranLatest writes each of n jobs' claim key as the leader's claim of
// its latest tick by start, as a leader that has run for a minute leaves
// it: a handover's catch-up finds each tick claimed.
func ranLatest(b *testing.B, cli *clientv3.Client, prefix, name string, n int, start time.Time) {
	keys := jobkeys.New(prefix, name)
	var puts []clientv3.Op
	for i := range n {
		tick := start.Truncate(time.Minute).Add(time.Duration(i%60) * time.Second)
		if tick.After(start) {
			tick = tick.Add(-time.Minute)
		}
		puts = append(puts, clientv3.OpPut(keys.Last(fmt.Sprintf("job-%d", i)), claimcond.Value(tick.UnixNano(), "a")))
	}
	for len(puts) > 0 {
		k := min(len(puts), maxTxnOps)
		ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
		_, err := cli.Txn(ctx).Then(puts[:k]...).Commit()
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		puts = puts[k:]
	}
}

// awaitLeading waits until c leads, has written its specs and
// registrations and has claimed its catch-up.
func awaitLeading(b testing.TB, c *Cron) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pb := c.coord.specs
		pb.mu.Lock()
		published := !pb.writing && !pb.all && len(pb.pending) == 0
		pb.mu.Unlock()
		if c.coord.scheduling() && published {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the leader did not publish its jobs within 2m")
		}
		time.Sleep(10 * time.Millisecond)
	}
	<-c.runs.idle().Done()
}

// awaitCandidates waits until the election of scheduler name, under the
// key prefix prefix, has n candidates, as cli reads it.
func awaitCandidates(b testing.TB, cli *clientv3.Client, prefix, name string, n int64) {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := cli.Get(ctx, prefix+"/election/"+name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		cancel()
		if err == nil && resp.Count >= n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the election %q did not reach %d candidates within 1m (%v)", name, n, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
