package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestParseCrontabOptions reads entries' options in brackets, and names the
// line of a bad one.
func TestParseCrontabOptions(t *testing.T) {
	t.Parallel()
	good := "report: [timeout=10m, overlap=forbid dst=once] 0 3 * * * node report.js\n" +
		"[timeout=1s,jitter=30s attempts=3 backoff=1m] TZ=Europe/Berlin */5 * * * * ./bin/sweep\n"
	entries, err := parseCrontab(strings.NewReader(good), "crontab", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].options != "[timeout=10m overlap=forbid dst=once]" || len(entries[0].opts) != 3 ||
		entries[0].spec != "0 3 * * *" || entries[0].command != "node report.js" ||
		entries[1].options != "[timeout=1s jitter=30s attempts=3 backoff=1m]" || *entries[1].retry.attempts != 3 || *entries[1].retry.backoff != time.Minute ||
		entries[0].retry.attempts != nil || entries[1].spec != "CRON_TZ=Europe/Berlin */5 * * * *" || entries[1].command != "./bin/sweep" {
		t.Fatalf("entries %+v", entries)
	}
	// A quoted value keeps its spaces, commas and brackets; "" is none.
	hooked, err := parseCrontab(strings.NewReader(`a: [on-failure="./alert --to ops,dev [x]", on-success='' hook-timeout=5s] * * * * * x`+"\n"), "crontab", false)
	if err != nil {
		t.Fatal(err)
	}
	if h := hooked[0].hooks; h.onFailure == nil || *h.onFailure != "./alert --to ops,dev [x]" || h.onSuccess == nil || *h.onSuccess != "" ||
		h.timeout == nil || *h.timeout != 5*time.Second || hooked[0].command != "x" {
		t.Errorf("hooks %+v of %+v", h, hooked[0])
	}
	// A catch-up window is a duration; 0 catches nothing up.
	for _, line := range []string{"nightly: [catch-up=2h] 0 2 * * * x", "nightly: [catch-up=0] 0 2 * * * x",
		"nightly: [max-runs=3] 0 2 * * * x", "nightly: [start=2026-12-24T18:00:00+01:00] 0 2 * * * x", "nightly: [end=2027-01-01T00:00:00Z] 0 2 * * * x"} {
		if e, err := parseCrontab(strings.NewReader(line+"\n"), "crontab", false); err != nil || len(e) != 1 || len(e[0].opts) != 1 {
			t.Errorf("%s: %+v, %v", line, e, err)
		}
	}
	if e, err := parseCrontab(strings.NewReader("a: [recover=2] * * * * * x\n"), "crontab", false); err != nil || len(e[0].opts) != 1 {
		t.Errorf("recover=2: %+v, %v", e, err)
	}
	// A jitter shorter than the ticks' interval is fine, and so is a
	// command that starts with the shell's [ (test).
	if _, err := parseCrontab(strings.NewReader("a: [jitter=59s] * * * * * [ -f x ] && y\n"), "crontab", false); err != nil {
		t.Errorf("jitter=59s on every minute: %v", err)
	}
	// Both buffering policies are read; each is its own cronx.Overlap.
	for _, v := range []string{"buffer-one", "buffer-all"} {
		if _, err := parseCrontab(strings.NewReader("a: [overlap="+v+"] * * * * * x\n"), "crontab", false); err != nil {
			t.Errorf("overlap=%s: %v", v, err)
		}
	}
	if one, _ := parseOverlap("buffer-one"); one != cronx.BufferOne {
		t.Errorf("buffer-one reads as %v, want BufferOne", one)
	}
	if all, _ := parseOverlap("buffer-all"); all != cronx.BufferAll {
		t.Errorf("buffer-all reads as %v, want BufferAll", all)
	}
	// --check prints each entry's options beside its command.
	file := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(file, []byte(good), 0o644)
	if code, out := runBaton(t, nil, "crontab", "--check", file); code != 0 ||
		!strings.Contains(out, "\treport\t0 3 * * *\t[timeout=10m overlap=forbid dst=once]\tnode report.js\n") {
		t.Errorf("--check: exit %d, output:\n%s", code, out)
	}
	for _, tc := range []struct{ line, want string }{
		{"a: [timeout=-1s] * * * * * x", "must not be negative"},
		{"a: [timeout=soon] * * * * * x", `invalid duration "soon"`},
		{"a: [overlap=sometimes] * * * * * x", `"sometimes": want allow, forbid, replace, buffer-one or buffer-all`},
		{"a: [colour=red] * * * * * x", `option "colour": unknown`},
		{"a: [dst=twice] * * * * * x", `"twice": want robfig or once`},
		{"a: [jitter=-5s] * * * * * x", "must not be negative"},
		{"a: [attempts=0] * * * * * x", "want a whole number of 1 or more"},
		{"a: [pause-after=0] * * * * * x", "want a whole number of failures of 1 or more"},
		{"a: [catch-up=-1h] * * * * * x", "option catch-up=-1h: -1h: must not be negative"},
		{"a: [catch-up=a-while] * * * * * x", `option catch-up=a-while: time: invalid duration "a-while"`},
		{"a: [recover=-1] * * * * * x", "option recover=-1: want a whole number of runs again of 0 or more"},
		{"a: [recover=twice] * * * * * x", "option recover=twice: want a whole number of runs again of 0 or more"},
		{"a: [max-runs=0] * * * * * x", "option max-runs=0: want a whole number of runs of 1 or more"},
		{"a: [start=tomorrow] * * * * * x", "option start=tomorrow: want a time in RFC 3339"},
		{"a: [end=2026-12-24] * * * * * x", "option end=2026-12-24: want a time in RFC 3339"},
		{"a: [backoff=x] * * * * * x", `invalid duration "x"`},
		{"a: [timeout] * * * * * x", "want KEY=VALUE"},
		{"a: [timeout=1s * * * * * x", "not closed"},
		{"a: [] * * * * * x", "empty options"},
		{"a: [timeout=1s]* * * * * x", "write a space after"},
		{"a: [overlap=forbid overlap=replace] * * * * * x", "option overlap given twice (overlap=forbid and overlap=replace)"},
		{"a: [jitter=5s] @every 2s x", "[jitter=5s] is not shorter than the 2s between the job's ticks"},
		{"a: [jitter=1m] */1 * * * * x", "[jitter=1m0s] is not shorter than the 1m0s between the job's ticks"},
		{"j: @every 1m [timeout=1m] x", "options after the schedule would be part of the command: write them before the schedule ([timeout=1m] @every 1m"},
		{"TZ=Asia/Tokyo [timeout=1m] 0 3 * * * x", "options after TZ=Asia/Tokyo: write them before it"},
		{"a: [hook-timeout=0s] * * * * * x", "want a duration above 0"},
		{`a: [on-failure="./alert --to ops] * * * * * x`, `options opened with '[' are not closed`},
		{"a: [on-failure=x on-failure=y] * * * * * x", "option on-failure given twice"},
		{"a: [on-succes=x] * * * * * x", `option "on-succes": unknown`},
	} {
		_, err := parseCrontab(strings.NewReader("\n"+tc.line+"\n"), "crontab", false)
		if err == nil || !strings.Contains(err.Error(), "crontab:2: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error on crontab:2 saying %q", tc.line, err, tc.want)
		}
	}
}

