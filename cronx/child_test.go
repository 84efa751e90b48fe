package cronx

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
)

// A crash is a real process's: the test binary started again as a replica
// (TestChildReplica), a leader with jobs on a fake clock that the test steps
// through its standard input, killed with SIGKILL or stopped as asked. It
// says on its standard output when it leads, and each run's start and end,
// one line each, written before anything else is done, so that what a
// process killed mid-run did is known from what it wrote.

// childEnv names the replica's settings, in its environment.
const childEnv = "CRONX_CHILD_REPLICA"

// childSpec is what a child replica runs: jobs job-0000… on spec, named
// scheduler, under a lease of ttl; the runs of the first held jobs hold for
// hold, or until their context ends, and the others return at once; each
// job recovers its runs up to recover times (WithRecovery).
type childSpec struct {
	scheduler string
	jobs      int
	spec      string
	ttl       time.Duration
	hold      time.Duration
	held      int
	recover   int
}

func (s childSpec) encode() string {
	return fmt.Sprintf("%s,%d,%s,%s,%s,%d,%d", s.scheduler, s.jobs, s.spec, s.ttl, s.hold, s.held, s.recover)
}

func decodeChildSpec(v string) (childSpec, error) {
	f := strings.Split(v, ",")
	if len(f) != 7 {
		return childSpec{}, fmt.Errorf("%q: want 7 fields", v)
	}
	var s childSpec
	var err error
	s.scheduler, s.spec = f[0], f[2]
	if s.jobs, err = strconv.Atoi(f[1]); err != nil {
		return s, err
	}
	if s.ttl, err = time.ParseDuration(f[3]); err != nil {
		return s, err
	}
	if s.hold, err = time.ParseDuration(f[4]); err != nil {
		return s, err
	}
	if s.held, err = strconv.Atoi(f[5]); err != nil {
		return s, err
	}
	s.recover, err = strconv.Atoi(f[6])
	return s, err
}

func childJobName(i int) string { return fmt.Sprintf("job-%04d", i) }

// TestChildReplica is the replica a crash test starts; it returns at once
// in a test run of its own.
func TestChildReplica(t *testing.T) {
	v := os.Getenv(childEnv)
	if v == "" {
		return // only a crash test's process runs it
	}
	spec, err := decodeChildSpec(v)
	if err != nil {
		fmt.Println("bad spec:", err)
		os.Exit(3)
	}
	os.Exit(runChildReplica(spec, os.Stdin, os.Stdout))
}

// runChildReplica runs the replica until its input ends (the test is gone)
// or asks it to stop. Input lines: "now <unix ns>" sets the clock; "due
// <unix ns>" waits for a timer due by then; "stop" stops the Cron and waits
// for its runs; "shutdown" shuts it down, its runs' contexts ended at once. Output lines: "leading", "armed <bool>", "start
// <job> <tick ns> <fence> <recovered>", "end <job> <tick ns>", "stopped".
func runChildReplica(spec childSpec, in io.Reader, out io.Writer) int {
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	sc := bufio.NewScanner(in)
	if !sc.Scan() {
		return 3
	}
	start, err := parseNowLine(sc.Text())
	if err != nil {
		say("bad input: %v", err)
		return 3
	}
	fake := clock.NewFake(start)
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger), WithName(spec.scheduler),
		WithElection(election.WithIdentity("child"), election.WithTTL(spec.ttl)))
	for i := range spec.jobs {
		var opts []JobOption
		if spec.recover > 0 {
			opts = append(opts, WithRecovery(spec.recover))
		}
		name, held := childJobName(i), i < spec.held
		job := ContextFunc(func(ctx context.Context) error {
			info, _ := InfoFrom(ctx)
			say("start %s %d %d %d", name, info.Tick.UnixNano(), info.Fence.Revision, info.Recovered)
			if held {
				select {
				case <-time.After(spec.hold):
				case <-ctx.Done():
				}
			}
			say("end %s %d", name, info.Tick.UnixNano())
			return nil
		})
		if _, err := c.AddJob(spec.spec, Named(name, job, opts...)); err != nil {
			say("add: %v", err)
			return 3
		}
	}
	c.Start()
	go func() {
		for !c.coord.scheduling() {
			time.Sleep(10 * time.Millisecond)
		}
		say("leading")
	}()
	for sc.Scan() {
		line := sc.Text()
		if line == "stop" {
			<-c.Stop().Done()
			say("stopped")
			continue
		}
		if line == "shutdown" {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			c.Shutdown(ctx)
			cancel()
			say("stopped")
			continue
		}
		if v, ok := strings.CutPrefix(line, "due "); ok {
			ns, _ := strconv.ParseInt(v, 10, 64)
			say("armed %t", fake.WaitDueBy(time.Unix(0, ns), 20*time.Second))
			continue
		}
		now, err := parseNowLine(line)
		if err != nil {
			say("bad input: %v", err)
			return 3
		}
		fake.Set(now)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c.Shutdown(ctx)
	return 0
}

