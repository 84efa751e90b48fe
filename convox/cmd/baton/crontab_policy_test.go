package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestParseCrontabOptions reads entries' options in brackets, and names the
// line of a bad one.
func TestParseCrontabOptions(t *testing.T) {
	good := "report: [timeout=10m, overlap=forbid dst=once] 0 3 * * * node report.js\n" +
		"[timeout=1s,jitter=30s] TZ=Europe/Berlin */5 * * * * ./bin/sweep\n"
	entries, err := parseCrontab(strings.NewReader(good), "crontab", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].options != "[timeout=10m overlap=forbid dst=once]" || len(entries[0].opts) != 3 ||
		entries[0].spec != "0 3 * * *" || entries[0].command != "node report.js" ||
		entries[1].options != "[timeout=1s jitter=30s]" || entries[1].spec != "CRON_TZ=Europe/Berlin */5 * * * *" || entries[1].command != "./bin/sweep" {
		t.Fatalf("entries %+v", entries)
	}
	for _, tc := range []struct{ line, want string }{
		{"a: [timeout=-1s] * * * * * x", "must not be negative"},
		{"a: [timeout=soon] * * * * * x", `invalid duration "soon"`},
		{"a: [overlap=sometimes] * * * * * x", `"sometimes": want allow or forbid`},
		{"a: [colour=red] * * * * * x", `option "colour": unknown`},
		{"a: [dst=twice] * * * * * x", `"twice": want robfig or once`},
		{"a: [jitter=-5s] * * * * * x", "must not be negative"},
		{"a: [timeout] * * * * * x", "want KEY=VALUE"},
		{"a: [timeout=1s * * * * * x", "not closed"},
		{"a: [] * * * * * x", "empty options"},
		{"a: [timeout=1s]* * * * * x", "write a space after"},
	} {
		_, err := parseCrontab(strings.NewReader("\n"+tc.line+"\n"), "crontab", false)
		if err == nil || !strings.Contains(err.Error(), "crontab:2: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error on crontab:2 saying %q", tc.line, err, tc.want)
		}
	}
}

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
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := etcdtest.Start(t)
	cli := etcd.Client(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	file := filepath.Join(dir, "crontab")
	os.WriteFile(file, []byte(`slow: [timeout=1s] */5 * * * * * echo "start $BATON_TICK" >> `+log+
		`; trap 'echo "term $BATON_TICK" >> `+log+`; sleep 30' TERM; while true; do sleep 0.05; done`+"\n"), 0o644)
	for _, id := range []string{"r1", "r2", "r3"} {
		startBaton(t, []string{"BATON_ETCD_ENDPOINTS=" + etcd.Endpoint(), "BATON_ID=" + id},
			"crontab", "--seconds", "--ttl", "2", "--grace", "2s", "--timeout", "1h", file)
	}
	var startedAt time.Time
	until(t, 20*time.Second, "a run to start", func() bool {
		startedAt = time.Now()
		return len(readLines(log)) >= 1
	})
	var lines []string
	until(t, 5*time.Second, "the command to get SIGTERM", func() bool {
		lines = readLines(log)
		return len(lines) >= 2
	})
	if took := time.Since(startedAt); took < 500*time.Millisecond {
		t.Errorf("SIGTERM %v after the start, want about the 1s timeout", took)
	}
	tick := strings.TrimPrefix(lines[0], "start ")
	if lines[1] != "term "+tick {
		t.Fatalf("log %q, want the run of %s to get SIGTERM", lines, tick)
	}
	var hist []cronx.Record
	until(t, 10*time.Second, "the run in the history", func() bool {
		hist = jobHistory(t, cli, "slow")
		return len(hist) >= 1
	})
	h := hist[0]
	if h.Tick.Format(time.RFC3339) != tick || !h.TimedOut || !strings.Contains(h.Error, "timed out after 1s") {
		t.Errorf("recorded %+v, want the run of %s timed out after 1s", h, tick)
	}
	// SIGKILL came after the 2s grace, not after the trap's 30s sleep.
	if h.Duration < 2500*time.Millisecond || h.Duration > 6*time.Second {
		t.Errorf("the run took %v, want the 1s timeout and the 2s grace", h.Duration)
	}
	for _, l := range readLines(log) {
		if l == "start "+tick && l != lines[0] {
			t.Errorf("the tick %s started twice: %q", tick, readLines(log))
		}
	}
}
