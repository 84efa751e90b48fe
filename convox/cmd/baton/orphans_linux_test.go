package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// TestPID1SparesOrphansNotOfItsCommands runs baton crontab as the PID 1 of a
// PID namespace of its own, as a container's main process, while a job runs
// every second and ends with an orphan sweep. A process that an exec
// session started in the namespace (nsenter, as `docker exec` and `kubectl
// exec` do) and left behind becomes baton's child: baton must neither kill
// it, at any sweep, nor leave it a zombie once it exits.
func TestPID1SparesOrphansNotOfItsCommands(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a PID namespace (unshare -p)")
	}
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	etcd := etcdtest.Shared(t)
	dir := t.TempDir()
	runs, file := filepath.Join(dir, "runs"), filepath.Join(dir, "crontab")
	if err := os.WriteFile(file, []byte("tick: * * * * * * echo run >> "+runs+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unshare := exec.Command("unshare", "-p", "-f", "--mount-proc", "--kill-child=SIGKILL", raceBin, "crontab", "--seconds", file)
	unshare.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, etcd.Env()...)
	out := &syncBuffer{}
	unshare.Stdout, unshare.Stderr = out, out
	if err := unshare.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unshare.Process.Kill() // and baton, the namespace's init, with it
		unshare.Wait()
		if t.Failed() || strings.Contains(out.String(), "WARNING: DATA RACE") {
			t.Errorf("baton crontab output:\n%s", out.String())
		}
	})
	until(t, 20*time.Second, "a run", func() bool { return len(readLines(runs)) >= 1 })
	baton := 0
	table, err := parents()
	if err != nil {
		t.Fatal(err)
	}
	for pid, ppid := range table {
		if ppid == unshare.Process.Pid {
			baton = pid
		}
	}
	if baton == 0 {
		t.Fatal("no baton under unshare")
	}

	// The session's shell starts a background sleep from a subshell and
	// exits: the sleep is an orphan of the namespace, so baton's child.
	mark := "exec" + strconv.Itoa(os.Getpid())
	session := exec.Command("nsenter", "-t", strconv.Itoa(baton), "-p", "-m", "--", "sh", "-c", "(sleep 1009 </dev/null >/dev/null 2>&1 &)")
	session.Env = []string{"PATH=" + os.Getenv("PATH"), "TREE=" + mark + ":session"}
	if b, err := session.CombinedOutput(); err != nil {
		t.Fatalf("nsenter: %v: %s", err, b)
	}
	var sleep int
	until(t, 5*time.Second, "the session's sleep to be baton's child", func() bool {
		procs := treeOf(t, mark, "session")
		if len(procs) != 1 {
			return false
		}
		sleep = procs[0].pid
		table, err := parents()
		return err == nil && table[sleep] == baton
	})
	defer syscall.Kill(sleep, syscall.SIGKILL)
	// Runs end, each with a sweep, after the sleep became baton's.
	n := len(readLines(runs))
	until(t, 20*time.Second, "three more runs", func() bool { return len(readLines(runs)) >= n+3 })
	if syscall.Kill(sleep, 0) != nil || zombie(sleep) {
		t.Fatalf("baton killed the exec session's orphan (pid %d), none of its commands'", sleep)
	}
	// Once it exits, baton reaps it.
	syscall.Kill(sleep, syscall.SIGKILL)
	until(t, 10*time.Second, "baton to reap the orphan", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(sleep))
		return err != nil
	})
}
