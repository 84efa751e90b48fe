package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton/election"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// replicasTTL is the session TTL of the replicas figure: baton's default.
const replicasTTL = 10

// runReplicas measures one election with more and more candidates, in one
// process (election.New, a client each, as separate replicas would have)
// and as `baton crontab` processes: what the election costs etcd and each
// replica once every candidate is queued.
func runReplicas(ctx context.Context, h *harness) (*report, error) {
	r := &report{}
	it := r.table("candidates in one process", "all queued after", "start-up requests", "etcd requests/s", "per candidate", "CPU per candidate", "heap per candidate", "RSS per candidate", "etcd CPU", "etcd RSS")
	for _, n := range h.cfg.replicas {
		dir, err := h.subdir(fmt.Sprintf("replicas-%d", n))
		if err != nil {
			return nil, err
		}
		etcd, err := h.startEtcd(ctx, dir)
		if err != nil {
			return nil, err
		}
		var res replicasResult
		err = h.runWorker(ctx, dir, "replicas", etcd, replicasParams{Candidates: n, Window: h.cfg.replicasWindow, Settle: h.cfg.settle}, &res)
		etcd.stop(10 * time.Second)
		if err != nil {
			return nil, fmt.Errorf("%d candidates: %w", n, err)
		}
		w, f := res.Window, float64(n)
		it.row(strconv.Itoa(n), ms(res.Startup), num(res.StartupSpan.Requests), num(w.Requests/w.Seconds), num(w.Requests/w.Seconds/f),
			perMinute(w.SelfCPU, w.Seconds, f), kib((res.Memory.Heap-res.Base.Heap)/f), kib((res.Memory.RSS-res.Base.RSS)/f),
			percent(w.EtcdCPU, w.Seconds), mib(w.EtcdRSS))
		h.logf("replicas: %d in one process: %.1f requests/s (%s)", n, w.Requests/w.Seconds, w.counts().describe(1/w.Seconds))
	}
	pt := r.table("`baton crontab` processes", "all queued after", "etcd requests/s", "per process", "CPU per process, mean / max", "RSS per process, mean / max", "etcd CPU", "etcd RSS")
	for _, n := range h.cfg.replicaProcs {
		dir, err := h.subdir(fmt.Sprintf("replica-procs-%d", n))
		if err != nil {
			return nil, err
		}
		res, err := replicaProcs(ctx, h, dir, n)
		if err != nil {
			return nil, fmt.Errorf("%d processes: %w", n, err)
		}
		w := res.window
		pt.row(strconv.Itoa(n), ms(res.startup), num(w.Requests/w.Seconds), num(w.Requests/w.Seconds/float64(n)),
			perMinute(res.cpuMean, w.Seconds, 1)+" / "+perMinute(res.cpuMax, w.Seconds, 1),
			mib(res.rssMean)+" / "+mib(res.rssMax), percent(w.EtcdCPU, w.Seconds), mib(w.EtcdRSS))
		h.logf("replicas: %d processes: %.1f requests/s (%s)", n, w.Requests/w.Seconds, w.counts().describe(1/w.Seconds))
	}
	r.note("One election, TTL %d s (baton's default), measured for %v once every candidate is queued; the leader holds. Each candidate sends a lease keepalive every TTL/3 and holds one watch, so etcd's load grows linearly with candidates; a follower does nothing per tick.", replicasTTL, h.cfg.replicasWindow)
	r.note("In one process, per-candidate CPU and memory are the process's divided by the candidates, over its baseline (Go runtime, one client of its own). The processes run a crontab whose one job does not fire in the window (`0 0 1 1 *`), so they show what coordination itself costs a replica: a whole Go process with an etcd client.")
	r.note("Start-up is from the first candidate's start to the last one queued; each new key wakes every candidate's watch, so start-up requests grow faster than the candidates.")
	return r, nil
}

// perMinute formats cpu over seconds, divided by n, as CPU time per minute.
func perMinute(cpu time.Duration, seconds, n float64) string {
	return ms(time.Duration(float64(cpu)/n*60/seconds)) + "/min"
}

type procsResult struct {
	startup         time.Duration
	window          span
	cpuMean, cpuMax time.Duration
	rssMean, rssMax float64
}

