// Command bench measures the figures baton publishes in BENCHMARKS.md: how
// fast leadership passes on SIGTERM and on a crash, what a claimed tick costs
// next to an uncoordinated one, how the cost grows with jobs and replicas,
// and what an idle follower costs.
//
//	go run ./internal/bench              every figure, about 15 minutes
//	go run ./internal/bench handover     one figure
//	go run ./internal/bench -h           the figures and their flags
//
// Where a figure is about processes it runs real ones: a `baton etcd`
// member and `baton crontab` replicas, built from this checkout. The other
// figures run the SDK in a child process of this program, so that its CPU
// time and memory are the replicas' alone; etcd always runs in a process of
// its own and is measured apart.
//
// Each figure prints a Markdown table on standard output, with the command
// that reruns it and the load average of the machine before and after, and
// progress on standard error.
//
// Limits, said once for all figures: etcd is one member on the same
// machine, so a request costs a loopback round trip and one fsync to the
// local disk; a three-member cluster on a network adds a network round trip
// and a quorum write to every write. The machine's cores are shared with the
// replicas, etcd and this program.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// figure is one published measurement.
type figure struct {
	name    string
	summary string
	run     func(ctx context.Context, h *harness) (*report, error)
}

var figures = []figure{
	{"handover", "graceful handover: SIGTERM of the leading `baton crontab` → successor leads → its first tick", runHandover},
	{"failover", "crash failover: kill -9 of the leader → successor leads, as a fraction of the TTL", runFailover},
	{"claim", "per-tick claim cost and fire lateness, coordinated vs the same Cron without etcd", runClaim},
	{"jobs", "jobs per scheduler: etcd requests, CPU and memory for 1k–50k jobs, spread and on one second", runJobs},
	{"crowd", "a crowded tick in claim mode: 1k–10k jobs on one second on 3 replicas", runCrowd},
	{"replicas", "replicas per election: etcd requests, CPU and memory for 3–100 candidates", runReplicas},
	{"idle", "idle follower: etcd requests and CPU per minute", runIdle},
}

// config holds every figure's parameters, from flags.
type config struct {
	baton   string // a prebuilt baton binary; empty: build one
	verbose bool
	keep    bool
	auth    bool   // etcd as `baton etcd` ships it: auth on, a non-root user
	profile string // a directory for each worker's CPU, blocking and allocation profiles; empty: none

	handovers int

	failoverTTLs   []int
	failoverTrials int

	claimJobs  []int
	claimTicks int

	jobs        []int
	jobsWindow  time.Duration
	jobsStartup time.Duration

	crowdJobs     []int
	crowdReplicas int

	replicas       []int
	replicaProcs   []int
	replicasWindow time.Duration

	idleWindow time.Duration

	// settle is how long a measurement lets a start-up's last requests
	// finish before its window opens.
	settle time.Duration
}

func defaultConfig() config {
	return config{
		handovers:      50,
		failoverTTLs:   []int{2, 5, 10},
		failoverTrials: 5,
		claimJobs:      []int{1, 100, 1000},
		claimTicks:     6,
		jobs:           []int{1000, 10000, 50000},
		jobsWindow:     15 * time.Second,
		jobsStartup:    time.Minute,
		crowdJobs:      []int{1000, 10000},
		crowdReplicas:  3,
		replicas:       []int{3, 30, 100},
		replicaProcs:   []int{3, 30},
		replicasWindow: 20 * time.Second,
		idleWindow:     time.Minute,
		settle:         2 * time.Second,
	}
}

