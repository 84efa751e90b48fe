package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

func TestParseCrontab(t *testing.T) {
	t.Parallel()
	good := `# a comment

MAILTO=ops@example.com
GREETING="hello world"
report: 0 3 * * * node report.js --all
*/5 * * * * ./bin/sweep   --fast
@every 30s curl -fsS http://localhost:3000/ping
CRON_TZ=Asia/Tokyo
tokyo: 30 4 * * * ./bin/tokyo
berlin: CRON_TZ=Europe/Berlin 0 9 * * MON ./bin/berlin
*/5 * * * * ./bin/sweep   --fast
`
	entries, err := parseCrontab(strings.NewReader(good), "crontab", false)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		line          int
		name, spec    string
		command       string
		env           string
		namedExplicit bool
	}
	wants := []want{
		{5, "report", "0 3 * * *", "node report.js --all", "MAILTO=ops@example.com GREETING=hello world", true},
		{6, "sweep-", "*/5 * * * *", "./bin/sweep   --fast", "MAILTO=ops@example.com GREETING=hello world", false},
		{7, "curl-", "@every 30s", "curl -fsS http://localhost:3000/ping", "MAILTO=ops@example.com GREETING=hello world", false},
		{9, "tokyo", "CRON_TZ=Asia/Tokyo 30 4 * * *", "./bin/tokyo", "MAILTO=ops@example.com GREETING=hello world", true},
		{10, "berlin", "CRON_TZ=Europe/Berlin 0 9 * * MON", "./bin/berlin", "MAILTO=ops@example.com GREETING=hello world", true},
		{11, "sweep-", "CRON_TZ=Asia/Tokyo */5 * * * *", "./bin/sweep   --fast", "MAILTO=ops@example.com GREETING=hello world", false},
	}
	if len(entries) != len(wants) {
		t.Fatalf("got %d entries, want %d: %+v", len(entries), len(wants), entries)
	}
	for i, w := range wants {
		e := entries[i]
		if e.line != w.line || e.spec != w.spec || e.command != w.command || strings.Join(e.env, " ") != w.env || e.named != w.namedExplicit {
			t.Errorf("entry %d = %+v, want %+v", i, e, w)
		}
		if w.namedExplicit && e.name != w.name || !w.namedExplicit && !strings.HasPrefix(e.name, w.name) {
			t.Errorf("entry %d name %q, want %q…", i, e.name, w.name)
		}
	}
	// Derived names are stable, and differ when the entry differs (line 11
	// has a zone that line 6 has not).
	again, _ := parseCrontab(strings.NewReader(good), "crontab", false)
	if again[1].name != entries[1].name || entries[1].name == entries[5].name {
		t.Errorf("derived names: %q, %q again, %q for the zoned copy", entries[1].name, again[1].name, entries[5].name)
	}

	// TZ= and CRON_TZ= before a schedule are that entry's zone, as in
	// robfig/cron: the job runs at 03:00 in Tokyo, and later commands'
	// environment is untouched.
	zoned, err := parseCrontab(strings.NewReader("TZ=Asia/Tokyo 0 3 * * * ./bin/tokyo\nnamed: TZ=Europe/Berlin 0 9 * * * ./bin/berlin\nCRON_TZ=America/New_York @daily ./bin/ny\n* * * * * env\n"), "crontab", false)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for i, want := range []time.Time{
		time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC), // 03:00 on Dec 1 in Tokyo
		time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC),  // 09:00 in Berlin
		time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC),  // midnight in New York
	} {
		sched, err := cronParser(false).Parse(zoned[i].spec)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if got := sched.Next(from); !got.Equal(want) {
			t.Errorf("entry %d (%s) next runs at %v, want %v", i, zoned[i].spec, got.UTC(), want)
		}
	}
	if len(zoned) != 4 || len(zoned[3].env) != 0 || zoned[1].name != "named" {
		t.Errorf("zoned entries: %+v", zoned)
	}

	seconds, err := parseCrontab(strings.NewReader("tick: */2 * * * * * date\n"), "crontab", true)
	if err != nil || seconds[0].spec != "*/2 * * * * *" || seconds[0].command != "date" {
		t.Errorf("--seconds: %+v, %v", seconds, err)
	}
	dup, err := parseCrontab(strings.NewReader("* * * * * date\n* * * * * date\n"), "crontab", false)
	if err != nil || dup[0].name == dup[1].name || dup[1].name != dup[0].name+"-2" {
		t.Errorf("a repeated entry: %+v, %v", dup, err)
	}
}

func TestParseCrontabErrorsNameEveryBadLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"too few fields", "ok: * * * * * true\nreport: 0 3 * node r.js\n", []string{"crontab:2:", "5 fields"}},
		{"bad field", "\n\n0 25 * * * true\n", []string{"crontab:3:", "hour", "25"}},
		{"bad descriptor", "@sometimes true\n", []string{"crontab:1:", "@sometimes"}},
		{"bad zone", "CRON_TZ=Mars/Olympus\n* * * * * true\n", []string{"crontab:1:", "Mars/Olympus"}},
		{"bad entry zone", "CRON_TZ=Nowhere/City * * * * * true\n", []string{"crontab:1:", "Nowhere/City"}},
		{"no command", "report: @daily\n", []string{"crontab:1:", "command"}},
		{"duplicate name", "a: * * * * * x\nb: * * * * * y\na: @daily z\n", []string{"crontab:3:", `"a"`, "line 1"}},
		{"empty", "# nothing\n\n", []string{"no jobs"}},
		{"seconds without --seconds", "*/2 * * * * * true\n", []string{"crontab:1:"}},
		{"every bad line", "x\n* * * * * ok\n@bogus y\n", []string{"crontab:1:", "crontab:3:"}},
		{"assignment before a schedule", "ok: * * * * * true\nFOO=1 * * * * * cmd\n", []string{"crontab:2:", "FOO=", "ambiguous"}},
		{"unquoted value with spaces", "GREETING=hello world\n* * * * * true\n", []string{"crontab:1:", "GREETING=", "quote"}},
		{"bad TZ zone", "TZ=Nowhere/City 0 3 * * * true\n", []string{"crontab:1:", "Nowhere/City"}},
		{"slash in name", "a/b: * * * * * true\n", []string{"crontab:1:", `job name "a/b"`}},
		{"space in name", "my job: * * * * * true\n", []string{"crontab:1:", `job name "my job"`, "white space"}},
		{"non-ASCII name", "café: * * * * * true\n", []string{"crontab:1:", `job name "café"`}},
		{"@every 0s", "@every 0s true\n", []string{"crontab:1:", "@every 0s", "at least 1s"}},
		{"@every -5s", "@every -5s true\n", []string{"crontab:1:", "@every -5s", "at least 1s"}},
		{"@every 1.5s", "@every 1500ms true\n", []string{"crontab:1:", "whole number"}},
		{"command over MAX_ARG_STRLEN", "ok: * * * * * true\n* * * * * echo " + strings.Repeat("x", 128<<10) + "\n", []string{"crontab:2:", "command of 131077 bytes", "MAX_ARG_STRLEN"}},
		{"variable over MAX_ARG_STRLEN", "BIG=" + strings.Repeat("x", 128<<10) + "\n* * * * * true\n", []string{"crontab:1:", "variable BIG", "MAX_ARG_STRLEN"}},
		{"line over 1 MiB", "ok: * * * * * true\n* * * * * echo " + strings.Repeat("x", 1<<20) + "\n", []string{"crontab:2:", "1 MiB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCrontab(strings.NewReader(tc.text), "crontab", false)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestCrontabRejectsABadFileBeforeStarting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "crontab")
	ran := filepath.Join(dir, "ran")
	os.WriteFile(file, []byte("* * * * * * touch "+ran+"\n* * * * * * x y z\n0 99 * * * * true\n"), 0o644)
	// No etcd at all: the file is checked first.
	code, out := runBaton(t, []string{"BATON_ETCD_ENDPOINTS=http://127.0.0.1:1"}, "crontab", "--seconds", file)
	if code != exitUsage || !strings.Contains(out, file+":3:") || !strings.Contains(out, "nothing started") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("a command ran from a crontab with a bad line")
	}
	// --check refuses a line it cannot read without guessing.
	os.WriteFile(file, []byte("ok: * * * * * true\nFOO=1 * * * * * cmd\n"), 0o644)
	code, out = runBaton(t, nil, "crontab", "--check", file)
	if code != exitUsage || !strings.Contains(out, file+":2:") {
		t.Fatalf("--check of an ambiguous line: exit %d, output:\n%s", code, out)
	}
	code, out = runBaton(t, nil, "crontab", "--mode", "sideways", file)
	if code != exitUsage || !strings.Contains(out, "--mode") {
		t.Fatalf("bad --mode: exit %d, output:\n%s", code, out)
	}
	code, out = runBaton(t, nil, "crontab", filepath.Join(dir, "missing"))
	if code != exitFailure || !strings.Contains(out, "missing") {
		t.Fatalf("missing file: exit %d, output:\n%s", code, out)
	}
	code, out = runBaton(t, []string{"BATON_ETCD_ENDPOINTS=http://127.0.0.1:1"}, "crontab", dir)
	if code != exitFailure || !strings.Contains(out, dir+" is a directory") {
		t.Fatalf("a directory: exit %d, output:\n%s", code, out)
	}
}

