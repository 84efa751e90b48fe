package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--", "true"}, "exactly one of"},
		{[]string{"run", "--leader", "a", "--lock", "b", "--", "true"}, "exactly one of"},
		{[]string{"run", "--leader", "a"}, "no COMMAND"},
		{[]string{"run", "--once", "k", "--", "true"}, "--once needs --ttl"},
		{[]string{"run", "--once", "k", "--ttl", "soon", "--", "true"}, "--ttl"},
		{[]string{"run", "--once", "a/b", "--ttl", "1h", "--", "true"}, `once key "a/b"`},
		{[]string{"run", "--leader", "a", "--", "true"}, "no etcd endpoints"},
		{[]string{"run", "--bogus"}, "bogus"},
	} {
		code, out := runBaton(t, nil, tc.args...)
		if code != runUsage || !strings.Contains(out, tc.want) {
			t.Errorf("baton %v: exit %d, want %d and %q in:\n%s", tc.args, code, runUsage, tc.want, out)
		}
	}
	// A bad name is bad input, found before etcd is asked.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--leader", "a/b", "--", "true"}, `--leader: election name "a/b"`},
		{[]string{"run", "--lock", "a b", "--", "true"}, `--lock: lock name "a b"`},
		{[]string{"run", "--once", "a/b", "--ttl", "1h", "--", "true"}, `once key "a/b"`},
	} {
		code, out := runBaton(t, []string{"BATON_ETCD_ENDPOINTS=http://127.0.0.1:1"}, tc.args...)
		if code != runUsage || !strings.Contains(out, tc.want) {
			t.Errorf("baton %v: exit %d, want %d and %q in:\n%s", tc.args, code, runUsage, tc.want, out)
		}
	}
	code, out := runBaton(t, nil, "run", "--help")
	if code != exitOK || !strings.Contains(out, "--leader NAME") {
		t.Errorf("run --help: exit %d:\n%s", code, out)
	}
	code, out = runBaton(t, []string{"BATON_ETCD_ENDPOINTS=http://127.0.0.1:1"}, "run", "--dial-timeout", "300ms", "--lock", "x", "--", "true")
	if code != runFailure || !strings.Contains(out, "127.0.0.1:1") {
		t.Errorf("unreachable etcd: exit %d:\n%s", code, out)
	}
}