func main() {
	if workerMode() {
		os.Exit(runWorkerFromEnv())
	}
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

func runMain(args []string, stdout, stderr io.Writer) int {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.baton, "baton", "", "a prebuilt baton `binary` (default: go build ./convox/cmd/baton into a temporary directory)")
	fs.BoolVar(&cfg.verbose, "v", false, "print the output of baton processes and workers on standard error")
	fs.BoolVar(&cfg.auth, "auth", false, "run etcd as `baton etcd` ships it, with auth on, and measure as its app's user, a non-root role on the prefix")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the working directory (logs, ledgers, etcd data) and print its path")
	fs.StringVar(&cfg.profile, "profile", "", "write each worker's CPU, blocking and allocation profiles (go tool pprof) into `directory`, as <kind>-<n>.cpu, .block and .allocs; a crowded tick's worker writes its CPU from 200 ms before the tick to a second after it as <kind>-<n>.tick.cpu, and .cpu up to then")
	fs.IntVar(&cfg.handovers, "handovers", cfg.handovers, "handover: how many SIGTERM handovers")
	intList(fs, &cfg.failoverTTLs, "failover-ttls", "failover: session TTLs in seconds, a comma-separated `list`")
	fs.IntVar(&cfg.failoverTrials, "failover-trials", cfg.failoverTrials, "failover: kills per TTL")
	intList(fs, &cfg.claimJobs, "claim-jobs", "claim: jobs due on every tick, a comma-separated `list`, one measurement each")
	fs.IntVar(&cfg.claimTicks, "claim-ticks", cfg.claimTicks, "claim: ticks (seconds) measured per mode")
	intList(fs, &cfg.jobs, "jobs", "jobs: jobs per scheduler, a comma-separated `list`, one measurement each")
	fs.DurationVar(&cfg.jobsWindow, "jobs-window", cfg.jobsWindow, "jobs: how long the steady state of jobs spread over the minute is measured")
	fs.DurationVar(&cfg.jobsStartup, "jobs-startup", cfg.jobsStartup, "jobs: how long the leader's start-up may take before the steady state is measured anyway")
	intList(fs, &cfg.crowdJobs, "crowd-jobs", "crowd: jobs on one second, a comma-separated `list`, one measurement each")
	fs.IntVar(&cfg.crowdReplicas, "crowd-replicas", cfg.crowdReplicas, "crowd: claim-mode replicas")
	intList(fs, &cfg.replicas, "replicas", "replicas: candidates in one process, a comma-separated `list`, one measurement each")
	intList(fs, &cfg.replicaProcs, "replica-procs", "replicas: baton crontab processes, a comma-separated `list`, one measurement each")
	fs.DurationVar(&cfg.replicasWindow, "replicas-window", cfg.replicasWindow, "replicas: how long the idle election is measured")
	fs.DurationVar(&cfg.idleWindow, "idle-window", cfg.idleWindow, "idle: how long the follower is measured")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./internal/bench [flags] [figure...]\n\n")
		fmt.Fprintf(fs.Output(), "Measures baton's published figures (BENCHMARKS.md); with no figure, all of them.\n\nFigures:\n")
		for _, f := range figures {
			fmt.Fprintf(fs.Output(), "  %-9s %s\n", f.name, f.summary)
		}
		fmt.Fprintf(fs.Output(), "\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if cfg.crowdReplicas < 1 {
		fmt.Fprintf(stderr, "bench: -crowd-replicas=%d: want 1 or more\n", cfg.crowdReplicas)
		return 2
	}
	chosen, err := chooseFigures(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, chosen, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	return 0
}

// chooseFigures returns the figures named, in the order of figures, or all.
func chooseFigures(names []string) ([]figure, error) {
	if len(names) == 0 {
		return figures, nil
	}
	var out []figure
	for _, f := range figures {
		if slices.Contains(names, f.name) {
			out = append(out, f)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(figures, func(f figure) bool { return f.name == n }) {
			return nil, fmt.Errorf("no figure %q", n)
		}
	}
	return out, nil
}

// runFigure measures one figure. A figure that saw a promise broken
// returns its report and an error that names what broke.
func (h *harness) runFigure(ctx context.Context, f figure) (*report, error) {
	h.logf("%s: %s", f.name, f.summary)
	before := loadAverage()
	start := time.Now()
	rep, err := f.run(ctx, h)
	if err != nil {
		return nil, err
	}
	rep.figure = f
	rep.args = h.cfg.argsFor(f.name)
	rep.load = [2]string{before, loadAverage()}
	rep.took = time.Since(start)
	if len(rep.broken) > 0 {
		return rep, fmt.Errorf("%s", strings.Join(rep.broken, "; "))
	}
	return rep, nil
}

// run measures the chosen figures one after another, each on a fresh etcd.
func run(ctx context.Context, cfg config, chosen []figure, stdout, stderr io.Writer) error {
	h, err := newHarness(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer h.close()
	if cfg.auth {
		etcdAuth = benchUser
	}
	fmt.Fprintln(stdout, describeMachine())
	var failed []string
	for _, f := range chosen {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rep, err := h.runFigure(ctx, f)
		if rep != nil {
			rep.write(stdout)
		}
		if err != nil {
			h.logf("%s: %v", f.name, err)
			failed = append(failed, f.name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("figures failed: %s", strings.Join(failed, ", "))
	}
	return nil
}