// TestCrontabCheckValidatesTheFlags: --check refuses the flags a run
// would refuse, and neither it nor a run with a bad flag waits for an etcd
// that does not answer; a --jitter as long as a job's ticks' interval is
// refused naming the entry's line.
func TestCrontabCheckValidatesTheFlags(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(file, []byte("# every minute\nj: * * * * * true\n"), 0o644)
	down := []string{"BATON_ETCD_ENDPOINTS=http://127.0.0.1:1"}
	for _, tc := range []struct {
		env  []string
		args []string
		code int
		want string
	}{
		{nil, []string{"--check", "--name", "a/b"}, exitUsage, `scheduler name "a/b"`},
		{nil, []string{"--check", "--ttl", "0"}, exitUsage, `--ttl: TTL "0"`},
		{nil, []string{"--check", "--http", "localhost"}, exitUsage, `--http "localhost"`},
		{nil, []string{"--check", "--jitter", "1m"}, exitUsage, file + ":2: --jitter 1m0s is not shorter than the 1m0s"},
		{down, []string{"--name", "a/b"}, exitUsage, `scheduler name "a/b"`},
		{down, []string{"--ttl", "0"}, exitUsage, `--ttl: TTL "0"`},
		{down, []string{"--check"}, exitOK, file + ":2\tj\t* * * * *\ttrue"},
		{nil, []string{"--check", "--jitter", "59s"}, exitOK, file + ":2\tj"},
		{nil, []string{"--check", "--hook-timeout", "0s"}, exitUsage, "--hook-timeout 0s: want a duration above 0"},
	} {
		p := startBaton(t, tc.env, append(append([]string{"crontab"}, tc.args...), file)...)
		if code := p.wait(10 * time.Second); code != tc.code || !strings.Contains(p.out.String(), tc.want) {
			t.Errorf("crontab %v: exit %d, want %d and %q in:\n%s", tc.args, code, tc.code, tc.want, p.out.String())
		}
	}
}

// ledgerLine is one run a crontab job appended to the ledger.
type ledgerLine struct {
	job, tick, instance string
	fence               int64
}

func readLedger(t *testing.T, path string) []ledgerLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []ledgerLine
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 {
			continue
		}
		fence, _ := strconv.ParseInt(f[3], 10, 64)
		out = append(out, ledgerLine{f[0], f[1], f[2], fence})
	}
	return out
}

