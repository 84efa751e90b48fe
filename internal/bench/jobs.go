package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton/cronx"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// runJobs measures one scheduler with many jobs, each running once a minute:
// spread over the minute as real schedules are, and all on the same second,
// the worst case. Each measurement is a fresh process and a fresh etcd.
func runJobs(ctx context.Context, h *harness) (*report, error) {
	r := &report{}
	st := r.table("jobs, spread over the minute", "leader start-up", "start-up requests", "steady etcd requests/s", "runs/s, of due", "replica CPU", "etcd CPU", "heap alone → coordinated", "live heap per job, alone → coordinated", "replica RSS", "etcd RSS", "lateness p99")
	bt := r.table("jobs, all on one second", "alone: lateness p50 / p99 / max", "coordinated: lateness p50 / p99 / max", "coordinated, the next tick", "all runs started", "bookkeeping done", "etcd requests per run", "replica CPU per run", "etcd CPU per run")
	for _, n := range h.cfg.jobs {
		dir, err := h.subdir(fmt.Sprintf("jobs-%d", n))
		if err != nil {
			return nil, err
		}
		spread, burst, err := jobsOnce(ctx, h, dir, n)
		if err != nil {
			return nil, fmt.Errorf("%d jobs: %w", n, err)
		}
		w := spread.Window
		startup := ms(spread.Startup)
		if spread.Published < n {
			startup = fmt.Sprintf("> %s (%d%% published)", startup, 100*spread.Published/n)
		}
		st.row(strconv.Itoa(n), startup, num(spread.StartupSpan.Requests), num(w.Requests/w.Seconds),
			num(float64(spread.Late.Runs)/w.Seconds)+" of "+num(float64(n)/60), percent(w.SelfCPU, w.Seconds), percent(w.EtcdCPU, w.Seconds),
			mib(spread.Alone.Heap)+" → "+mib(spread.Memory.Heap-spread.Base.Heap), perJob(spread.Alone.Live, spread.Memory.Live-spread.Base.Live, n),
			mib(spread.Memory.RSS), mib(w.EtcdRSS), ms(spread.Late.P99))
		a, c, bw := burst.Alone, burst.Coordinated, burst.Window
		runs := float64(max(burst.Runs, 1))
		nx := burst.Next
		bt.row(strconv.Itoa(n), ms(a.P50)+" / "+ms(a.P99)+" / "+ms(a.Max), ms(c.P50)+" / "+ms(c.P99)+" / "+ms(c.Max), ms(nx.P50)+" / "+ms(nx.P99)+" / "+ms(nx.Max),
			ms(burst.AllStarted), ms(burst.Drained), num(bw.Requests/runs), us(bw.SelfCPU, runs), us(bw.EtcdCPU, runs))
		if spread.Published < n {
			r.note("%d jobs spread: after %v the leader had published %d%% of the jobs' specs; it publishes them behind the runs' own requests, and the steady state was measured with the publication still going.", n, spread.Startup.Round(time.Second), 100*spread.Published/n)
		}
		if burst.Published < n {
			r.note("%d jobs on one second: the leader had published %d%% of the specs when the second came; the publication went on beside the runs, and its requests are in the row.", n, 100*burst.Published/n)
		}
		// The ticks' times in Unix seconds, as `perf report --time` takes
		// them from a `perf record -k CLOCK_REALTIME`.
		h.logf("jobs: %d: steady %.0f requests/s, burst p99 %v (tick at %d), next tick p99 %v (at %d); the burst's requests: %s",
			n, w.Requests/w.Seconds, c.P99, burst.At.Unix(), nx.P99, burst.NextAt.Unix(), bw.counts().describe(1))
	}
	if h.cfg.auth {
		r.note("etcd as `baton etcd` ships it: auth on, the Cron's client logged in as the app's user, whose role may use the prefix only (not root).")
	}
	r.note("One coordinated Cron (leader mode, TTL 10 s, one replica) in a process of its own; each job runs once a minute. Spread: job i at second i mod 60 (`S * * * * *`), measured for %v of steady state after the start-up. On one second: every job at the same second, each job's first tick, then its next tick 10–40 s later in the same minute (the steady tick, with every job's claim key written); requests and CPU per run are over both.", h.cfg.jobsWindow)
	r.note("Leader start-up is from Start until the leader has published every job's spec, publication mark and registration (specs checked 2000 to a read-only transaction and written 120 to a transaction where one differs, registrations 4000 to a transaction), which it does once per term; a fresh scheduler also tries to catch up each job's tick missed in the last minute (policy RunOnce), 256 jobs to a transaction, and finds none. Runs continue meanwhile.")
	r.note("Requests are those etcd received (its gRPC counters): per run, a share of a batched claim (256 jobs to a transaction) and of the recording, which releases the markers and reads and writes the histories of up to 1024 runs in two transactions. CPU is user+system time as a share of one core. Heap is in use after a GC, above the process's baseline: the heap's spans (HeapInuse), and the live objects in them (HeapAlloc) per job; alone is the same jobs on a Cron without etcd, started and measured after the same window. \"Bookkeeping done\" is when Stop returned: every run's release and history write finished.")
	return r, nil
}

