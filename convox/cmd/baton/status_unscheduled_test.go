package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestStatusListsTheJobsOfAStoppedCrontab: once every replica of a
// crontab has stopped on SIGTERM, baton status still lists its jobs, each
// with its spec and marked as not scheduled by anyone since then, and a
// job an earlier version of the crontab had is not among them.
func TestStatusListsTheJobsOfAStoppedCrontab(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	etcd := etcdtest.Shared(t)
	cli := etcd.Client(t)
	dir := t.TempDir()
	replica := func(id, file string) *process {
		return startBaton(t, append(etcd.Env(), "BATON_ID="+id), "crontab", "--ttl", strconv.Itoa(policyTTL), file)
	}
	stop := func(p *process) {
		t.Helper()
		p.cmd.Process.Signal(syscall.SIGTERM)
		if code := p.wait(30 * time.Second); code != exitOK {
			t.Fatalf("exit %d after SIGTERM:\n%s", code, p.out.String())
		}
	}
	v1, v2 := filepath.Join(dir, "v1"), filepath.Join(dir, "v2")
	os.WriteFile(v1, []byte("report: 0 3 * * * true\ndropped: 0 4 * * * true\n"), 0o644)
	os.WriteFile(v2, []byte("report: 0 3 * * * true\nsweep: 0 5 * * * true\n"), 0o644)
	old := replica("v1-a", v1)
	until(t, 20*time.Second, "v1's jobs published", func() bool { return listed(t, cli, "dropped") })
	stop(old)
	a, b := replica("v2-a", v2), replica("v2-b", v2)
	until(t, 20*time.Second, "v2's jobs published, v1's dropped one gone", func() bool {
		return listed(t, cli, "sweep") && !listed(t, cli, "dropped")
	})
	// Each replica is up before it is stopped: a SIGTERM that comes
	// before baton has started kills it as it kills any process.
	a.waitOutput("baton crontab: started", 20*time.Second)
	b.waitOutput("baton crontab: started", 20*time.Second)
	stop(a)
	stop(b)
	code, out := runBaton(t, etcd.Env(), "status")
	if code != exitOK {
		t.Fatalf("status: exit %d:\n%s", code, out)
	}
	for _, job := range []string{"report", "sweep"} {
		if l := line(t, out, "crontab", job); !strings.Contains(l, "not scheduled by anyone since 20") {
			t.Errorf("%s: %q, want it marked not scheduled", job, l)
		}
	}
	if strings.Contains(out, "dropped") {
		t.Errorf("status lists the job v2 dropped:\n%s", out)
	}
}

// listed reports whether Status lists the crontab's job.
func listed(t *testing.T, cli *clientv3.Client, job string) bool {
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
		if j.Name == job && j.NotScheduledSince.IsZero() {
			return true
		}
	}
	return false
}