// TestCrontabReplicasRunEachTickOnce runs three baton crontab processes on
// one etcd with a job every second, then SIGTERMs the leader (a deploy) and
// kill -9s the next one (a crash): every tick runs once, the handover misses
// no tick, and the crash costs at most the TTL.
func TestCrontabReplicasRunEachTickOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := separateEtcd(t)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	file := filepath.Join(dir, "crontab")
	// A command still under way when its baton gets SIGTERM finishes its
	// line (the grace lets it), so the ledger shows every tick that ran.
	os.WriteFile(file, []byte(`tick: * * * * * * trap '' TERM; echo "$BATON_JOB $BATON_TICK $BATON_ID $BATON_FENCE" >> `+ledger+`; echo ran $BATON_TICK`+"\n"), 0o644)

	// The TTL is longer than a pause of etcd: a leader whose session lapsed
	// in one would leave a gap no crash made.
	const ttl = 6 * time.Second
	replicas := map[string]*process{}
	for _, id := range []string{"r1", "r2", "r3"} {
		replicas[id] = startBaton(t, []string{"BATON_ETCD_ENDPOINTS=" + etcd, "BATON_ID=" + id},
			"crontab", "--seconds", "--ttl", strconv.Itoa(int(ttl/time.Second)), file)
	}
	leaderAfter := func(n int) string {
		var lines []ledgerLine
		until(t, 20*time.Second, "ticks in the ledger", func() bool {
			lines = readLedger(t, ledger)
			return len(lines) >= n
		})
		return lines[len(lines)-1].instance
	}

	first := leaderAfter(3)
	replicas[first].waitOutput("[tick] ran ", 20*time.Second)
	replicas[first].cmd.Process.Signal(syscall.SIGTERM)
	if code := replicas[first].wait(10 * time.Second); code != 0 {
		t.Fatalf("the leader exited %d after SIGTERM", code)
	}
	var second string
	until(t, 20*time.Second, "a second leader", func() bool {
		lines := readLedger(t, ledger)
		second = lines[len(lines)-1].instance
		return second != first && len(lines) >= 6
	})
	leaderAfter(len(readLedger(t, ledger)) + 2)
	crashed := time.Now()
	replicas[second].cmd.Process.Kill()
	replicas[second].wait(5 * time.Second)
	var third string
	until(t, 20*time.Second, "a third leader", func() bool {
		lines := readLedger(t, ledger)
		third = lines[len(lines)-1].instance
		return third != first && third != second
	})
	if took := time.Since(crashed); took > ttl+3*time.Second {
		t.Errorf("the crash failover took %v with a TTL of %v", took, ttl)
	}
	leaderAfter(len(readLedger(t, ledger)) + 2)
	replicas[third].cmd.Process.Signal(syscall.SIGTERM)
	if code := replicas[third].wait(10 * time.Second); code != 0 {
		t.Fatalf("the last replica exited %d after SIGTERM", code)
	}

	// Runs overlap: a command slower than a second (a loaded machine) may
	// append its line after the next tick's. Their ticks order them.
	type run struct {
		ledgerLine
		at time.Time
	}
	var runs []run
	seen := map[string]string{}
	for _, l := range readLedger(t, ledger) {
		if prev, ok := seen[l.tick]; ok {
			t.Errorf("tick %s ran twice: by %s and by %s", l.tick, prev, l.instance)
		}
		seen[l.tick] = l.instance
		tick, err := time.Parse(time.RFC3339, l.tick)
		if err != nil {
			t.Fatalf("BATON_TICK %q: %v", l.tick, err)
		}
		runs = append(runs, run{l, tick})
	}
	slices.SortStableFunc(runs, func(a, b run) int { return a.at.Compare(b.at) })
	// Every tick from the first to the last ran, except in the crash's gap:
	// the SIGTERM handover misses nothing.
	for i := 1; i < len(runs); i++ {
		prev, r := runs[i-1], runs[i]
		gap := r.at.Sub(prev.at)
		crashGap := prev.instance == second && r.instance == third
		if gap > 0 && gap != time.Second && !crashGap {
			t.Errorf("ticks %v to %v (%s to %s): %v apart, want 1s", prev.at, r.at, prev.instance, r.instance, gap)
		}
		if r.fence < prev.fence {
			t.Errorf("fence went back from %d to %d at tick %v", prev.fence, r.fence, r.at)
		}
	}
	if t.Failed() {
		b, _ := os.ReadFile(ledger)
		t.Logf("ledger:\n%s", b)
	}
}

