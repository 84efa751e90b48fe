package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fencedSink is a downstream that takes a write only while the writer's
// BATON_FENCE is current: the create revision of one of the job's
// in-progress markers, under P/jobs/<scheduler>/<job>/running/.
type fencedSink struct {
	t      *testing.T
	ln     net.Listener
	cli    *clientv3.Client
	marker string
	runs   chan *sinkRun
}

// sinkRun is one command's conversation with the sink.
type sinkRun struct {
	id, pid string
	fence   int64
	conn    net.Conn
	in      *bufio.Reader
	verdict chan string // "written" or "refused"
	ended   chan string // why the conversation ended without a verdict
}

// proceed tells the command to write, and returns the sink's verdict.
func (r *sinkRun) proceed(t *testing.T) string {
	t.Helper()
	fmt.Fprintln(r.conn, "go")
	select {
	case v := <-r.verdict:
		return v
	case why := <-r.ended:
		t.Fatalf("the command of %s wrote nothing: %s", r.id, why)
		return ""
	case <-time.After(10 * time.Second):
		t.Fatalf("the command of %s wrote nothing within 10s", r.id)
		return ""
	}
}

func startFencedSink(t *testing.T, cli *clientv3.Client, marker string) *fencedSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fencedSink{t: t, ln: ln, cli: cli, marker: marker, runs: make(chan *sinkRun, 64)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

// serve reads "start ID PID FENCE", hands the run to the test, and answers
// the command's "write" with the verdict.
func (s *fencedSink) serve(c net.Conn) {
	defer c.Close()
	r := &sinkRun{conn: c, in: bufio.NewReader(c), verdict: make(chan string, 1), ended: make(chan string, 1)}
	line, err := r.in.ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 4 || f[0] != "start" {
		return
	}
	r.id, r.pid = f[1], f[2]
	if r.fence, err = strconv.ParseInt(f[3], 10, 64); err != nil {
		return
	}
	s.runs <- r
	if line, err = r.in.ReadString('\n'); err != nil || strings.TrimSpace(line) != "write" {
		r.ended <- fmt.Sprintf("it sent %q, %v (pid %s: %s)", line, err, r.pid, procState(r.pid))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := s.cli.Get(ctx, s.marker, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	verdict := "refused"
	if err == nil {
		for _, kv := range resp.Kvs {
			if kv.CreateRevision == r.fence {
				verdict = "written"
			}
		}
	}
	r.verdict <- verdict
	fmt.Fprintln(c, verdict)
}

// procState is what /proc says of pid: its state, or that it is gone.
func procState(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "gone"
	}
	if f := strings.Fields(string(b)); len(f) > 2 {
		return "state " + f[2]
	}
	return string(b)
}

// next returns the next run that started on id, answering the others'
// runs at once (they write and go).
func (s *fencedSink) next(id string, d time.Duration) *sinkRun {
	s.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case r := <-s.runs:
			if r.id == id {
				return r
			}
			go func() { fmt.Fprintln(r.conn, "go") }()
		case <-deadline:
			s.t.Fatalf("no run on %s within %v", id, d)
			return nil
		}
	}
}

// fencedCrontab writes a crontab whose job, every second, tells the sink it
// started, works until the sink says go (ignoring SIGTERM: it finishes its
// work, as a deploy's grace lets it), and then writes, fenced.
func fencedCrontab(t *testing.T, sink *fencedSink) string {
	dir := t.TempDir()
	script := filepath.Join(dir, "export.sh")
	port := sink.ln.Addr().(*net.TCPAddr).Port
	os.WriteFile(script, []byte(fmt.Sprintf(`trap '' TERM
exec 3<>/dev/tcp/127.0.0.1/%d
echo "start $BATON_ID $$ $BATON_FENCE" >&3
read go <&3
echo write >&3
read verdict <&3
`, port)), 0o755)
	file := filepath.Join(dir, "crontab")
	os.WriteFile(file, []byte("export: * * * * * * bash "+script+"\n"), 0o644)
	return file
}

// TestCrontabRunFinishingAfterSIGTERMCanStillWrite: a leader SIGTERMed in
// the middle of a run resigns at once, and its run, which the grace lets
// finish, can still make its fenced write with BATON_FENCE, while the
// successor already runs the next ticks.
func TestCrontabRunFinishingAfterSIGTERMCanStillWrite(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := etcdtest.Shared(t)
	sink := startFencedSink(t, etcd.Client(t), "/baton/jobs/fence/export/running/")
	file := fencedCrontab(t, sink)
	env := func(id string) []string { return append(etcd.Env(), "BATON_ID="+id) }
	// A resignation, not a lapse, hands over: the TTL outlasts a pause of
	// the test process, which runs etcd, so that the run's marker does too.
	args := []string{"crontab", "--seconds", "--ttl", "6", "--name", "fence", "--grace", "20s", file}
	a := startBaton(t, env("a"), args...)
	run := sink.next("a", 15*time.Second)
	startBaton(t, env("b"), args...)

	a.cmd.Process.Signal(syscall.SIGTERM)
	// b leads and runs ticks while a's run goes on.
	sink.next("b", 10*time.Second)
	if v := run.proceed(t); v != "written" {
		t.Errorf("the run that finished after its leader resigned on SIGTERM: write %s, want written", v)
	}
	if code := a.wait(10 * time.Second); code != 0 {
		t.Errorf("a exited %d after SIGTERM, want 0", code)
	}
}

// TestCrontabPausedLeadersWriteFails: a leader SIGSTOPped with its command
// in the middle of a run, for longer than the TTL, is deposed; when both
// resume, the run's fenced write is refused.
func TestCrontabPausedLeadersWriteFails(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := etcdtest.Shared(t)
	sink := startFencedSink(t, etcd.Client(t), "/baton/jobs/fence/export/running/")
	file := fencedCrontab(t, sink)
	env := func(id string) []string { return append(etcd.Env(), "BATON_ID="+id) }
	args := []string{"crontab", "--seconds", "--ttl", "2", "--name", "fence", file}
	a := startBaton(t, env("a"), args...)
	run := sink.next("a", 15*time.Second)
	startBaton(t, env("b"), args...)

	pid, err := strconv.Atoi(run.pid)
	if err != nil {
		t.Fatal(err)
	}
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	// A VM pause: baton and the command's process group stop together.
	syscall.Kill(-pgid, syscall.SIGSTOP)
	a.cmd.Process.Signal(syscall.SIGSTOP)
	defer syscall.Kill(-pgid, syscall.SIGCONT)
	defer a.cmd.Process.Signal(syscall.SIGCONT)
	sink.next("b", 15*time.Second) // b leads: a's election lease has expired
	// The run's marker is bound to a's runners' lease, which lapses on its
	// own keepalive schedule: within a keepalive period of the other.
	until(t, 10*time.Second, "the paused run's marker to lapse", func() bool {
		resp, err := sink.cli.Get(context.Background(), sink.marker, clientv3.WithPrefix())
		if err != nil {
			return false
		}
		for _, kv := range resp.Kvs {
			if kv.CreateRevision == run.fence {
				return false
			}
		}
		return true
	})
	fmt.Fprintln(run.conn, "go") // read once the command resumes
	syscall.Kill(-pgid, syscall.SIGCONT)
	a.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case v := <-run.verdict:
		if v != "refused" {
			t.Errorf("the run of a leader deposed while paused: write %s, want refused", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the resumed command wrote nothing within 10s")
	}
}
