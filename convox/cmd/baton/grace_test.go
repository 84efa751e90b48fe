package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// forkingShells are command lines in which /bin/sh forks the program
// instead of exec'ing it (dash forks even a lone command in some versions):
// the shell dies of the SIGTERM that its program traps.
var forkingShells = map[string]string{
	"list": "%s; true",
	"and":  "cd / && %s",
}

// TestRunGraceCoversAForkedProgram stops baton run, whose command is a shell
// that forked a program which takes 2.5 s to finish after SIGTERM: the
// program finishes within --grace, and baton exits only after it. Treated
// as what the shell left running, it got SIGKILL a second after the shell
// died.
func TestRunGraceCoversAForkedProgram(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	for name, line := range forkingShells {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := filepath.Join(t.TempDir(), "log")
			p := startBaton(t, etcd.Env(), "run", "--lock", "grace-"+name, "--grace", "10s", "--",
				"sh", "-c", fmt.Sprintf(line, helperCommand(t, "slowterm", log)))
			until(t, 15*time.Second, "the program to start", func() bool { return len(helperPids(log, "ready")) == 1 })
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.wait(20 * time.Second)
			if got := helperPids(log, "finished"); !slices.Equal(got, helperPids(log, "ready")) {
				t.Fatalf("baton exited before the program finished within --grace: log %q", readLines(log))
			}
		})
	}
}

// TestCrontabGraceCoversAForkedProgram is the same for crontab's entries, at
// each of the three ends of a run that --grace bounds: baton's SIGTERM (a
// deploy), the entry's timeout, and a replacing tick. The program finishes
// every run, and a run ends only once it has.
func TestCrontabGraceCoversAForkedProgram(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, entry string
		// runs is how many runs start before the test looks: the last
		// starts only once the one before it ended.
		runs int
		stop bool
	}{
		{"deploy", "[overlap=forbid] * * * * * *", 1, true},
		{"timeout", "[overlap=forbid timeout=1s] * * * * * *", 2, false},
		{"replace", "[overlap=replace] */2 * * * * *", 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			etcd := etcdtest.Shared(t)
			dir := t.TempDir()
			log, file := filepath.Join(dir, "log"), filepath.Join(dir, "crontab")
			line := fmt.Sprintf(forkingShells["list"], helperCommand(t, "slowterm", log))
			if err := os.WriteFile(file, []byte("slow: "+tc.entry+" "+line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			p := startBaton(t, etcd.Env(), "crontab", "--seconds", "--grace", "10s", file)
			until(t, 30*time.Second, "the runs to start", func() bool { return len(helperPids(log, "ready")) >= tc.runs })
			if tc.stop {
				p.cmd.Process.Signal(syscall.SIGTERM)
				p.wait(20 * time.Second)
			}
			ready, finished := helperPids(log, "ready"), helperPids(log, "finished")
			if !tc.stop {
				ready = ready[:tc.runs-1]
			}
			for _, pid := range ready {
				if !slices.Contains(finished, pid) {
					t.Fatalf("the run of program %s ended before it finished within --grace: log %q", pid, readLines(log))
				}
			}
		})
	}
}