// policyTTL is the replicas' --ttl in these tests, in seconds: longer than
// a pause of the test process, which runs etcd. A session lost in such a
// pause has its command stopped (SIGKILL half a second after SIGTERM), which
// the tests would read as a run that never ended.
const policyTTL = 6

// jobHistory reads a crontab job's run history from etcd.
func jobHistory(t *testing.T, cli *clientv3.Client, job string) []cronx.Record {
	t.Helper()
	k, err := cronx.NewControl(cli, "/baton", "crontab")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := k.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range st.Jobs {
		if j.Name == job {
			return j.History
		}
	}
	return nil
}

// TestCrontabTimeoutStopsTheCommand runs three replicas of a crontab whose
// job outlives its timeout and ignores SIGTERM: at the timeout (the entry's
// 1s, over the flag's hour) the command gets SIGTERM, then SIGKILL after
// --grace (not the half second of a lost claim); the run is recorded as
// timed out, once.
func TestCrontabTimeoutStopsTheCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := etcdtest.Shared(t)
	cli := etcd.Client(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	file := filepath.Join(dir, "crontab")
	// The trap comes first: a shell that a loaded machine starts late may
	// still be before it at the timeout, and die of the SIGTERM; a shell
	// that got past it says when the SIGTERM came.
	os.WriteFile(file, []byte(`slow: [timeout=1s] */5 * * * * * trap 'echo "term $BATON_TICK $(date +%s.%N)" >> `+log+`; sleep 30' TERM; `+
		`echo "start $BATON_TICK" >> `+log+`; while true; do sleep 0.05; done`+"\n"), 0o644)
	for _, id := range []string{"r1", "r2", "r3"} {
		startBaton(t, append(etcd.Env(), "BATON_ID="+id),
			"crontab", "--seconds", "--ttl", strconv.Itoa(policyTTL), "--grace", "2s", "--timeout", "1h", file)
	}
	until(t, 20*time.Second, "a run to start", func() bool { return len(readLines(log)) >= 1 })
	var lines []string
	until(t, 10*time.Second, "the command to get SIGTERM", func() bool {
		lines = readLines(log)
		return len(lines) >= 2
	})
	tick := strings.TrimPrefix(lines[0], "start ")
	term := strings.Fields(lines[1])
	if len(term) != 3 || term[0] != "term" || term[1] != tick {
		t.Fatalf("log %q, want the run of %s to get SIGTERM", lines, tick)
	}
	nominal, err := time.Parse(time.RFC3339, tick)
	if err != nil {
		t.Fatal(err)
	}
	termAt, err := strconv.ParseFloat(term[2], 64)
	if err != nil {
		t.Fatal(err)
	}
	// The run starts at its tick or later: a SIGTERM within a second of
	// the tick came before the timeout.
	if after := time.Duration((termAt - float64(nominal.UnixNano())/1e9) * float64(time.Second)); after < time.Second {
		t.Errorf("SIGTERM %v after the tick, want the 1s timeout", after)
	}
	var h cronx.Record
	until(t, 20*time.Second, "the run in the history", func() bool {
		for _, r := range jobHistory(t, cli, "slow") {
			if r.Tick.Format(time.RFC3339) == tick {
				h = r
				return true
			}
		}
		return false
	})
	if !h.TimedOut || !strings.Contains(h.Error, "timed out after 1s") {
		t.Errorf("recorded %+v, want the run of %s timed out after 1s", h, tick)
	}
	// SIGKILL came after the 2s grace, not after the trap's 30s sleep.
	if h.Duration < 2500*time.Millisecond || h.Duration > 6*time.Second {
		t.Errorf("the run took %v, want the 1s timeout and the 2s grace", h.Duration)
	}
	if n := slices.Index(readLines(log)[1:], "start "+tick); n >= 0 {
		t.Errorf("the tick %s started twice: %q", tick, readLines(log))
	}
}

