package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// TestBackfillRunsEachTickOnceThroughTheCommand: `baton backfill` of a
// crontab's job queues each tick of the range, which the crontab runs once
// with BATON_TICK the tick's and BATON_BACKFILL=1; asked again, it is the
// same backfill; a range over --max is refused with its count.
func TestBackfillRunsEachTickOnceThroughTheCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := etcdtest.Shared(t)
	dir := t.TempDir()
	ticks := filepath.Join(dir, "ticks")
	file := filepath.Join(dir, "crontab")
	os.WriteFile(file, []byte(`report: 0 * * * * echo "$BATON_TICK $BATON_BACKFILL" >> `+ticks+"\n"), 0o644)
	startBaton(t, append(etcd.Env(), "BATON_ID=web-1"), "crontab", "--name", "bfcli", file)
	to := time.Now().Truncate(time.Hour)
	from := to.Add(-3 * time.Hour)
	rng := []string{"--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339)}
	var out string
	until(t, 15*time.Second, "the job to be registered", func() bool {
		var code int
		code, out = runBaton(t, etcd.Env(), append([]string{"backfill", "--id", "ops"}, append(rng, "bfcli", "report")...)...)
		return code == exitOK
	})
	if !strings.Contains(out, "3 ticks queued") {
		t.Errorf("baton backfill said:\n%s\nwant 3 ticks queued", out)
	}
	var want []string
	for i := range 3 {
		want = append(want, from.Add(time.Duration(i)*time.Hour).UTC().Format(time.RFC3339)+" 1")
	}
	until(t, 15*time.Second, "three backfilled runs", func() bool { return len(readLines(ticks)) >= 3 })
	code, out := runBaton(t, etcd.Env(), append([]string{"backfill", "--scheduler", "bfcli"}, append(rng, "report")...)...)
	if code != exitOK || !strings.Contains(out, "was asked before") {
		t.Errorf("the same backfill asked again: exit %d:\n%s", code, out)
	}
	got := readLines(ticks)
	for i := range got {
		if ts, flag, ok := strings.Cut(got[i], " "); ok {
			if tt, err := time.Parse(time.RFC3339Nano, ts); err == nil {
				got[i] = tt.UTC().Format(time.RFC3339) + " " + flag
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the crontab ran %q, want %q", got, want)
	}
	code, out = runBaton(t, etcd.Env(), "backfill", "--from", from.Add(-10*time.Hour).Format(time.RFC3339), "--to", from.Format(time.RFC3339),
		"--max", "2", "bfcli/report")
	if code != exitFailure || !strings.Contains(out, "10 ticks, more than the cap of 2") {
		t.Errorf("a backfill of 10 ticks with --max 2: exit %d:\n%s", code, out)
	}
	code, out = runBaton(t, etcd.Env(), append([]string{"backfill", "--scheduler", "bfcli"}, append(rng, "nope")...)...)
	if code != exitFailure || !strings.Contains(out, `no job "nope"`) || !strings.Contains(out, "report") {
		t.Errorf("a backfill of an unknown job: exit %d:\n%s", code, out)
	}
}

// TestBackfillUsageErrorsNameTheBadInput: each bad argument is a usage
// error (2) that names it, before etcd is asked.
func TestBackfillUsageErrorsNameTheBadInput(t *testing.T) {
	t.Parallel()
	env := []string{"BATON_ETCD_ENDPOINTS=http://127.0.0.1:1"}
	future := time.Now().Add(time.Hour).Format(time.RFC3339)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "no --from given"},
		{[]string{"--from", "yesterday", "report"}, `--from "yesterday": not an RFC 3339 time`},
		{[]string{"--from", "-1x", "report"}, `--from "-1x": not a duration`},
		{[]string{"--from", "-1h", "--to", future, "report"}, "is later than now"},
		{[]string{"--from", "-1h", "--to", "-2h", "report"}, "is not before --to"},
		{[]string{"--from", "-1h", "--max", "-1", "report"}, "--max -1: not within"},
		{[]string{"--from", "-1h", "--max", fmt.Sprint(1 << 30), "report"}, "not within 0..100000"},
		{[]string{"--from", "-1h"}, "no JOB given"},
		{[]string{"--from", "-1h", "a", "b", "c"}, "one JOB, not 3"},
		{[]string{"--from", "-1h", "--scheduler", "x", "y", "report"}, `SCHEDULER "y", --scheduler "x"`},
		{[]string{"--from", "-1h", "s", "t/report"}, `JOB "t/report" after SCHEDULER "s"`},
		{[]string{"--from", "-1h", "bad name", "report"}, "scheduler"},
	} {
		code, out := runBaton(t, env, append([]string{"backfill"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("baton backfill %q: exit %d, want 2 saying %q:\n%s", tc.args, code, tc.want, out)
		}
	}
}
