package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// trapCommand records which signal it got in log and exits 42 on SIGINT,
// 43 on SIGTERM.
func trapCommand(log string) []string {
	return []string{"sh", "-c", `trap "echo INT >> ` + log + `; exit 42" INT; trap "echo TERM >> ` + log + `; exit 43" TERM; echo ready >> ` + log + `; while true; do sleep 0.05; done`}
}

// TestRunForwardsSignals signals a leader's baton: SIGINT reaches the
// command as SIGINT, as the help says; SIGHUP is handled as SIGTERM (the
// command gets SIGTERM, baton resigns) instead of killing baton.
func TestRunForwardsSignals(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	cli := etcd.Client(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		got  string
		code int
	}{
		{syscall.SIGINT, "INT", 42},
		{syscall.SIGTERM, "TERM", 43},
		{syscall.SIGHUP, "TERM", 43},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "log")
			p := startBaton(t, etcd.Env(),
				append([]string{"run", "--leader", "sig", "--ttl", "30", "--"}, trapCommand(log)...)...)
			until(t, 10*time.Second, "the command to start", func() bool { return len(readLines(log)) == 1 })
			p.cmd.Process.Signal(tc.sig)
			if code := p.wait(10 * time.Second); code != tc.code {
				t.Fatalf("exit %d, want the command's %d", code, tc.code)
			}
			if lines := readLines(log); len(lines) != 2 || lines[1] != tc.got {
				t.Fatalf("the command got %q, want %s", lines, tc.got)
			}
			// Resigned at once, not after the 30s TTL.
			if n := electionKeys(t, cli, "sig"); n != 0 {
				t.Fatalf("%d candidates left after the signal", n)
			}
		})
	}
}

// TestRunExitStatusesAreTheCommandsOrBatons: a command's 1, 2 and 3 pass
// through; baton's own failures have statuses of their own.
func TestRunExitStatusesAreTheCommandsOrBatons(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	env := etcd.Env()
	for _, code := range []string{"1", "2", "3"} {
		got, out := runBaton(t, env, "run", "--lock", "x", "--", "sh", "-c", "exit "+code)
		if want := int(code[0] - '0'); got != want {
			t.Errorf("a command exiting %s: baton exited %d:\n%s", code, got, out)
		}
	}
	for _, tc := range []struct {
		env  []string
		args []string
		want int
	}{
		{env, []string{"run", "--lock", "x", "--bogus", "--", "true"}, runUsage},
		{env, []string{"run", "--lock", "x"}, runUsage},
		{[]string{"BATON_ETCD_ENDPOINTS=" + closedEndpoint(t)}, []string{"run", "--lock", "x", "--dial-timeout", "1s", "--", "true"}, runFailure},
		{env, []string{"run", "--lock", "x", "--", "/nonexistent/command"}, 127},
	} {
		got, out := runBaton(t, tc.env, tc.args...)
		if got != tc.want || got == 1 || got == 2 || got == 3 {
			t.Errorf("baton %v: exit %d, want %d:\n%s", tc.args, got, tc.want, out)
		}
	}
	_, help := runBaton(t, nil, "run", "--help")
	for _, want := range []string{"121", "122", "123", "COMMAND's own status"} {
		if !strings.Contains(help, want) {
			t.Errorf("run --help does not document %q", want)
		}
	}
}