// readLines returns the lines of a file, none if it does not exist.
func readLines(path string) []string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// electionKeys counts the candidates of an election.
func electionKeys(t *testing.T, cli *clientv3.Client, name string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/baton/election/"+name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// TestRunLeaderStartsTheSecondOnlyAfterTheFirst runs two `baton run
// --leader` processes: the second's command starts only when the first's
// exits, and again only when the first baton is killed.
func TestRunLeaderStartsTheSecondOnlyAfterTheFirst(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	cli := etcd.Client(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	env := func(id string) []string {
		return append(etcd.Env(), "BATON_ID="+id)
	}
	// The command records who started it and its pid, then runs until the
	// file "stop-<id>" appears. The TTL is longer than a pause of the test
	// process, which runs etcd: a leader that lost its session in one would
	// hand over early.
	cmd := func(id string) []string {
		return []string{"run", "--leader", "worker", "--ttl", "6", "--", "sh", "-c",
			`echo "$BATON_ID $$ $BATON_FENCE" >> ` + log + `; while [ ! -e ` + filepath.Join(dir, "stop-") + `$BATON_ID ]; do sleep 0.05; done; exit 7`}
	}
	a := startBaton(t, env("a"), cmd("a")...)
	until(t, 10*time.Second, "a's command to start", func() bool { return len(readLines(log)) == 1 })
	b := startBaton(t, env("b"), cmd("b")...)
	until(t, 10*time.Second, "b to campaign", func() bool { return electionKeys(t, cli, "worker") == 2 })
	if lines := readLines(log); len(lines) != 1 || !strings.HasPrefix(lines[0], "a ") {
		t.Fatalf("while a leads, the log is %q", lines)
	}
	// a's command exits 7: a exits 7 and resigns; b starts.
	os.WriteFile(filepath.Join(dir, "stop-a"), nil, 0o644)
	if code := a.wait(10 * time.Second); code != 7 {
		t.Fatalf("a exited %d, want its command's 7", code)
	}
	until(t, 5*time.Second, "b's command to start", func() bool { return len(readLines(log)) == 2 })
	lines := readLines(log)
	if !strings.HasPrefix(lines[1], "b ") {
		t.Fatalf("log %q: want b second", lines)
	}
	fa, _ := strconv.Atoi(strings.Fields(lines[0])[2])
	fb, _ := strconv.Atoi(strings.Fields(lines[1])[2])
	if fb <= fa {
		t.Errorf("b's fence %d is not above a's %d", fb, fa)
	}

	// kill -9 of b: its command dies with it, and c starts after the TTL.
	c := startBaton(t, env("c"), cmd("c")...)
	until(t, 10*time.Second, "c to campaign", func() bool { return electionKeys(t, cli, "worker") == 2 })
	bpid, _ := strconv.Atoi(strings.Fields(lines[1])[1])
	b.cmd.Process.Kill()
	b.wait(5 * time.Second)
	until(t, 5*time.Second, "b's command to die with b", func() bool { return syscall.Kill(bpid, 0) != nil || zombie(bpid) })
	until(t, 20*time.Second, "c's command to start", func() bool { return len(readLines(log)) == 3 })
	if lines := readLines(log); !strings.HasPrefix(lines[2], "c ") {
		t.Fatalf("log %q: want c third", lines)
	}

	// SIGTERM: c passes it to its command (the shell dies of it), resigns
	// and exits with the command's status.
	c.cmd.Process.Signal(syscall.SIGTERM)
	if code := c.wait(10 * time.Second); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("c exited %d after SIGTERM, want %d", code, 128+int(syscall.SIGTERM))
	}
	until(t, 5*time.Second, "c to resign", func() bool { return electionKeys(t, cli, "worker") == 0 })
}

// TestRunLeaderLostStopsTheCommand partitions the leader from etcd: its
// command is stopped before the session could expire, and baton exits 3.
func TestRunLeaderLostStopsTheCommand(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, etcd.Addr())
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	p := startBaton(t, etcd.Env(proxy.Endpoint()),
		"run", "--leader", "worker", "--ttl", "2", "--", "sh", "-c", "echo $$ > "+pidFile+"; exec sleep 300")
	until(t, 10*time.Second, "the command to start", func() bool { return len(readLines(pidFile)) == 1 })
	pid, _ := strconv.Atoi(readLines(pidFile)[0])
	proxy.Blackhole()
	if code := p.wait(20 * time.Second); code != runLost {
		t.Fatalf("exit %d after the partition, want %d", code, runLost)
	}
	if syscall.Kill(pid, 0) == nil && !zombie(pid) {
		t.Fatalf("the command (pid %d) still runs", pid)
	}
	if !strings.Contains(p.out.String(), "stopping sh") {
		t.Errorf("the loss is not reported:\n%s", p.out.String())
	}
}

// TestRunOnceRunsOneOfConcurrentCallers starts several callers of one key at
// once: exactly one runs; a later caller within the TTL does not run either.
func TestRunOnceRunsOneOfConcurrentCallers(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	log := filepath.Join(t.TempDir(), "log")
	args := []string{"run", "--once", "nightly-2026-11-30", "--ttl", "1h", "--", "sh", "-c", "echo $BATON_ID >> " + log}
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _ = runBaton(t, append(etcd.Env(), "BATON_ID=caller-"+strconv.Itoa(i)), args...)
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Errorf("caller %d exited %d", i, c)
		}
	}
	if lines := readLines(log); len(lines) != 1 {
		t.Fatalf("%d callers ran: %q", len(lines), lines)
	}
	code, out := runBaton(t, etcd.Env(), args...)
	if code != 0 || !strings.Contains(out, "not running") || len(readLines(log)) != 1 {
		t.Fatalf("a later caller: exit %d, %d runs:\n%s", code, len(readLines(log)), out)
	}
	// Another key runs, and passes its command's status through; having
	// failed, it leaves the key to a retry, which succeeds and keeps it.
	other := []string{"run", "--once", "other", "--ttl", "60", "--", "sh", "-c", "echo retry >> " + log + "; exit ${FAIL:-0}"}
	code, _ = runBaton(t, append(etcd.Env(), "FAIL=5"), other...)
	if code != 5 {
		t.Fatalf("another key: exit %d, want the command's 5", code)
	}
	for range 2 {
		if code, out := runBaton(t, etcd.Env(), other...); code != 0 {
			t.Fatalf("retry: exit %d:\n%s", code, out)
		}
	}
	if n := strings.Count(strings.Join(readLines(log), " "), "retry"); n != 2 {
		t.Fatalf("the failed run and its retry should have run, and nothing after: %d runs", n)
	}
}