// attemptLine is one line a retried command appended to the ledger.
type attemptLine struct {
	what, tick, attempt, instance, fence string
	at                                   time.Time
}

func readAttempts(t *testing.T, path string) []attemptLine {
	t.Helper()
	var out []attemptLine
	for _, l := range readLines(path) {
		f := strings.Fields(l)
		if len(f) != 6 {
			continue
		}
		ns, err := strconv.ParseInt(f[5], 10, 64)
		if err != nil {
			t.Fatalf("ledger line %q: %v", l, err)
		}
		out = append(out, attemptLine{f[0], f[1], f[2], f[3], f[4], time.Unix(0, ns)})
	}
	return out
}

// TestCrontabRetriesStayWithTheClaim runs three replicas of a Forbid job
// that always fails, with three attempts, and stops the replica that runs
// it in its second attempt: by kill -9 (a crash) or SIGTERM (a deploy).
// No other replica retries that tick, no two runs ever overlap, each
// tick's attempts share one claim, and a later tick runs on another replica.
func TestCrontabRetriesStayWithTheClaim(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	for _, how := range []string{"kill", "term"} {
		t.Run(how, func(t *testing.T) {
			etcd := etcdtest.Shared(t)
			dir := t.TempDir()
			ledger := filepath.Join(dir, "ledger")
			file := filepath.Join(dir, "crontab")
			line := `echo "%s $BATON_TICK $BATON_ATTEMPT $BATON_ID $BATON_FENCE $(date +%%s%%N)" >> ` + ledger
			// A second attempt runs until its replica is stopped: the stop
			// comes in it however late the test gets to send it.
			os.WriteFile(file, []byte(`flaky: */6 * * * * * `+fmt.Sprintf(line, "start")+
				`; if [ "$BATON_ATTEMPT" = 2 ]; then while :; do sleep 0.05; done; fi; sleep 0.5; `+fmt.Sprintf(line, "end")+"; exit 1\n"), 0o644)
			replicas := map[string]*process{}
			for _, id := range []string{"r1", "r2", "r3"} {
				replicas[id] = startBaton(t, append(etcd.Env(), "BATON_ID="+id),
					"crontab", "--seconds", "--ttl", strconv.Itoa(policyTTL), "--overlap", "forbid", "--attempts", "3", "--retry-backoff", "1s", "--grace", "1s", file)
			}
			var victim attemptLine
			until(t, 30*time.Second, "a second attempt to start", func() bool {
				for _, l := range readAttempts(t, ledger) {
					if l.what == "start" && l.attempt == "2" {
						victim = l
						return true
					}
				}
				return false
			})
			p := replicas[victim.instance]
			signalled := time.Now()
			if how == "kill" {
				p.cmd.Process.Kill()
			} else {
				p.cmd.Process.Signal(syscall.SIGTERM)
			}
			p.wait(10 * time.Second)
			stopped := time.Now()
			until(t, 30*time.Second, "a later tick on another replica", func() bool {
				for _, l := range readAttempts(t, ledger) {
					if l.what == "start" && l.instance != victim.instance && l.at.After(stopped) {
						return true
					}
				}
				return false
			})
			lines := readAttempts(t, ledger)
			fence := map[string]string{}
			var last attemptLine // the latest start or end
			running := false
			for _, l := range lines {
				k := l.tick
				if l.what == "start" {
					if f, ok := fence[k]; ok && f != l.fence+" "+l.instance {
						t.Errorf("tick %s: attempt %s on %s fence %s, earlier attempts on %s", k, l.attempt, l.instance, l.fence, f)
					}
					fence[k] = l.fence + " " + l.instance
					if running && !(last.instance == victim.instance && last.tick == victim.tick) {
						t.Errorf("%s attempt %s started on %s while %s attempt %s ran on %s", k, l.attempt, l.instance, last.tick, last.attempt, last.instance)
					}
					if k == victim.tick && l.instance != victim.instance {
						t.Errorf("tick %s retried on %s after %s stopped", k, l.instance, victim.instance)
					}
					if k == victim.tick && l.attempt == "3" {
						t.Errorf("tick %s: a third attempt after its runner stopped in the second", k)
					}
					if running && last.instance == victim.instance && last.tick == victim.tick && l.at.Before(signalled) {
						t.Errorf("%s started on %s beside the stopped replica's run", k, l.instance)
					}
					running = true
				} else {
					running = false
				}
				last = l
			}
			if t.Failed() {
				b, _ := os.ReadFile(ledger)
				t.Logf("ledger:\n%s", b)
			}
		})
	}
}