func parseNowLine(line string) (time.Time, error) {
	v, ok := strings.CutPrefix(line, "now ")
	if !ok {
		return time.Time{}, fmt.Errorf("%q: want now <unix ns>", line)
	}
	ns, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, ns).UTC(), nil
}

// child is a replica process, as the test sees it.
type child struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu      sync.Mutex
	leading bool
	armed   int // timers found armed, "due" answered true
	unarmed int
	stopped bool
	started map[string][]childRun // by job
	ended   map[string]int
	changed chan struct{}
	exited  chan struct{}
}

// childRun is a run's start, as the child wrote it.
type childRun struct {
	tick      time.Time
	fence     int64
	recovered int
}

// startChild starts a replica of spec on srv's space, its clock at now.
func startChild(t *testing.T, srv *etcdtest.Space, spec childSpec, now time.Time) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildReplica$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), srv.Env()...), childEnv+"="+spec.encode())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := &child{t: t, cmd: cmd, stdin: stdin, started: map[string][]childRun{}, ended: map[string]int{},
		changed: make(chan struct{}), exited: make(chan struct{})}
	go ch.read(stdout)
	t.Cleanup(func() {
		ch.kill()
		<-ch.exited
	})
	ch.set(now)
	return ch
}

// read takes in the child's lines until its output ends.
func (ch *child) read(stdout io.Reader) {
	defer func() {
		ch.cmd.Wait()
		close(ch.exited)
	}()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		ch.mu.Lock()
		switch {
		case len(f) == 1 && f[0] == "leading":
			ch.leading = true
		case len(f) == 1 && f[0] == "stopped":
			ch.stopped = true
		case len(f) == 2 && f[0] == "armed" && f[1] == "true":
			ch.armed++
		case len(f) == 2 && f[0] == "armed":
			ch.unarmed++
		case len(f) == 5 && f[0] == "start":
			ns, _ := strconv.ParseInt(f[2], 10, 64)
			fence, _ := strconv.ParseInt(f[3], 10, 64)
			ch.started[f[1]] = append(ch.started[f[1]], childRun{tick: time.Unix(0, ns).UTC(), fence: fence, recovered: atoiOr0(f[4])})
		case len(f) == 3 && f[0] == "end":
			ch.ended[f[1]]++
		default:
			ch.t.Logf("child: %s", sc.Text())
		}
		close(ch.changed)
		ch.changed = make(chan struct{})
		ch.mu.Unlock()
	}
}

// set sets the child's clock.
func (ch *child) set(now time.Time) {
	ch.t.Helper()
	if _, err := fmt.Fprintf(ch.stdin, "now %d\n", now.UnixNano()); err != nil {
		ch.t.Fatalf("child: %v", err)
	}
}

// waitDue fails the test unless the child has a timer due by due.
func (ch *child) waitDue(due time.Time) {
	ch.t.Helper()
	ch.mu.Lock()
	want := ch.armed + ch.unarmed + 1
	ch.mu.Unlock()
	if _, err := fmt.Fprintf(ch.stdin, "due %d\n", due.UnixNano()); err != nil {
		ch.t.Fatalf("child: %v", err)
	}
	ch.await(30*time.Second, "answer to due", func() bool { return ch.armed+ch.unarmed >= want })
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.unarmed > 0 {
		ch.t.Fatalf("child armed no timer due by %v", due)
	}
}

// stop asks the child to Stop its Cron.
func (ch *child) stop() {
	ch.t.Helper()
	if _, err := fmt.Fprintln(ch.stdin, "stop"); err != nil {
		ch.t.Fatalf("child: %v", err)
	}
}

// shutdown asks the child to Shutdown its Cron at once.
func (ch *child) shutdown() {
	ch.t.Helper()
	if _, err := fmt.Fprintln(ch.stdin, "shutdown"); err != nil {
		ch.t.Fatalf("child: %v", err)
	}
}

// kill sends the child SIGKILL.
func (ch *child) kill() {
	ch.cmd.Process.Signal(syscall.SIGKILL)
}

// await waits until cond, called with the child's mutex held, holds, or
// fails the test after d.
func (ch *child) await(d time.Duration, what string, cond func() bool) {
	ch.t.Helper()
	deadline := time.After(d)
	for {
		ch.mu.Lock()
		ok, changed := cond(), ch.changed
		ch.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-ch.exited:
			ch.mu.Lock()
			ok := cond()
			ch.mu.Unlock()
			if !ok {
				ch.t.Fatalf("child exited before %s", what)
			}
			return
		case <-deadline:
			ch.t.Fatalf("child: no %s within %v", what, d)
		}
	}
}

// runs returns the starts the child wrote, by job.
func (ch *child) runs() map[string][]childRun {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	out := make(map[string][]childRun, len(ch.started))
	for k, v := range ch.started {
		out[k] = append([]childRun(nil), v...)
	}
	return out
}

func atoiOr0(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
