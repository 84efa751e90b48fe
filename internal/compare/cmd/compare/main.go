// Command compare runs the workload — a job every second that appends a line
// to a shared ledger — under every contender and every scenario, counts
// duplicates, missed ticks, handover and failover times from the ledgers, and
// prints the table and writes it to RESULTS.md.
//
//	cd internal/compare && go run ./cmd/compare
//
// It needs redis-server (installed with apt-get when missing) and builds the
// baton command from the enclosing module. README.md explains the contenders,
// the scenarios and how each is measured.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	var e env
	only := flag.String("contenders", "", "comma-separated contender keys to run (default all: "+keys(contenders)+")")
	which := flag.String("scenarios", "", "comma-separated scenario keys to run (default all: "+scenarioKeys()+")")
	serial := flag.Bool("serial", false, "run the contenders of a scenario one after another instead of side by side")
	out := flag.String("results", "RESULTS.md", "file whose generated section gets the results; empty: do not write")
	keep := flag.Bool("keep", false, "keep the work directory (ledgers, logs) after the run")
	flag.DurationVar(&e.duration, "duration", 30*time.Second, "length of each run")
	flag.DurationVar(&e.ttl, "ttl", 5*time.Second, "lock expiry and session TTL of every contender")
	flag.DurationVar(&e.work, "work", 100*time.Millisecond, "how long the job works")
	flag.DurationVar(&e.restart, "restart-delay", 5*time.Second, "kill: time until the replacement starts, as a container restart")
	flag.DurationVar(&e.surge, "surge", 3*time.Second, "deploy: how long the replacement runs before the old replica gets SIGTERM")
	flag.DurationVar(&e.pauseFor, "pause", 8*time.Second, "pause: how long the replica stays stopped (more than --ttl)")
	flag.Parse()
	if e.duration < faultAt+e.pauseFor+tail+2*time.Second {
		fmt.Fprintf(os.Stderr, "compare: --duration %v is too short for the fault and pause\n", e.duration)
		os.Exit(2)
	}
	cs, err := pick(contenders, *only, func(c contender) string { return c.key })
	if err == nil {
		var ss []scenario
		ss, err = pick(scenarios, *which, func(s scenario) string { return s.key })
		if err == nil {
			err = compare(&e, cs, ss, *serial, *out, *keep, strings.Join(os.Args, " "))
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "compare: %v\n", err)
		os.Exit(1)
	}
}

func compare(e *env, cs []contender, ss []scenario, serial bool, out string, keep bool, argv string) error {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
	}
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(gomod)), filepath.Join("internal", "compare", "go.mod")) {
		return fmt.Errorf("run me from internal/compare (go env GOMOD: %s)", strings.TrimSpace(string(gomod)))
	}
	machine := describeMachine()
	started := time.Now()
	if err := ensureRedis(logf); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "baton-compare-")
	if err != nil {
		return err
	}
	if keep {
		logf("work directory %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	e.dir = dir
	if err := build(dir, e); err != nil {
		return err
	}
	srv, err := startServers(ctx, dir, e.batonBin)
	if err != nil {
		return err
	}
	defer srv.stop()
	e.srv = srv
	logf("redis-server on %s, baton etcd on %s", srv.redisAddr, srv.etcdURL)

	var results []result
	for _, s := range ss {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		logf("scenario %s: %d contenders, %v each", s.key, len(cs), e.duration)
		rs := make([]result, len(cs))
		var wg sync.WaitGroup
		for i, c := range cs {
			if serial {
				rs[i] = run(ctx, e, c, s)
				continue
			}
			wg.Go(func() { rs[i] = run(ctx, e, c, s) })
		}
		wg.Wait()
		for _, r := range rs {
			logf("  %-15s %s", r.contender.key, summary(r))
		}
		results = append(results, rs...)
	}
	machine.loadAfter = loadavg()
	machine.elapsed = time.Since(started).Round(time.Second)
	machine.parallel = !serial
	fmt.Println(table(results))
	if out != "" {
		if err := writeResults(out, results, machine, e, argv); err != nil {
			return err
		}
		logf("wrote %s", out)
	}
	return nil
}

// build compiles the replica program and the baton command into dir. baton
// is this module's tool, built from the enclosing checkout through the
// replace directive; when the enclosing module has gained dependencies this
// go.sum lacks, it is built in the enclosing module instead.
func build(dir string, e *env) error {
	e.replicaBin = filepath.Join(dir, "replica")
	e.batonBin = filepath.Join(dir, "baton")
	if err := goBuild(".", e.replicaBin, "./cmd/replica"); err != nil {
		return err
	}
	const baton = "github.com/batonhq/baton/convox/cmd/baton"
	err := goBuild(".", e.batonBin, baton)
	if err == nil {
		return nil
	}
	root, rerr := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/batonhq/baton").Output()
	if rerr != nil {
		return err
	}
	return goBuild(strings.TrimSpace(string(root)), e.batonBin, baton)
}

// goBuild builds pkg with the "faults" tag, with which baton's scheduler
// clock can be skewed (BATON_FAULTS_CLOCK_OFFSET); other packages ignore it.
func goBuild(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-tags", "faults", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

func pick[T any](all []T, list string, key func(T) string) ([]T, error) {
	if list == "" {
		return all, nil
	}
	var out []T
	for _, k := range strings.Split(list, ",") {
		i := slices.IndexFunc(all, func(t T) bool { return key(t) == k })
		if i < 0 {
			return nil, fmt.Errorf("unknown %q", k)
		}
		out = append(out, all[i])
	}
	return out, nil
}

func keys(cs []contender) string {
	var k []string
	for _, c := range cs {
		k = append(k, c.key)
	}
	return strings.Join(k, ",")
}

func scenarioKeys() string {
	var k []string
	for _, s := range scenarios {
		k = append(k, s.key)
	}
	return strings.Join(k, ",")
}