// TestCrontabReplaceNeverOverlaps runs three replicas of a Replace job whose
// command outlasts the tick and takes half a second to stop on SIGTERM;
// then the replica running it is stopped mid-run, by kill -9 or SIGTERM.
// Each tick stops the run before it, on whichever replica, and two runs
// never overlap; the ticks go on, on the other replicas.
func TestCrontabReplaceNeverOverlaps(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	for _, how := range []string{"kill", "term"} {
		t.Run(how, func(t *testing.T) {
			etcd := etcdtest.Shared(t)
			dir := t.TempDir()
			ledger := filepath.Join(dir, "ledger")
			file := filepath.Join(dir, "crontab")
			line := `echo "%s $BATON_TICK $BATON_ATTEMPT $BATON_ID $BATON_FENCE $(date +%%s%%N)" >> ` + ledger
			os.WriteFile(file, []byte(`long: [overlap=replace] */2 * * * * * `+fmt.Sprintf(line, "start")+
				`; trap 'sleep 0.5; `+fmt.Sprintf(line, "end")+`; exit 0' TERM; while true; do sleep 0.05; done`+"\n"), 0o644)
			replicas := map[string]*process{}
			// The grace is long enough for the command's half second on a
			// loaded machine: one killed at its end writes no end line, and
			// the run after it would look like an overlap.
			for _, id := range []string{"r1", "r2", "r3"} {
				replicas[id] = startBaton(t, append(etcd.Env(), "BATON_ID="+id),
					"crontab", "--seconds", "--ttl", strconv.Itoa(policyTTL), "--mode", "claim", "--grace", "10s", file)
			}
			// Three runs replaced, then the runner of the fourth is stopped.
			var victim attemptLine
			until(t, 30*time.Second, "four runs", func() bool {
				starts := 0
				for _, l := range readAttempts(t, ledger) {
					if l.what == "start" {
						starts++
						victim = l
					}
				}
				return starts >= 4
			})
			p := replicas[victim.instance]
			signalled := time.Now()
			if how == "kill" {
				p.cmd.Process.Kill()
			} else {
				p.cmd.Process.Signal(syscall.SIGTERM)
			}
			p.wait(20 * time.Second) // its command may take up to its grace, 10 s
			until(t, 30*time.Second, "two runs after the stop", func() bool {
				n := 0
				for _, l := range readAttempts(t, ledger) {
					if l.what == "start" && l.at.After(signalled) {
						n++
					}
				}
				return n >= 2
			})
			// Runs alternate start, end; a killed run has no end, and ends
			// when its replica was signalled.
			lines := readAttempts(t, ledger)
			var open *attemptLine
			replaced := 0
			for i, l := range lines {
				switch {
				case l.what == "start" && open != nil:
					killed := open.tick == victim.tick && open.instance == victim.instance && how == "kill"
					if !killed || l.at.Before(signalled) {
						t.Errorf("%s started on %s while %s ran on %s", l.tick, l.instance, open.tick, open.instance)
					}
					open = &lines[i]
				case l.what == "start":
					open = &lines[i]
				case open == nil || l.tick != open.tick || l.instance != open.instance:
					t.Errorf("end of %s on %s, not of the run in progress", l.tick, l.instance)
				default:
					if l.tick != victim.tick {
						replaced++
					}
					open = nil
				}
			}
			if replaced < 3 {
				t.Errorf("%d runs ended on SIGTERM before the stop, want the 3 replaced", replaced)
			}
			if t.Failed() {
				b, _ := os.ReadFile(ledger)
				t.Logf("ledger:\n%s", b)
			}
		})
	}
}

