package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// hookLine is one line a command or a hook appended to the ledger:
// what ("run", "on-failure", "on-success", or "term": a hook told to stop)
// job tick id fence exit pid error.
type hookLine struct {
	what, job, tick, id, fence, exit, err string
	pid                                   int
}

func readHookLines(t *testing.T, path string) []hookLine {
	t.Helper()
	var out []hookLine
	for _, l := range readLines(path) {
		f := strings.Split(l, "|")
		if len(f) != 8 {
			t.Fatalf("ledger line %q: want 8 fields", l)
		}
		pid, err := strconv.Atoi(f[6])
		if err != nil {
			t.Fatalf("ledger line %q: %v", l, err)
		}
		out = append(out, hookLine{what: f[0], job: f[1], tick: f[2], id: f[3], fence: f[4], exit: f[5], pid: pid, err: f[7]})
	}
	return out
}

// alive reports whether process pid exists.
func alive(pid int) bool { return syscall.Kill(pid, 0) != syscall.ESRCH }

// TestCrontabHooksRunOncePerRun runs three replicas of a crontab whose jobs
// fail or succeed every two seconds, with a crontab-wide --on-failure, an
// entry's own on-success=, an entry that turns the hook off, and hooks that
// outlive their timeout or hold on through baton's stop. Each run's hook
// runs once in the cluster, on the replica that ran it, with the run's
// facts in its environment; one past its timeout is killed (SIGTERM, then
// SIGKILL after --grace) and logged; and a hook that holds on through
// baton's stop is told to stop (SIGTERM) as the stop begins, and its
// processes have ended when the baton that started it exits.
func TestCrontabHooksRunOncePerRun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := etcdtest.Shared(t)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	file := filepath.Join(dir, "crontab")
	run := `echo "run|$BATON_JOB|$BATON_TICK|$BATON_ID|$BATON_FENCE||$$|" >> ` + ledger
	hook := `echo "$BATON_HOOK|$BATON_JOB|$BATON_TICK|$BATON_ID|$BATON_FENCE|$BATON_EXIT|$$|$BATON_ERROR" >> ` + ledger
	// linger's hook goes on after SIGTERM, noting it in the ledger.
	linger := filepath.Join(dir, "linger.sh")
	os.WriteFile(linger, []byte(`trap 'echo "term|$BATON_JOB|$BATON_TICK|$BATON_ID|$BATON_FENCE||$$|" >> `+ledger+`' TERM
while :; do sleep 0.2; done
`), 0o644)
	os.WriteFile(file, []byte(strings.Join([]string{
		`bad: */2 * * * * * ` + run + `; exit 3`,
		`good: [on-success='` + hook + `'] */2 * * * * * ` + run,
		`quiet: [on-failure=""] */2 * * * * * ` + run + `; exit 1`,
		`hang: [hook-timeout=1s, on-failure='` + hook + `; exec sleep 30'] */2 * * * * * exit 1`,
		`linger: [hook-timeout=1m on-failure='` + hook + `; exec sh ` + linger + `'] */2 * * * * * exit 1`,
	}, "\n")+"\n"), 0o644)
	replicas := map[string]*process{}
	for _, id := range []string{"r1", "r2", "r3"} {
		replicas[id] = startBaton(t, append(etcd.Env(), "BATON_ID="+id), "crontab", "--seconds", "--ttl", strconv.Itoa(policyTTL),
			"--grace", "3s", "--on-failure", hook, file)
	}
	// --check reads the same file and flags.
	if code, out := runBaton(t, nil, "crontab", "--seconds", "--check", "--on-failure", hook, file); code != 0 || !strings.Contains(out, "\tlinger\t") {
		t.Fatalf("--check: exit %d, output:\n%s", code, out)
	}

	count := func(lines []hookLine, what, job string) int {
		n := 0
		for _, l := range lines {
			if l.what == what && l.job == job {
				n++
			}
		}
		return n
	}
	var lines []hookLine
	until(t, 40*time.Second, "three failure hooks of bad and of hang, and a success hook of good", func() bool {
		lines = readHookLines(t, ledger)
		return count(lines, "on-failure", "bad") >= 3 && count(lines, "on-failure", "hang") >= 3 && count(lines, "on-success", "good") >= 1
	})

	// Every run of bad and good up to the latest hook seen then has its
	// hook, once, with the run's facts; quiet has none. Runs of one job
	// overlap on a loaded machine, so a tick's hook may come after a later
	// tick's: the ledger is read again until each has come.
	type key struct{ job, tick string }
	latest := map[string]string{}
	for _, l := range lines {
		if l.what != "run" && l.what != "term" {
			latest[l.job] = max(latest[l.job], l.tick)
		}
	}
	checked := func(l hookLine) bool { return l.what == "run" && l.job != "quiet" && l.tick <= latest[l.job] }
	var hooks map[key][]hookLine
	until(t, 20*time.Second, "a hook for each run of bad and good up to the latest hook seen", func() bool {
		lines, hooks = readHookLines(t, ledger), map[key][]hookLine{}
		for _, l := range lines {
			if l.what != "run" && l.what != "term" {
				hooks[key{l.job, l.tick}] = append(hooks[key{l.job, l.tick}], l)
			}
		}
		for _, l := range lines {
			if checked(l) && len(hooks[key{l.job, l.tick}]) == 0 {
				return false
			}
		}
		return true
	})
	for _, l := range lines {
		if !checked(l) {
			if l.what != "run" && l.job == "quiet" {
				t.Errorf("quiet, whose on-failure is \"\", ran a hook: %+v", l)
			}
			continue
		}
		want := hookLine{what: "on-failure", job: l.job, tick: l.tick, id: l.id, fence: l.fence, exit: "3", err: "exit status 3"}
		if l.job == "good" {
			want.what, want.exit, want.err = "on-success", "0", ""
		}
		got := hooks[key{l.job, l.tick}]
		if len(got) != 1 {
			t.Errorf("run of %s at %s on %s: hooks %+v, want one", l.job, l.tick, l.id, got)
			continue
		}
		got[0].pid = 0
		if got[0] != want {
			t.Errorf("run of %s at %s: hook %+v, want %+v", l.job, l.tick, got[0], want)
		}
	}
	for k, hs := range hooks {
		if len(hs) != 1 && k.tick <= latest[k.job] {
			t.Errorf("%s at %s: %d hooks, want one: %+v", k.job, k.tick, len(hs), hs)
		}
	}

	// A hook past its timeout is stopped, and its failure logged.
	var hung hookLine
	for _, l := range lines {
		if l.job == "hang" {
			hung = l
			break
		}
	}
	until(t, 10*time.Second, "the hook past its 1s timeout to be killed", func() bool { return !alive(hung.pid) })
	replicas[hung.id].waitOutput("a hook failed", 10*time.Second)
	if out := replicas[hung.id].out.String(); !strings.Contains(out, "job=hang") || !strings.Contains(out, "hook timed out") {
		t.Errorf("%s's log names no timed-out hook of hang:\n%s", hung.id, out)
	}

	// A hook that ignores SIGTERM has ended when its baton exits.
	var held hookLine
	until(t, 20*time.Second, "a failure hook of linger to hold on", func() bool {
		for _, l := range readHookLines(t, ledger) {
			if l.what == "on-failure" && l.job == "linger" && alive(l.pid) {
				held = l
				return true
			}
		}
		return false
	})
	p := replicas[held.id]
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(15 * time.Second); code != 0 {
		t.Errorf("baton exited %d on SIGTERM, want 0", code)
	}
	if alive(held.pid) {
		t.Errorf("the hook of linger at %s (pid %d) outlived %s", held.tick, held.pid, held.id)
	}
	told := false
	for _, l := range readHookLines(t, ledger) {
		told = told || l.what == "term" && l.job == "linger" && l.tick == held.tick && l.pid == held.pid
	}
	if !told {
		t.Errorf("the hook of linger at %s (pid %d) was not told to stop (SIGTERM) when %s stopped", held.tick, held.pid, held.id)
	}
	// baton waited for it: it logged the hook stopped before it exited,
	// or, on a machine too loaded to reap it within a second of the
	// kill, that it waited out the grace period and a second more.
	stopped := false
	for _, line := range strings.Split(p.out.String(), "\n") {
		stopped = stopped || strings.Contains(line, "a hook failed") && strings.Contains(line, "shut down: stopped") && strings.Contains(line, "job=linger")
		stopped = stopped || strings.Contains(line, "commands still running after the grace period")
	}
	if !stopped {
		t.Errorf("%s exited without logging the hook of linger stopped: it did not wait for it", held.id)
	}
}