func percent(cpu time.Duration, seconds float64) string {
	return num(100*cpu.Seconds()/seconds) + " %"
}

// jobsOnce measures n jobs spread over the minute, then n jobs on one
// second, on one etcd.
func jobsOnce(ctx context.Context, h *harness, dir string, n int) (jobsSpread, jobsBurst, error) {
	var spread jobsSpread
	var burst jobsBurst
	etcd, err := h.startEtcd(ctx, dir)
	if err != nil {
		return spread, burst, err
	}
	defer etcd.stop(10 * time.Second)
	if err := h.runWorker(ctx, dir, "jobs", etcd, jobsParams{Jobs: n, Layout: "spread", Window: h.cfg.jobsWindow, Settle: h.cfg.settle, Startup: h.cfg.jobsStartup}, &spread); err != nil {
		return spread, burst, err
	}
	err = h.runWorker(ctx, dir, "jobs", etcd, jobsParams{Jobs: n, Layout: "burst", Settle: h.cfg.settle, Next: true}, &burst)
	return spread, burst, err
}

type jobsParams struct {
	Jobs    int
	Layout  string // spread or burst
	Window  time.Duration
	Settle  time.Duration
	Startup time.Duration // spread: how long the start-up may take
	// burst: the coordination mode ("" is leader) and how many replicas
	// (Crons of the same jobs, each with a client of its own; 0 is one).
	Mode     string
	Replicas int
	// burst: the coordinated jobs tick again later in the same minute,
	// each job's next tick after its first: the steady tick.
	Next bool
}

type jobsSpread struct {
	Base, Memory memory
	Alone        memory // above its own baseline
	Startup      time.Duration
	Published    int // jobs published when the start-up ended or was cut short
	StartupSpan  span
	Window       span
	Late         lateness
}

type jobsBurst struct {
	Alone, Coordinated  lateness
	Next                lateness      // the coordinated jobs' next tick, when measured
	At, NextAt          time.Time     // the coordinated jobs' first and next tick
	AllStarted, Drained time.Duration // after the second (the first tick's), and after the last tick
	Window              span
	Published           int            // jobs whose specs the leader had published by the second
	Runs, Ticks         int            // coordinated runs of the second's ticks, every replica's, and the distinct ticks among them
	NotRun              map[string]int // ticks reported not run and never run, by reason
	Dropped             int            // observer events dropped
}

func jobsWorker(ctx context.Context, w *worker, raw json.RawMessage) (any, error) {
	var p jobsParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if p.Layout == "spread" {
		return jobsSpreadWorker(ctx, w, p)
	}
	return jobsBurstWorker(ctx, w, p)
}

// addJobs adds n jobs named j0… on spec(i) and returns their recorder.
func addJobs(c *cronx.Cron, n int, nominal func(time.Time) time.Time, spec func(i int) string) (*runRecorder, error) {
	rec := &runRecorder{nominal: nominal}
	return rec, addJobsTo(c, rec, n, spec)
}

// addJobsTo adds n jobs named j0… on spec(i), recorded by rec.
func addJobsTo(c *cronx.Cron, rec *runRecorder, n int, spec func(i int) string) error {
	job := rec.job()
	for i := range n {
		if _, err := c.AddJob(spec(i), cronx.Named("j"+strconv.Itoa(i), job)); err != nil {
			return err
		}
	}
	return nil
}