// TestCrontabPauseAfterFailures runs two replicas of a crontab whose job
// fails every second, [pause-after=2]: its second failure in a row pauses
// it cluster-wide, no replica runs it again, and baton status says why.
func TestCrontabPauseAfterFailures(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := etcdtest.Shared(t)
	cli := etcd.Client(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	file := filepath.Join(dir, "crontab")
	os.WriteFile(file, []byte(`failing: [pause-after=2] * * * * * * echo "run $BATON_TICK" >> `+log+`; exit 3`+"\n"), 0o644)
	for _, id := range []string{"r1", "r2"} {
		startBaton(t, append(etcd.Env(), "BATON_ID="+id), "crontab", "--seconds", "--ttl", strconv.Itoa(policyTTL), file)
	}
	k, err := cronx.NewControl(cli, "/baton", "crontab")
	if err != nil {
		t.Fatal(err)
	}
	var paused cronx.JobStatus
	until(t, 30*time.Second, "the job paused", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := k.Status(ctx)
		if err != nil || len(st.Jobs) != 1 || !st.Jobs[0].Paused {
			return false
		}
		paused = st.Jobs[0]
		return true
	})
	if paused.ConsecutiveFailures != 2 || !strings.Contains(paused.PausedReason, "2 consecutive failures; the last: exit status 3") ||
		(paused.PausedBy != "r1" && paused.PausedBy != "r2") {
		t.Errorf("paused %+v, want by r1 or r2 after 2 failures of exit status 3", paused)
	}
	// A run claimed before the pause was written may still go on (on a
	// loaded machine its shell takes seconds); none starts after. Once no
	// run is going, its line is in the log, and no claim can commit.
	until(t, 30*time.Second, "the runs claimed before the pause ended", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := k.Status(ctx)
		return err == nil && len(st.Jobs) == 1 && len(st.Jobs[0].Running) == 0
	})
	runs := len(readLines(log))
	time.Sleep(2 * time.Second)
	if n := len(readLines(log)); n != runs {
		t.Errorf("%d runs, then %d, want none once paused: %q", runs, n, readLines(log))
	}
	code, out := runBaton(t, etcd.Env(), "status")
	if code != 0 || !strings.Contains(out, "yes ("+paused.PausedBy+": 2 consecutive failures; the last: exit status 3)") {
		t.Errorf("baton status: exit %d:\n%s", code, out)
	}
}

