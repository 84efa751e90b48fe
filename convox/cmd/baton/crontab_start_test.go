package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestParseCrontabAtStart: @start is a schedule of its own, zone or not,
// and at-start=yes an option beside a schedule; both run at start.
func TestParseCrontabAtStart(t *testing.T) {
	t.Parallel()
	entries, err := parseCrontab(strings.NewReader("CRON_TZ=Europe/Berlin\nmigrate: @start ./bin/migrate\n"+
		"warm: [at-start=yes] 0 * * * * ./bin/warm\nplain: [at-start=no] 0 * * * * ./bin/plain\n@start ./bin/seed\n"), "crontab", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 || entries[0].spec != "@start" || entries[0].command != "./bin/migrate" || !entries[0].runsAtStart() ||
		!entries[1].runsAtStart() || entries[1].spec != "CRON_TZ=Europe/Berlin 0 * * * *" || entries[2].runsAtStart() ||
		entries[3].spec != "@start" || !strings.HasPrefix(entries[3].name, "seed-") {
		t.Fatalf("entries %+v", entries)
	}
	for _, tc := range []struct{ line, want string }{
		{"a: [at-start=maybe] * * * * * x", "option at-start=maybe: want yes or no"},
		{"a: @start", "want a schedule of 1 fields and a command"},
	} {
		if _, err := parseCrontab(strings.NewReader(tc.line+"\n"), "crontab", false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.line, err, tc.want)
		}
	}
}

// startedOf reads the releases whose start ran a crontab job.
func startedOf(t *testing.T, cli *clientv3.Client, job string) []string {
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
			return j.Started
		}
	}
	return nil
}

// TestCrontabRunsAtStartOncePerRelease: two replicas of release r1 run an
// @start entry and an at-start=yes one once; a replica of r2 runs each
// once more, with its release; a crontab that runs at start with no
// release is refused before anything starts.
func TestCrontabRunsAtStartOncePerRelease(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := etcdtest.Shared(t)
	cli := etcd.Client(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	file := filepath.Join(dir, "crontab")
	os.WriteFile(file, []byte("migrate: @start echo \"migrate $RELEASE $BATON_ID\" >> "+log+"\n"+
		"warm: [at-start=yes] 0 0 1 1 * echo \"warm $RELEASE $BATON_ID\" >> "+log+"\n"), 0o644)
	replica := func(id, release string) {
		startBaton(t, append(etcd.Env(), "BATON_ID="+id, "RELEASE="+release),
			"crontab", "--mode", "claim", "--ttl", strconv.Itoa(policyTTL), file)
	}
	ran := func(release string, n int) {
		t.Helper()
		until(t, 20*time.Second, "the runs at the start of "+release, func() bool {
			return len(jobHistory(t, cli, "migrate")) == n && len(jobHistory(t, cli, "warm")) == n &&
				slices.Contains(startedOf(t, cli, "migrate"), release) && slices.Contains(startedOf(t, cli, "warm"), release)
		})
	}
	replica("a", "r1")
	replica("b", "r1")
	ran("r1", 1)
	replica("c", "r2")
	ran("r2", 2)
	lines := readLines(log)
	slices.Sort(lines)
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "migrate r1 ") || lines[1] != "migrate r2 c" ||
		!strings.HasPrefix(lines[2], "warm r1 ") || lines[3] != "warm r2 c" {
		t.Errorf("runs %q, want each job once for r1 and once for r2 (on c)", lines)
	}
	if got := startedOf(t, cli, "migrate"); !slices.Equal(got, []string{"r1", "r2"}) {
		t.Errorf("migrate started %v, want [r1 r2]", got)
	}

	code, out := runBaton(t, append(etcd.Env(), "BATON_ID=d", "RELEASE="), "crontab", file)
	if code != exitUsage || !strings.Contains(out, "crontab:1: job migrate runs at start") || !strings.Contains(out, "--release") {
		t.Errorf("no release: exit %d, output:\n%s", code, out)
	}
}