// stopCron stops c and waits for its runs, at most timeout.
func stopCron(ctx context.Context, c *cronx.Cron, timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.Stop().Done():
		return nil
	case <-t.C:
		return fmt.Errorf("runs still going %v after Stop", timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func jobsSpreadWorker(ctx context.Context, w *worker, p jobsParams) (jobsSpread, error) {
	var res jobsSpread
	spec := func(i int) string { return fmt.Sprintf("%d * * * * *", i%60) }
	opts := []cronx.Option{cronx.WithSeconds(), cronx.WithLocation(time.UTC), cronx.WithSlog(w.logger)}

	var err error
	if res.Alone, err = aloneMemory(ctx, p.Jobs, opts, spec, p.Window); err != nil {
		return res, err
	}

	var specs specCounter
	cli, err := countingClient(w.endpoint, &rpcCounter{onTxn: specs.observe})
	if err != nil {
		return res, err
	}
	defer cli.Close()
	res.Base = selfMemory()
	c := cronx.New(append(opts, cronx.WithEtcd(cli), cronx.WithName(fmt.Sprintf("spread-%d", p.Jobs)))...)
	rec, err := addJobs(c, p.Jobs, secondOf, spec)
	if err != nil {
		return res, err
	}
	s0, err := w.snapshot(ctx)
	if err != nil {
		return res, err
	}
	c.Start()
	defer stopCron(ctx, c, 5*time.Minute)
	// A leader that cannot keep up with its runs may take much longer to
	// publish every job; past the limit, the steady state is measured
	// anyway, and the share published is reported.
	limit := time.Now().Add(p.Startup)
	for specs.count() < p.Jobs && time.Now().Before(limit) {
		if !sleepCtx(ctx, 10*time.Millisecond) {
			return res, ctx.Err()
		}
	}
	res.Startup = time.Since(s0.at)
	res.Published = specs.count()
	s1, err := w.snapshotEnd(ctx)
	if err != nil {
		return res, err
	}
	res.StartupSpan = spanOf(s0, s1)
	sleepCtx(ctx, p.Settle) // the start-up's last claims and records
	if !untilFraction(ctx, 0.5) {
		return res, ctx.Err()
	}
	a, err := w.snapshot(ctx)
	if err != nil {
		return res, err
	}
	sleepCtx(ctx, p.Window)
	b, err := w.snapshotEnd(ctx)
	if err != nil {
		return res, err
	}
	res.Window = spanOf(a, b)
	res.Memory = selfMemory()
	res.Late = rec.latenessStarted(a.at, b.at)
	return res, stopCron(ctx, c, 5*time.Minute)
}

// publishLatency is the mean time of n transactions made one after another
// like a leader's publication of a job's spec.
func publishLatency(ctx context.Context, endpoint string, n int) (time.Duration, error) {
	cli, err := newClient(endpoint)
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	const prefix = "/baton/bench-calibrate/" // under the user's prefix
	start := time.Now()
	for i := range n {
		key := prefix + strconv.Itoa(i)
		_, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", "spec")).Else(clientv3.OpPut(key, "spec")).Commit()
		if err != nil {
			return 0, err
		}
	}
	per := time.Since(start) / time.Duration(n)
	_, err = cli.Delete(ctx, prefix, clientv3.WithPrefix())
	return per, err
}

// aloneMemory is the heap that n jobs take on a Cron without etcd that has
// run them for window.
func aloneMemory(ctx context.Context, n int, opts []cronx.Option, spec func(int) string, window time.Duration) (memory, error) {
	before := selfMemory()
	alone := cronx.New(opts...)
	if _, err := addJobs(alone, n, secondOf, spec); err != nil {
		return memory{}, err
	}
	alone.Start()
	sleepCtx(ctx, window)
	after := selfMemory()
	if err := stopCron(ctx, alone, time.Minute); err != nil {
		return memory{}, err
	}
	return memory{Heap: after.Heap - before.Heap, Live: after.Live - before.Live}, nil
}

func jobsBurstWorker(ctx context.Context, w *worker, p jobsParams) (jobsBurst, error) {
	var res jobsBurst
	opts := []cronx.Option{cronx.WithSeconds(), cronx.WithLocation(time.UTC), cronx.WithSlog(w.logger)}
	once := func(t time.Time) func(int) string {
		s := fmt.Sprintf("%d %d %d * * *", t.Second(), t.Minute(), t.Hour())
		return func(int) string { return s }
	}
	waitRuns := func(rec *runRecorder, what string) error {
		return poll(ctx, 10*time.Minute, time.Millisecond, what, func() (bool, error) { return rec.count() >= p.Jobs, nil })
	}

	// Alone: registering is quick; the second is a little ahead.
	at := time.Now().UTC().Add(time.Second + time.Duration(p.Jobs)*40*time.Microsecond).Truncate(time.Second).Add(time.Second)
	alone := cronx.New(opts...)
	rec, err := addJobs(alone, p.Jobs, func(time.Time) time.Time { return at }, once(at))
	if err != nil {
		return res, err
	}
	if time.Until(at) < 100*time.Millisecond {
		return res, fmt.Errorf("adding %d jobs took until their second, %v", p.Jobs, at)
	}
	alone.Start()
	if err := waitRuns(rec, "every run alone"); err != nil {
		return res, err
	}
	if err := stopCron(ctx, alone, time.Minute); err != nil {
		return res, err
	}
	res.Alone = rec.lateness(at, at.Add(time.Second))

	var specs specCounter
	mode := cronx.LeaderMode
	if p.Mode == "claim" {
		mode = cronx.ClaimMode
	}
	replicas := max(p.Replicas, 1)
	// The second must come after the start-up, which publishes one job at
	// a time on each replica: time a few such transactions to know how
	// long.
	per, err := publishLatency(ctx, w.endpoint, 100)
	if err != nil {
		return res, err
	}
	lead := time.Duration(p.Jobs*replicas)*per*13/10 + p.Settle + time.Second
	at = time.Now().UTC().Add(lead).Truncate(time.Second).Add(time.Second)
	spec := once(at)
	ticks := 1
	var next time.Time
	if p.Next {
		// The next tick in the same minute, once the first tick's runs are
		// recorded.
		gap := min(10*time.Second+time.Duration(p.Jobs)*400*time.Microsecond, 40*time.Second).Truncate(time.Second)
		if at.Add(gap).Minute() != at.Minute() {
			at = at.Truncate(time.Minute).Add(time.Minute)
		}
		next = at.Add(gap)
		s := fmt.Sprintf("%d,%d %d %d * * *", at.Second(), next.Second(), at.Minute(), at.Hour())
		spec = func(int) string { return s }
		ticks = 2
	}
	rec = &runRecorder{nominal: func(time.Time) time.Time { return at }}
	crons := make([]*cronx.Cron, replicas)
	stopAll := func(timeout time.Duration) error {
		var first error
		for _, c := range crons {
			if err := stopCron(ctx, c, timeout); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	for i := range crons {
		cli, err := countingClient(w.endpoint, &rpcCounter{onTxn: specs.observe})
		if err != nil {
			return res, err
		}
		defer cli.Close()
		c := cronx.New(append(opts, cronx.WithEtcd(cli), cronx.WithName(fmt.Sprintf("burst-%d", p.Jobs)), cronx.WithMode(mode), cronx.WithObserver(rec.observer()))...)
		if err := addJobsTo(c, rec, p.Jobs, spec); err != nil {
			return res, err
		}
		crons[i] = c
	}
	if time.Until(at) < 100*time.Millisecond {
		return res, fmt.Errorf("adding %d jobs to %d replicas took until their second, %v", p.Jobs, replicas, at)
	}
	for _, c := range crons {
		c.Start()
	}
	sleepCtx(ctx, time.Until(at.Add(-200*time.Millisecond)))
	// With -profile, the CPU from here to a second after the first tick.
	if err := w.cpu.tick(at.Add(time.Second)); err != nil {
		return res, err
	}
	a, err := w.snapshot(ctx)
	if err != nil {
		return res, err
	}
	res.Published = specs.count() / replicas
	// Every tick ran, or a replica reported it not run (a tick lost with a
	// session etcd did not keep alive in time); or a minute went by with
	// neither, and the figure reports what is missing.
	for tick := 1; tick <= ticks; tick++ {
		last, lastAt := 0, time.Now()
		err = poll(ctx, 10*time.Minute, time.Millisecond, "every coordinated tick run or reported", func() (bool, error) {
			n := rec.settledTicks()
			if n != last {
				last, lastAt = n, time.Now()
			}
			return n >= tick*p.Jobs || time.Since(lastAt) > time.Minute, nil
		})
		if err != nil {
			stopAll(time.Minute)
			return res, err
		}
		if tick == 1 {
			res.AllStarted = rec.lastStart().Sub(at)
		}
	}
	if err := stopAll(5 * time.Minute); err != nil {
		return res, err
	}
	res.Drained = time.Since(at)
	if p.Next {
		res.Drained = time.Since(next)
		res.Next = rec.lateness(next, next.Add(time.Second))
	}
	b, err := w.snapshotEnd(ctx)
	if err != nil {
		return res, err
	}
	res.Window = spanOf(a, b)
	res.Coordinated = rec.lateness(at, at.Add(time.Second))
	res.At, res.NextAt = at, next
	res.Runs, res.Ticks = rec.count(), rec.ticks()
	res.Dropped = rec.droppedEvents()
	for reason, n := range rec.lost() {
		if res.NotRun == nil {
			res.NotRun = map[string]int{}
		}
		res.NotRun[reason.String()] = n
	}
	return res, nil
}
