package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/batonhq/baton/internal/compare/ledger"
)

// job is the workload's job name in every ledger.
const job = "tick"

// contender is one way of running the workload.
type contender struct {
	key      string // short name: flags, directories, namespaces
	name     string // name in the table
	replicas int
	// command returns the process of one replica.
	command func(e *env, run string, instance string, offset time.Duration) *exec.Cmd
}

// fault is what a scenario does to one replica.
type fault int

const (
	noFault fault = iota
	kill          // kill -9, then a replacement after the restart delay
	deploy        // a replacement starts, then SIGTERM (a rolling deploy)
	pause         // SIGSTOP past the TTL, then SIGCONT
)

// scenario is one condition every contender runs under.
type scenario struct {
	key, name string
	offsets   []time.Duration // each replica's clock offset, by slot
	fault     fault
}

func (s scenario) skewed() bool {
	for _, o := range s.offsets {
		if o != 0 {
			return true
		}
	}
	return false
}

var scenarios = []scenario{
	{key: "steady", name: "steady state"},
	{key: "skew-200ms", name: "skew −200ms/0/+200ms", offsets: []time.Duration{-200 * time.Millisecond, 0, 200 * time.Millisecond}},
	{key: "skew-2s", name: "skew −2s/0/+2s", offsets: []time.Duration{-2 * time.Second, 0, 2 * time.Second}},
	{key: "kill", name: "kill -9 of the holder", fault: kill},
	{key: "deploy", name: "SIGTERM + replacement (deploy)", fault: deploy},
	{key: "pause", name: "SIGSTOP past the TTL", fault: pause},
}

// env is what every run shares: binaries, servers and the workload's knobs.
type env struct {
	dir        string // work directory
	replicaBin string
	batonBin   string
	srv        *servers
	duration   time.Duration
	ttl        time.Duration
	work       time.Duration
	restart    time.Duration // kill: how long until the replacement starts
	surge      time.Duration // deploy: how long the replacement runs beside the old replica
	pauseFor   time.Duration
}

func goReplica(system string) func(*env, string, string, time.Duration) *exec.Cmd {
	return func(e *env, run, instance string, offset time.Duration) *exec.Cmd {
		return exec.Command(e.replicaBin, "--system", system, "--id", instance,
			"--ledger", filepath.Join(e.dir, run, "ledger"),
			"--redis", e.srv.redisAddr, "--etcd", e.srv.etcdURL, "--namespace", run,
			"--ttl", e.ttl.String(), "--work", e.work.String(), "--test-clock-offset", offset.String())
	}
}

// batonReplica runs `baton crontab` on a one-line crontab whose command is the
// same job as the Go contenders', as a separate process.
func batonReplica(e *env, run, instance string, offset time.Duration) *exec.Cmd {
	dir := filepath.Join(e.dir, run)
	crontab := filepath.Join(dir, "crontab")
	if _, err := os.Stat(crontab); err != nil {
		line := fmt.Sprintf("%s: * * * * * * exec %s job --ledger %s --work %s\n", job, e.replicaBin,
			filepath.Join(dir, "ledger"), e.work)
		_ = os.WriteFile(crontab, []byte(line), 0o644)
	}
	cmd := exec.Command(e.batonBin, "crontab", "--seconds", "--ttl", strconv.Itoa(int(e.ttl/time.Second)),
		"--prefix", "/"+run, "--name", "compare", "--log-level", "warn", crontab)
	// baton is built with the "faults" tag, which reads its clock's skew here.
	cmd.Env = append(os.Environ(), "BATON_ETCD_ENDPOINTS="+e.srv.etcdURL, "BATON_ID="+instance,
		"BATON_FAULTS_CLOCK_OFFSET="+offset.String())
	return cmd
}

var contenders = []contender{
	{key: "robfig-redis", name: "robfig/cron + Redis SET NX EX", replicas: 3, command: goReplica("robfig-redis")},
	{key: "gocron-elector", name: "gocron v2 + etcd Elector", replicas: 3, command: goReplica("gocron-elector")},
	{key: "gocron-redis", name: "gocron v2 + Redis Locker", replicas: 3, command: goReplica("gocron-redis")},
	{key: "scale1", name: "robfig/cron, scale: 1 worker", replicas: 1, command: goReplica("robfig")},
	{key: "baton", name: "baton crontab", replicas: 3, command: batonReplica},
}

// result is one contender under one scenario.
type result struct {
	contender contender
	scenario  scenario
	skipped   string // why the cell does not apply
	count     ledger.Count
	fault     *ledger.Fault
	from, to  time.Time
	err       error
	notes     []string
}