// TestCrontabStopSparesACommandJustStarted is a deploy's SIGTERM that comes
// just after a tick's command started: the command, which ignores SIGTERM
// once it has set that up, finishes its tick, and baton exits 0. Passed on at
// once, the signal reached the command before its trap and killed it (exit
// status 143): its tick, claimed and run once, did nothing.
func TestCrontabStopSparesACommandJustStarted(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	// The command takes a moment to set up its handling of SIGTERM, as a
	// program does while its runtime starts. The allowance counts from
	// baton's start of the command's supervisor (the command's parent,
	// whose start /proc gives), and a loaded machine can take most of it
	// to start the supervisor and the shell and to show the test the
	// command's first line: a try whose SIGTERM came later than
	// justStarted after the supervisor's start tests nothing, and is made
	// again.
	const justStarted = 700 * time.Millisecond
	for try := 1; ; try++ {
		dir := t.TempDir()
		started, finished := filepath.Join(dir, "started"), filepath.Join(dir, "finished")
		file := filepath.Join(dir, "crontab")
		os.WriteFile(file, []byte(`tick: * * * * * * echo $BATON_TICK $PPID >> `+started+`; sleep 0.1; trap '' TERM; echo $BATON_TICK >> `+finished+"\n"), 0o644)
		p := startBaton(t, etcd.Env(), "crontab", "--seconds", file)
		var tick, supervisor string
		until(t, 15*time.Second, "a command to start", func() bool {
			if lines := readLines(started); len(lines) > 0 {
				if f := strings.Fields(lines[len(lines)-1]); len(f) == 2 {
					tick, supervisor = f[0], f[1]
				}
			}
			return tick != ""
		})
		born, err := procStart(supervisor)
		if err != nil {
			t.Fatalf("the command's supervisor: %v", err)
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		since, err := sinceBoot()
		if err != nil {
			t.Fatal(err)
		}
		if code := p.wait(10 * time.Second); code != 0 {
			t.Fatalf("baton exited %d after SIGTERM", code)
		}
		if slices.Contains(readLines(finished), tick) {
			return
		}
		if late := since - born; late > justStarted {
			if try < 5 {
				t.Logf("try %d: SIGTERM came %v after the supervisor's start, more than %v: again", try, late, justStarted)
				continue
			}
			t.Fatalf("in %d tries no SIGTERM came within %v of the command's supervisor's start (the last %v): the machine is too loaded for this test", try, justStarted, late)
		}
		t.Fatalf("the command of tick %s, whose supervisor started %v before baton's SIGTERM, did not finish (finished: %q):\n%s",
			tick, since-born, readLines(finished), p.out.String())
	}
}

// procStart is when process pid started, as a time since boot (to the
// kernel's clock tick, 10 ms).
func procStart(pid string) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// The fields after the command's name, which may hold spaces: the
	// start time is the 22nd field of the line, the 20th after the name.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%s/stat: %q", pid, b)
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%s/stat: start time: %v", pid, err)
	}
	return time.Duration(ticks) * (time.Second / 100), nil
}

// sinceBoot is the time since boot, on the clock procStart reads.
func sinceBoot() (time.Duration, error) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/uptime: %q", b)
	}
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/uptime: %v", err)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// TestCommandDiesWithBaton kills baton with SIGKILL while its command, and a
// process the command started, run: both must die.
func TestCommandDiesWithBaton(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	file := filepath.Join(dir, "crontab")
	// The shell starts a background sleep, then waits on a foreground one.
	os.WriteFile(file, []byte(`long: * * * * * * sleep 300 & echo $! >> `+pids+`; echo $$ >> `+pids+`; sleep 300`+"\n"), 0o644)
	p := startBaton(t, etcd.Env(), "crontab", "--seconds", "--overlap", "forbid", file)
	var procs []int
	until(t, 15*time.Second, "the command to start", func() bool {
		b, _ := os.ReadFile(pids)
		procs = nil
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			procs = append(procs, n)
		}
		return len(procs) >= 2
	})
	for _, pid := range procs {
		if syscall.Kill(pid, 0) != nil {
			t.Fatalf("process %d is not running before the kill", pid)
		}
	}
	p.cmd.Process.Kill()
	p.wait(5 * time.Second)
	until(t, 5*time.Second, "the command's processes to die", func() bool {
		for _, pid := range procs[:2] {
			if syscall.Kill(pid, 0) == nil && !zombie(pid) {
				return false
			}
		}
		return true
	})
}

