package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
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
	// The hourly tick that may come due during the test is no backfill's.
	os.WriteFile(file, []byte("CRON_TZ=UTC\n"+`report: 0 * * * * [ -n "$BATON_BACKFILL" ] || exit 0; echo "$BATON_TICK $BATON_BACKFILL" >> `+ticks+"\n"), 0o644)
	startBaton(t, append(etcd.Env(), "BATON_ID=web-1"), "crontab", "--name", "bfcli", file)
	to := time.Now().UTC().Truncate(time.Hour)
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

// TestBackfillGoesOnAfterItsLeaderIsKilledOrPaused: the leader running a
// backfill is killed (SIGKILL) or paused (SIGSTOP) while a backfilled
// command runs; the next leader goes on from the tick after it, every tick
// runs once, and a paused leader that wakes up runs none.
func TestBackfillGoesOnAfterItsLeaderIsKilledOrPaused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	for name, sig := range map[string]syscall.Signal{"SIGKILL": syscall.SIGKILL, "SIGSTOP": syscall.SIGSTOP} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			etcd := etcdtest.Shared(t)
			cli := etcd.Client(t)
			dir := t.TempDir()
			ledger := filepath.Join(dir, "ledger")
			file := filepath.Join(dir, "crontab")
			// r1's second backfilled run holds until r1 is stopped; the
			// hourly tick that may come due during the test is no backfill's.
			os.WriteFile(file, []byte("CRON_TZ=UTC\n"+`report: 0 * * * * [ "$BATON_BACKFILL" = 1 ] || exit 0; echo "$BATON_TICK $BATON_ID" >> `+ledger+
				`; if [ "$BATON_ID" = r1 ] && [ "$(wc -l < `+ledger+`)" -ge 2 ]; then sleep 60; fi`+"\n"), 0o644)
			r1 := startBaton(t, append(etcd.Env(), "BATON_ID=r1"), "crontab", "--name", "bfkill", "--ttl", "2", file)
			to := time.Now().UTC().Truncate(time.Hour)
			from := to.Add(-5 * time.Hour)
			args := []string{"backfill", "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "bfkill", "report"}
			until(t, 15*time.Second, "r1 to lead and register the job", func() bool {
				st, err := cronxStatus(cli, "bfkill")
				return err == nil && st == "r1"
			})
			startBaton(t, append(etcd.Env(), "BATON_ID=r2"), "crontab", "--name", "bfkill", "--ttl", "2", file)
			until(t, 15*time.Second, "r2 to campaign", func() bool {
				resp, err := cli.Get(context.Background(), "/baton/election/bfkill/", clientv3.WithPrefix(), clientv3.WithCountOnly())
				return err == nil && resp.Count == 2
			})
			if code, out := runBaton(t, etcd.Env(), args...); code != exitOK || !strings.Contains(out, "5 ticks queued") {
				t.Fatalf("baton backfill: exit %d:\n%s", code, out)
			}
			until(t, 15*time.Second, "r1's second backfilled run", func() bool { return len(readLines(ledger)) >= 2 })
			r1.cmd.Process.Signal(sig)
			if sig == syscall.SIGKILL {
				r1.wait(5 * time.Second)
			} else {
				defer r1.cmd.Process.Signal(syscall.SIGCONT)
			}
			until(t, 30*time.Second, "the rest of the backfill on r2", func() bool { return len(readLines(ledger)) >= 5 })
			if sig == syscall.SIGSTOP {
				r1.cmd.Process.Signal(syscall.SIGCONT)
				r1.waitOutput(`msg="cronx: no longer leading" scheduler=bfkill instance=r1`, 15*time.Second)
			}
			code, out := runBaton(t, etcd.Env(), args...)
			if code != exitOK || !strings.Contains(out, "has finished: 5 of 5 ticks run") {
				t.Errorf("the backfill asked again: exit %d:\n%s", code, out)
			}
			var got []string
			for _, l := range readLines(ledger) {
				ts, id, _ := strings.Cut(l, " ")
				tt, err := time.Parse(time.RFC3339Nano, ts)
				if err != nil {
					t.Fatalf("BATON_TICK %q: %v", ts, err)
				}
				got = append(got, tt.UTC().Format(time.RFC3339)+" "+id)
			}
			var want []string
			for i := range 5 {
				id := "r2"
				if i < 2 {
					id = "r1"
				}
				want = append(want, from.Add(time.Duration(i)*time.Hour).UTC().Format(time.RFC3339)+" "+id)
			}
			if !slices.Equal(got, want) {
				t.Errorf("ran %q, want each tick once, in order: %q", got, want)
			}
		})
	}
}

// cronxStatus is the leader of scheduler name once it registers a job.
func cronxStatus(cli *clientv3.Client, name string) (string, error) {
	ctl, err := cronx.NewControl(cli, "", name)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := ctl.Status(ctx)
	if err != nil || len(st.Jobs) == 0 {
		return "", err
	}
	return st.Leader.Identity, nil
}