// Timeline of a run, from the moment the replicas start:
//
//	0s          replicas start
//	warmup      first nominal tick counted
//	faultAt     the fault hits the replica that starts the next run
//	duration-3s last nominal tick counted (the ±2s skew needs the margin)
//	duration    every replica gets SIGTERM
const (
	warmup  = 5 * time.Second
	faultAt = 12 * time.Second
	tail    = 3 * time.Second
)

func run(ctx context.Context, e *env, c contender, s scenario) result {
	res := result{contender: c, scenario: s}
	if c.replicas == 1 && s.skewed() {
		res.skipped = "one replica: no clocks to disagree"
		return res
	}
	name := s.key + "-" + c.key
	dir := filepath.Join(e.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.err = err
		return res
	}
	cl := newCluster(dir, func(instance string, offset time.Duration) *exec.Cmd {
		return c.command(e, name, instance, offset)
	})
	defer cl.stopAll(30 * time.Second)
	offsets := make([]time.Duration, c.replicas)
	for i := range offsets {
		if i < len(s.offsets) {
			offsets[i] = s.offsets[i]
		}
	}
	t0 := time.Now()
	for i, off := range offsets {
		if err := cl.start(fmt.Sprintf("r%d", i), off); err != nil {
			res.err = err
			return res
		}
	}
	ledgerPath := filepath.Join(dir, "ledger")
	end := t0.Add(e.duration)

	if s.fault != noFault {
		f, notes, err := inject(ctx, e, cl, ledgerPath, t0, s.fault)
		res.fault, res.notes, res.err = f, notes, err
		if err != nil {
			return res
		}
	}
	if err := sleepUntil(ctx, end); err != nil {
		res.err = err
		return res
	}
	cl.stopAll(30 * time.Second)

	runs, err := ledger.Read(ledgerPath)
	if err != nil {
		res.err = err
		return res
	}
	res.from, res.to = t0.Add(warmup).Truncate(time.Second).Add(time.Second), end.Add(-tail).Truncate(time.Second)
	res.count = ledger.Tally(runs, job, res.from, res.to, time.Second, res.fault)
	return res
}

// inject waits for the fault time, finds the replica that starts the next run
// (the leader, or the lock holder at that tick), and hits it in the middle of
// that run.
func inject(ctx context.Context, e *env, cl *cluster, ledgerPath string, t0 time.Time, f fault) (*ledger.Fault, []string, error) {
	var notes []string
	if f == deploy {
		// A rolling deploy starts the replacement first (maxSurge), and
		// stops an old replica once the new one is up.
		if err := sleepUntil(ctx, t0.Add(faultAt-e.surge)); err != nil {
			return nil, nil, err
		}
		if err := cl.start("new", 0); err != nil {
			return nil, nil, err
		}
		notes = append(notes, fmt.Sprintf("replacement \"new\" started %v before the SIGTERM", e.surge))
	}
	if err := sleepUntil(ctx, t0.Add(faultAt)); err != nil {
		return nil, nil, err
	}
	target := holder(cl, ledgerPath, time.Now(), 5*time.Second, "new")
	if target == "" {
		target = cl.first()
		notes = append(notes, "no run started within 5s of the fault time; hit the first replica")
	}
	at := time.Now()
	var err error
	switch f {
	case kill:
		err = cl.signal(target, syscall.SIGKILL)
		if err == nil {
			r, _ := cl.get(target)
			if err = sleepUntil(ctx, at.Add(e.restart)); err == nil {
				err = cl.start(target+"b", r.offset)
			}
			notes = append(notes, fmt.Sprintf("%s killed mid-run; %sb started %v later", target, target, e.restart))
		}
	case deploy:
		err = cl.signal(target, syscall.SIGTERM)
		if err == nil && !cl.wait(target, 30*time.Second) {
			notes = append(notes, target+" still running 30s after SIGTERM")
		}
		notes = append(notes, fmt.Sprintf("%s got SIGTERM mid-run", target))
	case pause:
		err = cl.pause(target)
		if err == nil {
			err = sleepUntil(ctx, at.Add(e.pauseFor))
			if rerr := cl.resume(target); err == nil {
				err = rerr
			}
			notes = append(notes, fmt.Sprintf("%s stopped mid-run for %v", target, e.pauseFor))
		}
	}
	return &ledger.Fault{At: at, Instance: target}, notes, err
}

// holder watches the ledger for the first run that starts after since by a
// replica other than except, and returns that replica, or "" if none starts
// within limit.
func holder(cl *cluster, ledgerPath string, since time.Time, limit time.Duration, except string) string {
	t := ledger.NewTail(ledgerPath)
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		runs, _ := t.Next()
		for _, r := range runs {
			if r.Start.After(since) && r.Instance != except {
				if _, err := cl.get(r.Instance); err == nil {
					return r.Instance
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return ""
}

func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