// replicaProcs runs n `baton crontab` processes in one election and
// measures each process over the window.
func replicaProcs(ctx context.Context, h *harness, dir string, n int) (procsResult, error) {
	var res procsResult
	name := fmt.Sprintf("procs-%d", n)
	c, err := h.startCrontabCluster(ctx, dir, name, "yearly: 0 0 1 1 * true\n", "--ttl", strconv.Itoa(replicasTTL))
	if err != nil {
		return res, err
	}
	defer c.close()
	w := &worker{endpoint: c.etcd.endpoint, etcdPID: c.etcd.pid()}
	start := time.Now()
	for i := range n {
		if _, err := c.startReplica(fmt.Sprintf("p%d", i)); err != nil {
			return res, err
		}
	}
	if _, err := c.obs.wait(ctx, 2*time.Minute, fmt.Sprintf("%d candidates and a leader", n), func(s electionView) bool {
		return s.candidates == n && s.elected
	}); err != nil {
		return res, err
	}
	res.startup = time.Since(start)
	sleepCtx(ctx, h.cfg.settle)
	pids := c.pids()
	usage := func() (map[string]procUsage, error) {
		out := map[string]procUsage{}
		for id, pid := range pids {
			u, err := readProcUsage(pid)
			if err != nil {
				return nil, err
			}
			out[id] = u
		}
		return out, nil
	}
	a, err := w.snapshot(ctx)
	if err != nil {
		return res, err
	}
	ua, err := usage()
	if err != nil {
		return res, err
	}
	sleepCtx(ctx, h.cfg.replicasWindow)
	b, err := w.snapshotEnd(ctx)
	if err != nil {
		return res, err
	}
	ub, err := usage()
	if err != nil {
		return res, err
	}
	res.window = spanOf(a, b)
	var cpuSum time.Duration
	var rssSum float64
	for id, u := range ub {
		d := u.cpu - ua[id].cpu
		cpuSum += d
		res.cpuMax = max(res.cpuMax, d)
		rssSum += u.rss
		res.rssMax = max(res.rssMax, u.rss)
	}
	res.cpuMean = cpuSum / time.Duration(len(ub))
	res.rssMean = rssSum / float64(len(ub))
	return res, nil
}

type replicasParams struct {
	Candidates int
	Window     time.Duration
	Settle     time.Duration
}

type replicasResult struct {
	Base, Memory memory
	Startup      time.Duration
	StartupSpan  span
	Window       span
}

func replicasWorker(ctx context.Context, w *worker, raw json.RawMessage) (any, error) {
	var p replicasParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	var res replicasResult
	const name = "replicas"
	prefix := election.DefaultPrefix + "/election/" + name + "/"
	own, err := newClient(w.endpoint)
	if err != nil {
		return nil, err
	}
	defer own.Close()
	if _, err := own.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		return nil, err
	}
	res.Base = selfMemory()

	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var clients []*clientv3.Client
	defer func() {
		cancel()
		wg.Wait()
		for _, c := range clients {
			c.Close()
		}
	}()
	s0, err := w.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	for i := range p.Candidates {
		cli, err := newClient(w.endpoint)
		if err != nil {
			return nil, err
		}
		clients = append(clients, cli)
		e, err := election.New(cli, name, election.WithIdentity(fmt.Sprintf("c%d", i)),
			election.WithTTL(replicasTTL*time.Second), election.WithLogger(w.logger))
		if err != nil {
			return nil, err
		}
		wg.Go(func() {
			e.Run(cctx, func(ctx context.Context, _ election.Term) { <-ctx.Done() })
		})
	}
	err = poll(ctx, 5*time.Minute, 50*time.Millisecond, "every candidate queued", func() (bool, error) {
		resp, err := own.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err == nil && resp.Count == int64(p.Candidates), nil
	})
	if err != nil {
		return nil, err
	}
	res.Startup = time.Since(s0.at)
	s1, err := w.snapshotEnd(ctx)
	if err != nil {
		return nil, err
	}
	res.StartupSpan = spanOf(s0, s1)
	sleepCtx(ctx, p.Settle)
	a, err := w.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	sleepCtx(ctx, p.Window)
	b, err := w.snapshotEnd(ctx)
	if err != nil {
		return nil, err
	}
	res.Window = spanOf(a, b)
	res.Memory = selfMemory()
	return res, nil
}
