package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton/cronx"
)

// runClaim compares, in one run, the same jobs on a Cron without etcd
// (robfig/cron's behaviour: cronx passes robfig/cron's own test suite, G5)
// and on a coordinated Cron with one replica, in leader and in claim mode:
// what each run costs the replica's CPU and etcd, and how late it starts.
func runClaim(ctx context.Context, h *harness) (*report, error) {
	dir, err := h.subdir("claim")
	if err != nil {
		return nil, err
	}
	etcd, err := h.startEtcd(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer etcd.stop(10 * time.Second)
	r := &report{}
	t := r.table("jobs due every second", "Cron", "runs measured", "lateness p50", "p99", "max", "replica CPU per run", "etcd requests per run", "etcd CPU per run")
	rt := r.table("jobs due every second", "lateness p50, leader ÷ alone", "lateness p99, leader ÷ alone", "CPU per run, leader ÷ alone", "lateness p50, claim ÷ alone", "CPU per run, claim ÷ alone")
	modes := []string{"alone", "leader", "claim"}
	var fsyncs, fsyncSeconds float64
	for _, n := range h.cfg.claimJobs {
		res := map[string]claimResult{}
		for _, mode := range modes {
			var cr claimResult
			if err := h.runWorker(ctx, dir, "claim", etcd, claimParams{Jobs: n, Ticks: h.cfg.claimTicks, Mode: mode}, &cr); err != nil {
				return nil, fmt.Errorf("%d jobs, %s: %w", n, mode, err)
			}
			res[mode] = cr
			fsyncs += cr.Window.Fsyncs
			fsyncSeconds += cr.Window.FsyncSeconds
			runs := float64(max(cr.Late.Runs, 1))
			t.row(strconv.Itoa(n), modeName(mode), fmt.Sprintf("%d of %d", cr.Late.Runs, n*h.cfg.claimTicks),
				ms(cr.Late.P50), ms(cr.Late.P99), ms(cr.Late.Max),
				us(cr.Window.SelfCPU, runs), num(cr.Window.Requests/runs), us(cr.Window.EtcdCPU, runs))
			h.logf("claim: %d jobs, %s: p99 lateness %v", n, mode, cr.Late.P99)
		}
		cpu := func(m string) float64 {
			return float64(res[m].Window.SelfCPU) / float64(max(res[m].Late.Runs, 1))
		}
		rt.row(strconv.Itoa(n),
			ratio(float64(res["leader"].Late.P50), float64(res["alone"].Late.P50)),
			ratio(float64(res["leader"].Late.P99), float64(res["alone"].Late.P99)),
			ratio(cpu("leader"), cpu("alone")),
			ratio(float64(res["claim"].Late.P50), float64(res["alone"].Late.P50)),
			ratio(cpu("claim"), cpu("alone")))
	}
	r.note("Each row is a fresh process holding one Cron whose N jobs all run every second (`* * * * * *`), measured over %d ticks once it leads and has published its jobs; lateness is a run's start after its nominal tick. A run's etcd requests are those etcd received in the window divided by the runs: the claim (batched up to 30 per transaction in leader mode, one transaction per run in claim mode), releasing the in-progress marker and recording the run in the job's history (runs that end together are recorded up to 32 to a read and a write transaction), plus the session's keepalives.", h.cfg.claimTicks)
	if fsyncs > 0 {
		r.note("etcd's disk: its WAL fsyncs took %s on average (%.0f fsyncs in the measured windows).", ms(time.Duration(fsyncSeconds/fsyncs*float64(time.Second))), fsyncs)
	}
	r.note("\"alone\" is a cronx Cron without etcd. The main module does not depend on robfig/cron; cronx without etcd is robfig/cron by parity (robfig/cron v3.0.1's own test suite passes against it, `go test -run RobfigParity ./cronx/`), so it stands in for plain robfig/cron here.")
	r.note("Alone, a run costs microseconds, so the ratios are large; the absolute columns say what a coordinated tick costs. With one job, a run's share of CPU and requests is the process's whole cost per second: the Go runtime and, coordinated, the session's keepalives.")
	return r, nil
}

func modeName(mode string) string {
	switch mode {
	case "alone":
		return "alone (no etcd)"
	case "leader":
		return "leader mode"
	default:
		return "claim mode"
	}
}

// us formats d/n in microseconds.
func us(d time.Duration, n float64) string {
	return num(float64(d)/float64(time.Microsecond)/n) + " µs"
}

type claimParams struct {
	Jobs, Ticks int
	Mode        string
}

type claimResult struct {
	Late   lateness
	Window span
}

func claimWorker(ctx context.Context, w *worker, raw json.RawMessage) (any, error) {
	var p claimParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	rec := &runRecorder{nominal: secondOf}
	opts := []cronx.Option{cronx.WithSeconds(), cronx.WithSlog(w.logger)}
	var specs specCounter
	if p.Mode != "alone" {
		cli, err := countingClient(w.endpoint, &rpcCounter{onTxn: specs.observe})
		if err != nil {
			return nil, err
		}
		defer cli.Close()
		mode := cronx.LeaderMode
		if p.Mode == "claim" {
			mode = cronx.ClaimMode
		}
		opts = append(opts, cronx.WithEtcd(cli), cronx.WithMode(mode), cronx.WithName(fmt.Sprintf("claim-%s-%d", p.Mode, p.Jobs)))
	}
	c := cronx.New(opts...)
	for i := range p.Jobs {
		if _, err := c.AddJob("* * * * * *", cronx.Named(fmt.Sprintf("j%d", i), rec.job())); err != nil {
			return nil, err
		}
	}
	c.Start()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		select {
		case <-c.Stop().Done():
			return nil
		case <-sctx.Done():
			return fmt.Errorf("runs still going a minute after Stop")
		}
	}
	defer stop()
	err := poll(ctx, 2*time.Minute, 10*time.Millisecond, "the Cron to lead and run", func() (bool, error) {
		return (p.Mode == "alone" || specs.count() >= p.Jobs) && rec.count() > 0, nil
	})
	if err != nil {
		return nil, err
	}
	// Measure from the middle of a second, so that each tick's claims and
	// bookkeeping fall inside the window.
	if !untilFraction(ctx, 0.5) {
		return nil, ctx.Err()
	}
	a, err := w.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	sleepCtx(ctx, time.Duration(p.Ticks)*time.Second)
	b, err := w.snapshotEnd(ctx)
	if err != nil {
		return nil, err
	}
	if err := stop(); err != nil {
		return nil, err
	}
	return claimResult{Late: rec.lateness(a.at, b.at), Window: spanOf(a, b)}, nil
}
