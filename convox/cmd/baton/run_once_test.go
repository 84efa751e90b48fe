package main

import (
	"context"
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

// onceCommand is a --once command that records its pid in log and runs
// until the file stop exists, then exits with $CODE (default 0).
func onceCommand(log, stop string) []string {
	return []string{"sh", "-c", `echo $$ >> ` + log + `; while [ ! -e ` + stop + ` ]; do sleep 0.05; done; exit ${CODE:-0}`}
}

// TestRunOnceHoldsTheKeyWhileTheCommandRuns runs a command longer than
// --ttl: a caller after the window does not start it a second time; once it
// succeeds, the key is done for the window.
func TestRunOnceHoldsTheKeyWhileTheCommandRuns(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	dir := t.TempDir()
	log, stop := filepath.Join(dir, "log"), filepath.Join(dir, "stop")
	env := etcd.Env()
	// The window is long enough for the last caller below to come within
	// it of the success, though a loaded machine delays its start by
	// seconds.
	const window = 5 * time.Second
	args := append([]string{"run", "--once", "long", "--ttl", window.String(), "--"}, onceCommand(log, stop)...)
	first := startBaton(t, env, args...)
	until(t, 10*time.Second, "the first run to start", func() bool { return len(readLines(log)) == 1 })
	time.Sleep(window + 500*time.Millisecond) // the window passes while the command runs
	code, out := runBaton(t, env, args...)
	if code != 0 || !strings.Contains(out, "not running") || len(readLines(log)) != 1 {
		t.Fatalf("a caller while a run outlasts --ttl: exit %d, %d runs:\n%s", code, len(readLines(log)), out)
	}
	os.WriteFile(stop, nil, 0o644)
	if code := first.wait(10 * time.Second); code != 0 {
		t.Fatalf("the first run exited %d", code)
	}
	// stop stays: a run started again would end at once, and show as a
	// second line of log.
	code, out = runBaton(t, env, args...)
	if code != 0 || !strings.Contains(out, "succeeded") || len(readLines(log)) != 1 {
		t.Fatalf("a caller within --ttl of the success: exit %d, %d runs:\n%s", code, len(readLines(log)), out)
	}
}

// TestRunOnceKilledOrStoppedFreesTheKey kills baton with SIGKILL mid-run:
// its command dies with it and the next caller runs within the session TTL,
// not after --ttl. A run stopped by SIGTERM gives the key back at once.
func TestRunOnceKilledOrStoppedFreesTheKey(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	dir := t.TempDir()
	log, stop := filepath.Join(dir, "log"), filepath.Join(dir, "stop")
	env := append(etcd.Env(), "BATON_TTL=2")
	args := append([]string{"run", "--once", "crash", "--ttl", "1h", "--"}, onceCommand(log, stop)...)
	first := startBaton(t, env, args...)
	until(t, 10*time.Second, "the first run to start", func() bool { return len(readLines(log)) == 1 })
	pid, _ := strconv.Atoi(readLines(log)[0])
	// The run's marker goes with the session's lease. When it goes is
	// measured in etcd: the retries below are processes, whose start a
	// loaded machine can delay by seconds.
	cli := etcd.Client(t)
	wctx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	marker := "/baton/once/crash/running"
	watch := cli.Watch(wctx, marker, clientv3.WithFilterPut())
	if resp, err := cli.Get(wctx, marker); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the run's marker %s: %v, %v", marker, resp, err)
	}
	first.cmd.Process.Kill()
	killed := time.Now()
	first.wait(10 * time.Second)
	until(t, 10*time.Second, "the command to die with baton", func() bool { return syscall.Kill(pid, 0) != nil || zombie(pid) })
	select {
	case resp := <-watch:
		if err := resp.Err(); err != nil || len(resp.Events) == 0 {
			t.Fatalf("watching the run's marker: %v (%d events)", err, len(resp.Events))
		}
		if took := time.Since(killed); took > 2*time.Second+2*time.Second {
			t.Errorf("the key was freed %v after the kill, with a session TTL of 2s", took)
		}
	case <-time.After(time.Minute):
		t.Fatal("the run's marker outlived its session by a minute")
	}
	stopWatch()
	var second *process
	until(t, 30*time.Second, "a retry to run", func() bool {
		second = startBaton(t, env, args...)
		for {
			select {
			case <-second.done:
				return false // not running: the key is still held
			case <-time.After(20 * time.Millisecond):
				if len(readLines(log)) == 2 {
					return true
				}
			}
		}
	})
	// SIGTERM: the command gets it, baton exits with its status, and the
	// key is free at once.
	second.cmd.Process.Signal(syscall.SIGTERM)
	if code := second.wait(10 * time.Second); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit %d after SIGTERM, want %d", code, 128+int(syscall.SIGTERM))
	}
	os.WriteFile(stop, nil, 0o644)
	if code, out := runBaton(t, env, args...); code != 0 || len(readLines(log)) != 3 {
		t.Fatalf("a retry after a stopped run: exit %d, %d runs:\n%s", code, len(readLines(log)), out)
	}
}

// TestRunOnceLostClaimStopsTheCommand partitions a --once caller from etcd
// mid-run: its command is stopped before the session could expire, baton
// exits 123, and the next caller runs the work.
func TestRunOnceLostClaimStopsTheCommand(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, etcd.Addr())
	dir := t.TempDir()
	log, stop := filepath.Join(dir, "log"), filepath.Join(dir, "stop")
	args := append([]string{"run", "--once", "cut", "--ttl", "1h", "--"}, onceCommand(log, stop)...)
	p := startBaton(t, append(etcd.Env(proxy.Endpoint()), "BATON_TTL=2"), args...)
	until(t, 10*time.Second, "the run to start", func() bool { return len(readLines(log)) == 1 })
	pid, _ := strconv.Atoi(readLines(log)[0])
	proxy.Blackhole()
	if code := p.wait(20 * time.Second); code != runLost {
		t.Fatalf("exit %d after the partition, want %d", code, runLost)
	}
	if syscall.Kill(pid, 0) == nil && !zombie(pid) {
		t.Fatalf("the command (pid %d) still runs", pid)
	}
	os.WriteFile(stop, nil, 0o644)
	until(t, 10*time.Second, "the next caller to run", func() bool {
		code, _ := runBaton(t, etcd.Env(), args...)
		return code == 0 && len(readLines(log)) == 2
	})
}