// TestCrontabWaitsForEtcd starts a replica while etcd is unreachable: it
// neither exits nor runs anything, says so after each --dial-timeout, and
// starts running once etcd answers.
func TestCrontabWaitsForEtcd(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, etcd.Addr())
	proxy.Blackhole()
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	file := filepath.Join(dir, "crontab")
	os.WriteFile(file, []byte(`tick: * * * * * * echo "$BATON_JOB $BATON_TICK $BATON_ID $BATON_FENCE" >> `+ledger+"\n"), 0o644)
	p := startBaton(t, etcd.Env(proxy.Endpoint()), "crontab", "--seconds", "--ttl", "2", "--dial-timeout", "1s", file)
	p.waitOutput("waiting for etcd", 20*time.Second) // a loaded machine can take seconds to start a process
	if !strings.Contains(p.out.String(), proxy.Endpoint()) {
		t.Errorf("the wait does not name the endpoint:\n%s", p.out.String())
	}
	until(t, 10*time.Second, "a second word about the wait", func() bool { return strings.Count(p.out.String(), "waiting for etcd") >= 2 })
	// The words come a dial (--dial-timeout) and a pause (retryDial)
	// apart, as the process's own log stamps them.
	var words []time.Time
	for _, line := range strings.Split(p.out.String(), "\n") {
		if at, ok := strings.CutPrefix(line, "time="); ok && strings.Contains(line, "waiting for etcd") {
			at, _, _ = strings.Cut(at, " ")
			if ts, err := time.Parse(time.RFC3339Nano, at); err == nil {
				words = append(words, ts)
			}
		}
	}
	if len(words) < 2 {
		t.Fatalf("no two stamped words about the wait:\n%s", p.out.String())
	}
	if gap := words[1].Sub(words[0]); gap > 5*time.Second {
		t.Errorf("the second word about an unreachable etcd came %v after the first, with --dial-timeout 1s", gap)
	}
	if lines := readLedger(t, ledger); len(lines) != 0 {
		t.Fatalf("ran without etcd: %v", lines)
	}
	proxy.Pass()
	until(t, 30*time.Second, "a tick once etcd answers", func() bool { return len(readLedger(t, ledger)) > 0 })
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}

	// Asked to stop while it waits, it stops at once.
	proxy.Blackhole()
	p = startBaton(t, etcd.Env(proxy.Endpoint()), "crontab", "--seconds", "--dial-timeout", "1s", file)
	p.waitOutput("waiting for etcd", 10*time.Second)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(20 * time.Second); code != 0 || !strings.Contains(p.out.String(), "stopped while waiting") {
		t.Fatalf("exit %d after SIGTERM while waiting:\n%s", code, p.out.String())
	}
}

// TestTriggersEachRunOnceWithATickOfItsOwn: two `baton trigger` calls of a
// job are two runs, and each command gets a BATON_TICK of its own.
func TestTriggersEachRunOnceWithATickOfItsOwn(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := etcdtest.Shared(t)
	dir := t.TempDir()
	ticks := filepath.Join(dir, "ticks")
	file := filepath.Join(dir, "crontab")
	os.WriteFile(file, []byte(`report: 0 0 1 1 * echo "$BATON_TICK" >> `+ticks+"\n"), 0o644)
	startBaton(t, append(etcd.Env(), "BATON_ID=web-1"), "crontab", "--name", "triggers", file)
	until(t, 15*time.Second, "the job to be registered", func() bool {
		code, _ := runBaton(t, etcd.Env(), "trigger", "--scheduler", "triggers", "report")
		return code == exitOK
	})
	if code, out := runBaton(t, etcd.Env(), "trigger", "--scheduler", "triggers", "report"); code != exitOK {
		t.Fatalf("the second trigger exited %d:\n%s", code, out)
	}
	until(t, 15*time.Second, "two runs", func() bool { return len(readLines(ticks)) >= 2 })
	lines := readLines(ticks)
	if len(lines) != 2 || lines[0] == lines[1] {
		t.Errorf("two triggers ran with BATON_TICK %q, want two runs, each with a tick of its own", lines)
	}
}
