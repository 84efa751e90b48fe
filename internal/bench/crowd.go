package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
)

// runCrowd measures a crowded tick in claim mode: n jobs due on one
// second on several replicas, each of which claims every job's tick, next
// to the same jobs on a Cron without etcd. Each measurement is a fresh
// etcd.
func runCrowd(ctx context.Context, h *harness) (*report, error) {
	r := &report{}
	t := r.table("jobs on one second", "replicas", "alone p99", "claim mode p50 / p99 / max", "all runs started", "runs, of ticks run", "etcd requests per run", "etcd CPU per run", "replicas' CPU per run")
	replicas := h.cfg.crowdReplicas
	for _, n := range h.cfg.crowdJobs {
		dir, err := h.subdir(fmt.Sprintf("crowd-%d", n))
		if err != nil {
			return nil, err
		}
		res, err := crowdOnce(ctx, h, dir, n, replicas)
		if err != nil {
			return nil, fmt.Errorf("%d jobs on %d replicas: %w", n, replicas, err)
		}
		a, c, bw := res.Alone, res.Coordinated, res.Window
		runs := float64(max(res.Runs, 1))
		t.row(strconv.Itoa(n), strconv.Itoa(replicas), ms(a.P99), ms(c.P50)+" / "+ms(c.P99)+" / "+ms(c.Max),
			ms(res.AllStarted), fmt.Sprintf("%d of %d", res.Runs, res.Ticks), num(bw.Requests/runs), us(bw.EtcdCPU, runs), us(bw.SelfCPU, runs))
		notRun := 0
		for _, reason := range slices.Sorted(maps.Keys(res.NotRun)) {
			k := res.NotRun[reason]
			notRun += k
			r.note("%d jobs on %d replicas: %d ticks reported not run (%s), and run by no replica.", n, replicas, k, reason)
		}
		if res.Dropped > 0 {
			r.note("%d jobs on %d replicas: the observers dropped %d events.", n, replicas, res.Dropped)
		}
		if missing := n - res.Ticks - notRun; missing > 0 {
			r.note("%d jobs on %d replicas: %d ticks neither ran nor were reported not run within a minute of the last that did.", n, replicas, missing)
		}
		if res.Runs != res.Ticks || res.Ticks+notRun != n {
			r.broke("%d jobs on %d replicas: %d runs of %d distinct ticks, %d reported not run: a tick ran more than once, or neither ran nor was reported", n, replicas, res.Runs, res.Ticks, notRun)
		}
		h.logf("crowd: %d jobs on %d replicas: p99 %v", n, replicas, c.P99)
	}
	if h.cfg.auth {
		r.note("etcd as `baton etcd` ships it: auth on, the Cron's client logged in as the app's user, whose role may use the prefix only (not root).")
	}
	r.note("The replicas are %d claim-mode Crons of the same jobs in one process, each with its own etcd client; every job runs once, at the same second. A run's lateness is its start after that second, whichever replica ran it. Requests and etcd CPU are over every replica's claims and records, per run; the replicas' CPU is the process's.", replicas)
	return r, nil
}

// crowdOnce measures n jobs on one second on replicas claim-mode Crons.
func crowdOnce(ctx context.Context, h *harness, dir string, n, replicas int) (jobsBurst, error) {
	var res jobsBurst
	etcd, err := h.startEtcd(ctx, dir)
	if err != nil {
		return res, err
	}
	defer etcd.stop(10 * time.Second)
	err = h.runWorker(ctx, dir, "jobs", etcd, jobsParams{Jobs: n, Layout: "burst", Settle: h.cfg.settle, Mode: "claim", Replicas: replicas}, &res)
	return res, err
}