// TestRunLockExcludes runs three holders of one lock at once: their
// commands never overlap.
func TestRunLockExcludes(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	log := filepath.Join(t.TempDir(), "log")
	var ps []*process
	for i := 0; i < 3; i++ {
		ps = append(ps, startBaton(t, etcd.Env(),
			"run", "--lock", "migrate", "--", "sh", "-c", "echo start >> "+log+"; sleep 0.3; echo end >> "+log))
	}
	for _, p := range ps {
		if code := p.wait(30 * time.Second); code != 0 {
			t.Fatalf("holder exited %d", code)
		}
	}
	want := strings.Repeat("start end ", 3)
	if got := strings.Join(readLines(log), " ") + " "; got != want {
		t.Fatalf("runs overlapped: %q", got)
	}
}

// TestTTLFromFlagOrEnvironment: BATON_TTL takes "10s" as --ttl does, and a
// TTL above etcd's longest lease is a usage error, from either, before
// anything dials.
func TestTTLFromFlagOrEnvironment(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	cli := etcd.Client(t)
	env := etcd.Env()
	p := startBaton(t, append(env, "BATON_TTL=7s"), "run", "--lock", "ttl", "--", "sleep", "300")
	var lease clientv3.LeaseID
	until(t, 10*time.Second, "the lock to be held", func() bool {
		resp, err := cli.Get(context.Background(), "/baton/lock/ttl/", clientv3.WithPrefix())
		if err == nil && len(resp.Kvs) == 1 {
			lease = clientv3.LeaseID(resp.Kvs[0].Lease)
		}
		return lease != 0
	})
	if resp, err := cli.TimeToLive(context.Background(), lease); err != nil || resp.GrantedTTL != 7 {
		t.Errorf("BATON_TTL=7s: lease TTL %+v, %v; want 7", resp, err)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(10 * time.Second)

	dir := t.TempDir()
	file := filepath.Join(dir, "crontab")
	os.WriteFile(file, []byte("* * * * * true\n"), 0o644)
	huge := "9000000001"
	for _, tc := range []struct {
		env  []string
		args []string
		code int
	}{
		{env, []string{"run", "--leader", "a", "--ttl", huge, "--", "true"}, runUsage},
		{env, []string{"run", "--once", "a", "--ttl", huge, "--", "true"}, runUsage},
		{env, []string{"run", "--once", "a", "--ttl", "99999999999999999999s", "--", "true"}, runUsage},
		{append(env, "BATON_TTL="+huge), []string{"run", "--lock", "a", "--", "true"}, runUsage},
		{append(env, "BATON_TTL="+huge), []string{"run", "--once", "a", "--ttl", "1h", "--", "true"}, runUsage},
		{env, []string{"crontab", "--ttl", huge, file}, exitUsage},
		{append(env, "BATON_TTL="+huge), []string{"crontab", file}, exitUsage},
	} {
		p := startBaton(t, tc.env, tc.args...)
		if code := p.wait(10 * time.Second); code != tc.code || !strings.Contains(p.out.String(), "longest lease") {
			t.Errorf("baton %v: exit %d, want %d and the limit in:\n%s", tc.args, code, tc.code, p.out.String())
		}
	}
}