// TestCrontabMaxRunsAcrossReplicas runs two replicas of a crontab whose
// job runs every second, [max-runs=2]: it runs twice in the cluster, not
// twice a replica, and baton status shows it done.
func TestCrontabMaxRunsAcrossReplicas(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := etcdtest.Shared(t)
	cli := etcd.Client(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	file := filepath.Join(dir, "crontab")
	os.WriteFile(file, []byte(`twice: [max-runs=2] * * * * * * echo "run $BATON_TICK" >> `+log+"\n"), 0o644)
	for _, id := range []string{"r1", "r2"} {
		startBaton(t, append(etcd.Env(), "BATON_ID="+id), "crontab", "--seconds", "--mode", "claim", "--ttl", strconv.Itoa(policyTTL), file)
	}
	k, err := cronx.NewControl(cli, "/baton", "crontab")
	if err != nil {
		t.Fatal(err)
	}
	until(t, 30*time.Second, "the job done", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := k.Status(ctx)
		return err == nil && len(st.Jobs) == 1 && st.Jobs[0].Ended(time.Now())
	})
	// The count is etcd's: once it is at 2 no claim commits, so the log
	// holds the two runs' lines once they have been written, and no more.
	until(t, 10*time.Second, "the two runs' lines", func() bool { return len(readLines(log)) >= 2 })
	code, out := runBaton(t, etcd.Env(), "status")
	if code != 0 || !strings.Contains(out, "done: 2 of 2 runs") {
		t.Errorf("baton status: exit %d:\n%s", code, out)
	}
	if lines := readLines(log); len(lines) != 2 {
		t.Errorf("%d runs, want 2 in the cluster: %q", len(lines), lines)
	}
}
