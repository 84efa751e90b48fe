package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// idleTTL is the idle figure's session TTL: baton's default.
const idleTTL = 10

// runIdle measures what a follower costs while a leader runs a job every
// second: a `baton crontab` leader, a `baton crontab` follower, and a cronx
// follower in a worker whose client counts every request it sends.
func runIdle(ctx context.Context, h *harness) (*report, error) {
	dir, err := h.subdir("idle")
	if err != nil {
		return nil, err
	}
	c, err := h.startCrontabCluster(ctx, dir, "idle", "", "--seconds", "--ttl", fmt.Sprint(idleTTL))
	if err != nil {
		return nil, err
	}
	defer c.close()
	leader, err := c.startReplica("leader")
	if err != nil {
		return nil, err
	}
	if _, err := c.steady(ctx, 1); err != nil {
		return nil, err
	}
	follower, err := c.startReplica("follower")
	if err != nil {
		return nil, err
	}
	if _, err := c.obs.wait(ctx, time.Minute, "the follower queued", func(s electionView) bool { return s.candidates == 2 }); err != nil {
		return nil, err
	}
	la, err := readProcUsage(leader.pid())
	if err != nil {
		return nil, err
	}
	fa, err := readProcUsage(follower.pid())
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var res idleResult
	if err := h.runWorker(ctx, dir, "idle", c.etcd, idleParams{Name: "idle", Candidates: 3, Window: h.cfg.idleWindow, Settle: h.cfg.settle}, &res); err != nil {
		return nil, err
	}
	elapsed := time.Since(start).Seconds()
	lb, err := readProcUsage(leader.pid())
	if err != nil {
		return nil, err
	}
	fb, err := readProcUsage(follower.pid())
	if err != nil {
		return nil, err
	}
	if res.Runs > 0 {
		return nil, fmt.Errorf("the follower ran %d jobs", res.Runs)
	}

	r := &report{}
	t := r.table("replica", "etcd requests per minute", "which", "CPU per minute", "memory")
	w := res.Window
	perMin := 60 / w.Seconds
	calls := serverCounts{byMethod: res.Calls}
	t.row("cronx follower in a worker process (counted by its client)", num(calls.requests()*perMin), calls.describe(perMin),
		perMinute(w.SelfCPU, w.Seconds, 1), "heap "+mib(res.Memory.Heap)+", RSS "+mib(res.Memory.RSS))
	t.row("`baton crontab` follower process", "as above (same code)", "", perMinute(fb.cpu-fa.cpu, elapsed, 1), "RSS "+mib(fb.rss))
	t.row("`baton crontab` leader process, running the job every second", "", "", perMinute(lb.cpu-la.cpu, elapsed, 1), "RSS "+mib(lb.rss))
	t.row("etcd, all three replicas", num(w.Requests*perMin), w.counts().describe(perMin), perMinute(w.EtcdCPU, w.Seconds, 1), "RSS "+mib(w.EtcdRSS))
	r.note("Measured over %v (not extrapolated), TTL %d s, while the leader ran `* * * * * *` (a shell appending to a file) every second; the followers have the same crontab. Requests are messages sent to etcd: unary calls, and each message on a stream (a keepalive is one, opening a watch is one).", h.cfg.idleWindow, idleTTL)
	r.note("A follower sends one lease keepalive every TTL/3 and holds one watch on the election, which costs nothing while the leader holds; it reads nothing and claims nothing per tick. The processes' CPU is over the worker's whole life, %.0f s, start-up included for neither (they started before).", elapsed)
	return r, nil
}

type idleParams struct {
	Name       string
	Candidates int
	Window     time.Duration
	Settle     time.Duration
}

type idleResult struct {
	Calls  map[string]float64
	Window span
	Memory memory
	Runs   int
}

func idleWorker(ctx context.Context, w *worker, raw json.RawMessage) (any, error) {
	var p idleParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	prefix := election.DefaultPrefix + "/election/" + p.Name + "/"
	own, err := newClient(w.endpoint)
	if err != nil {
		return nil, err
	}
	defer own.Close()
	counter := &rpcCounter{}
	cli, err := countingClient(w.endpoint, counter)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	rec := &runRecorder{nominal: secondOf}
	c := cronx.New(cronx.WithSeconds(), cronx.WithEtcd(cli), cronx.WithName(p.Name), cronx.WithSlog(w.logger),
		cronx.WithElection(election.WithTTL(idleTTL*time.Second), election.WithIdentity("worker")))
	if _, err := c.AddJob("* * * * * *", cronx.Named("tick", rec.job())); err != nil {
		return nil, err
	}
	c.Start()
	defer stopCron(ctx, c, time.Minute)
	err = poll(ctx, time.Minute, 50*time.Millisecond, "the worker's follower queued", func() (bool, error) {
		resp, err := own.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == int64(p.Candidates), nil
	})
	if err != nil {
		return nil, err
	}
	sleepCtx(ctx, p.Settle)
	ca := counter.snapshot()
	a, err := w.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	sleepCtx(ctx, p.Window)
	cb := counter.snapshot()
	b, err := w.snapshotEnd(ctx)
	if err != nil {
		return nil, err
	}
	calls := map[string]float64{}
	for k, v := range cb {
		if d := v - ca[k]; d != 0 {
			calls[k] = d
		}
	}
	return idleResult{Calls: calls, Window: spanOf(a, b), Memory: selfMemory(), Runs: rec.count()}, nil
}
