package cronx

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
)

func percentile(samples []time.Duration, q float64) time.Duration {
	slices.Sort(samples)
	return samples[int(q*float64(len(samples)-1))]
}

// BenchmarkClaim measures the transaction that claims one tick in leader
// mode (term fence, pause check, in-progress marker), on one embedded member:
//
//	go test -run '^$' -bench Claim -benchtime 2000x ./cronx/
func BenchmarkClaim(b *testing.B) {
	srv := etcdtest.Shared(b)
	cli := srv.Client(b)
	ctx := context.Background()
	sess, err := election.NewSession(ctx, cli, election.WithTTL(10*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close(ctx)
	term := election.Fence{Key: "/bench/leader", Revision: 0}
	if resp, err := cli.Put(ctx, term.Key, "me"); err != nil {
		b.Fatal(err)
	} else {
		term.Revision = resp.Header.Revision
	}
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seq := int64(i + 1)
		start := time.Now()
		c, err := election.ClaimSeq(ctx, cli, "/bench/jobs/j/last", seq,
			election.ClaimedBy("me"), election.UnderTerm(term),
			claims.UnlessExists("/bench/jobs/j/paused", ErrPaused),
			claims.WithMarker(fmt.Sprintf("/bench/jobs/j/running/%020d", seq), sess.Lease()))
		samples = append(samples, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		claims.Release(ctx, cli, c)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(percentile(samples, 0.5))/1e6, "p50-ms")
	b.ReportMetric(float64(percentile(samples, 0.99))/1e6, "p99-ms")
	b.ReportMetric(0, "ns/op")
}

// manyJobs adds n jobs on one minute to c and returns a channel that gets
// each run's start.
func manyJobs(b *testing.B, c *Cron, n int) <-chan time.Time {
	started := make(chan time.Time, n)
	for i := range n {
		job := FuncJob(func() { started <- time.Now() })
		if _, err := c.AddJob("* * * * *", Named(fmt.Sprintf("job-%d", i), job)); err != nil {
			b.Fatal(err)
		}
	}
	return started
}

// fireLateness starts c on a fake clock, moves the clock to the next minute
// and returns how long after that each of n jobs started.
func fireLateness(b *testing.B, c *Cron, fake *clock.Fake, n int, started <-chan time.Time, ready func()) []time.Duration {
	c.Start()
	defer func() { <-c.Stop().Done() }()
	ready()
	due, ok := fake.NextDue()
	if !ok {
		b.Fatal("no timer armed")
	}
	at := time.Now()
	fake.Set(due)
	late := make([]time.Duration, 0, n)
	timeout := time.After(5 * time.Minute)
	for len(late) < n {
		select {
		case s := <-started:
			late = append(late, s.Sub(at))
		case <-timeout:
			b.Fatalf("%d of %d jobs ran", len(late), n)
		}
	}
	return late
}

// BenchmarkTenThousandJobs compares fire lateness of 10,000 jobs due on the
// same minute, coordinated in leader mode on one embedded member, with the
// same jobs on a Cron that runs alone (robfig/cron's behaviour):
//
//	go test -run '^$' -bench TenThousandJobs -benchtime 1x ./cronx/
func BenchmarkTenThousandJobs(b *testing.B) { benchTenThousandJobs(b) }

// benchTenThousandJobs is BenchmarkTenThousandJobs with opts given to both
// Crons.
func benchTenThousandJobs(b *testing.B, opts ...Option) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("BATON_BENCH_JOBS")); err == nil {
		n = v // a smaller run, to try the benchmark out
	}
	start := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	for i := 0; i < b.N; i++ {
		fake := clock.NewFake(start)
		alone := New(append([]Option{withClock(fake), WithLocation(time.UTC)}, opts...)...)
		startedAlone := manyJobs(b, alone, n)
		lateAlone := fireLateness(b, alone, fake, n, startedAlone, func() { fake.WaitTimers(1, time.Minute) })

		srv := etcdtest.Start(b) // of its own: the figure is of etcd, not of a key space's auth
		cli := srv.Client(b)
		fake = clock.NewFake(start)
		coord := New(append([]Option{withClock(fake), WithLocation(time.UTC), WithEtcd(cli), WithName("bench"),
			WithElection(election.WithTTL(10 * time.Second))}, opts...)...)
		startedCoord := manyJobs(b, coord, n)
		lateCoord := fireLateness(b, coord, fake, n, startedCoord, func() {
			for !coord.coord.scheduling() {
				time.Sleep(time.Millisecond)
			}
			// A new leader sleeps on an idle wait until its loop resyncs.
			fake.WaitDueBy(start.Truncate(time.Minute).Add(time.Minute), time.Minute)
			// and claims, one by one, the catch-up of each job: the figure
			// is of a tick in steady state, after them.
			select {
			case <-coord.runs.idle().Done():
			case <-time.After(2 * time.Minute):
				b.Fatal("the new leader's catch-up claims did not end within 2m")
			}
		})
		a, c := percentile(lateAlone, 0.99), percentile(lateCoord, 0.99)
		b.ReportMetric(float64(a)/1e6, "alone-p99-ms")
		b.ReportMetric(float64(c)/1e6, "coordinated-p99-ms")
		b.ReportMetric(float64(c-a)/1e6, "extra-p99-ms")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkHeapPerJob compares the heap 10,000 registered jobs take on a
// coordinated Cron with a Cron that runs alone:
//
//	go test -run '^$' -bench HeapPerJob -benchtime 1x ./cronx/
func BenchmarkHeapPerJob(b *testing.B) { benchHeapPerJob(b) }

// benchHeapPerJob is BenchmarkHeapPerJob with opts given to both Crons.
func benchHeapPerJob(b *testing.B, opts ...Option) {
	const n = 10000
	measure := func(c *Cron) int64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			if _, err := c.AddFunc("* * * * *", func() {}); err != nil {
				b.Fatal(err)
			}
			_ = i
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(c)
		return int64(after.HeapAlloc) - int64(before.HeapAlloc)
	}
	srv := etcdtest.Shared(b)
	cli := srv.Client(b)
	var alone, coord int64
	var mu sync.Mutex
	for i := 0; i < b.N; i++ {
		a := measure(New(opts...))
		c := measure(New(append([]Option{WithEtcd(cli), WithName(fmt.Sprintf("heap-%d", i))}, opts...)...))
		mu.Lock()
		alone, coord = a, c
		mu.Unlock()
	}
	b.ReportMetric(float64(alone)/n, "alone-B/job")
	b.ReportMetric(float64(coord)/n, "coordinated-B/job")
	b.ReportMetric(float64(coord)/float64(alone), "ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkTenThousandJobsJitter is BenchmarkTenThousandJobs with every job
// given WithJitter(10s) (BATON_BENCH_JITTER overrides it): each job is
// claimed and started at its own delay after the tick, so the claims spread
// over the jitter instead of coming all at once. It reports how late each
// job started after its own slot (tick plus delay), and the most runs
// started in any one second:
//
//	go test -run '^$' -bench TenThousandJobsJitter -benchtime 1x ./cronx/
func BenchmarkTenThousandJobsJitter(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("BATON_BENCH_JOBS")); err == nil {
		n = v
	}
	jitter := 10 * time.Second
	if v, err := time.ParseDuration(os.Getenv("BATON_BENCH_JITTER")); err == nil {
		jitter = v
	}
	for i := 0; i < b.N; i++ {
		srv := etcdtest.Shared(b)
		cli := srv.Client(b)
		// A real clock, shifted so that the minute's tick comes 10 s after
		// the jobs are added: the delays pass on real timers.
		now := time.Now()
		tick := now.Truncate(time.Minute).Add(time.Minute)
		offset := tick.Add(-10 * time.Second).Sub(now)
		clk := offsetClock{offset}
		c := New(withClock(clk), WithLocation(time.UTC), WithEtcd(cli), WithName(fmt.Sprintf("jitter-%d", i)),
			WithElection(election.WithTTL(10*time.Second)), WithJobOptions(WithJitter(jitter)))
		type run struct {
			job string
			at  time.Time
		}
		started := make(chan run, n)
		for j := range n {
			job := ContextFunc(func(ctx context.Context) error {
				info, _ := InfoFrom(ctx)
				started <- run{info.Job, time.Now()}
				return nil
			})
			if _, err := c.AddJob("* * * * *", Named(fmt.Sprintf("job-%d", j), job)); err != nil {
				b.Fatal(err)
			}
		}
		c.Start()
		for !c.coord.scheduling() {
			time.Sleep(time.Millisecond)
		}
		if clk.Now().After(tick) {
			b.Fatal("the leader was elected after the tick")
		}
		at := tick.Add(-offset) // the tick, on the machine's clock
		late := make([]time.Duration, 0, n)
		perSecond := map[int64]int{}
		timeout := time.After(jitter + 5*time.Minute)
		for len(late) < n {
			select {
			case r := <-started:
				slot := at.Add(jitterOf(r.job, tick, jitter))
				late = append(late, r.at.Sub(slot))
				perSecond[int64(r.at.Sub(at)/time.Second)]++
			case <-timeout:
				b.Fatalf("%d of %d jobs ran", len(late), n)
			}
		}
		<-c.Stop().Done()
		peak := 0
		for _, k := range perSecond {
			peak = max(peak, k)
		}
		b.ReportMetric(float64(percentile(late, 0.5))/1e6, "p50-ms")
		b.ReportMetric(float64(percentile(late, 0.99))/1e6, "p99-ms")
		b.ReportMetric(float64(peak), "peak-starts/s")
	}
	b.ReportMetric(0, "ns/op")
}
