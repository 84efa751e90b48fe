package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestEtcdAuthenticatedCommandsAndStateOverAKill runs the README's commands
// as user shop against a `baton etcd` with auth, then kills the member with
// SIGKILL and starts it again on the same data dir: the pause, the recorded
// once-run and the held lock are all still there, and the commands go on.
func TestEtcdAuthenticatedCommandsAndStateOverAKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	a := newAuthEtcd(t, "shop-secret")
	member := a.start()
	env := a.batonEnv("shop-secret")
	dir := t.TempDir()
	ledger, once, release := filepath.Join(dir, "ledger"), filepath.Join(dir, "once"), filepath.Join(dir, "release")
	crontab := filepath.Join(dir, "crontab")
	if err := os.WriteFile(crontab, []byte("tick: * * * * * * echo $BATON_JOB >> "+ledger+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	baton := func(want int, args ...string) string {
		t.Helper()
		code, out := runBaton(t, env, args...)
		if code != want {
			t.Fatalf("baton %s exited %d, want %d:\n%s", strings.Join(args, " "), code, want, out)
		}
		return out
	}
	runs := func() int { return len(readLines(ledger)) }

	cron := startBaton(t, env, "crontab", "--seconds", "--ttl", "10", crontab)
	until(t, 20*time.Second, "a run of tick", func() bool { return runs() > 0 })
	line(t, baton(exitOK, "status"), "crontab", "tick")
	baton(exitOK, "run", "--leader", "nightly", "--", "true")
	baton(exitOK, "run", "--once", "report-2026-11-30", "--ttl", "1h", "--", "sh", "-c", "echo ran >> "+once)
	holder := startBaton(t, env, "run", "--lock", "migrate", "--ttl", "10", "--",
		"sh", "-c", "echo holding; while [ ! -e "+release+" ]; do sleep 0.05; done")
	holder.waitOutput("holding", 20*time.Second)
	shop := a.client("shop", "shop-secret")
	lockRev := func() int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := shop.Get(ctx, "/baton/shop/lock/migrate/", clientv3.WithPrefix())
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("the lock's key: %v, %v", resp, err)
		}
		return resp.Kvs[0].CreateRevision
	}
	heldAt := lockRev()
	baton(exitOK, "pause", "tick")
	if l := line(t, baton(exitOK, "status"), "crontab", "tick"); !strings.Contains(l, " yes ") {
		t.Fatalf("status of the paused job: %q", l)
	}

	if err := member.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-member.done
	a.start()

	if l := line(t, baton(exitOK, "status"), "crontab", "tick"); !strings.Contains(l, " yes ") {
		t.Errorf("after the restart the pause is gone: %q", l)
	}
	if out := baton(exitOK, "run", "--once", "report-2026-11-30", "--ttl", "1h", "--", "sh", "-c", "echo ran >> "+once); !strings.Contains(out, "not running") {
		t.Errorf("after the restart run --once ran again:\n%s", out)
	}
	if n := len(readLines(once)); n != 1 {
		t.Errorf("the once-key ran %d times", n)
	}
	if rev := lockRev(); rev != heldAt {
		t.Errorf("the lock's key was created at revision %d, now %d", heldAt, rev)
	}
	select {
	case <-holder.done:
		t.Fatalf("the lock's holder exited (%d) over the restart:\n%s", holder.status, holder.out.String())
	default:
	}

	before := runs()
	baton(exitOK, "trigger", "tick")
	until(t, 20*time.Second, "the triggered run", func() bool { return runs() > before })
	baton(exitOK, "resume", "tick")
	if l := line(t, baton(exitOK, "status"), "crontab", "tick"); strings.Contains(l, " yes ") {
		t.Errorf("status after resume: %q", l)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := holder.wait(20 * time.Second); code != exitOK {
		t.Errorf("the lock's holder exited %d", code)
	}
	cron.cmd.Process.Signal(os.Interrupt)
	cron.wait(20 * time.Second)
}

// TestEtcdBackEmptyIsSaid: a `baton etcd` that comes back from a kill with
// an empty data dir, as on an emptyDir, keeps its name, URLs and so its
// cluster ID; the replicas still notice, log an error naming what is lost,
// and `baton status` shows it.
func TestEtcdBackEmptyIsSaid(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	a := newAuthEtcd(t, "shop-secret")
	member := a.start()
	env := a.batonEnv("shop-secret")
	dir := t.TempDir()
	ledger, crontab := filepath.Join(dir, "ledger"), filepath.Join(dir, "crontab")
	if err := os.WriteFile(crontab, []byte("tick: * * * * * * echo $BATON_JOB >> "+ledger+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cron := startBaton(t, env, "crontab", "--seconds", "--ttl", "10", crontab)
	until(t, 20*time.Second, "a run of tick", func() bool { return len(readLines(ledger)) > 0 })
	if code, out := runBaton(t, env, "status"); code != exitOK || strings.Contains(out, "came back empty") {
		t.Fatalf("status before the loss: exit %d:\n%s", code, out)
	}

	member.cmd.Process.Kill()
	<-member.done
	if err := os.RemoveAll(a.m.dir); err != nil {
		t.Fatal(err)
	}
	a.start()
	cron.waitOutput("etcd came back empty", 40*time.Second)
	if out := cron.out.String(); !strings.Contains(out, "level=ERROR") || !strings.Contains(out, "pauses, run --once claims") {
		t.Errorf("the crontab's report is no error naming what is lost:\n%s", out)
	}
	code, out := runBaton(t, env, "status")
	if code != exitOK || !strings.Contains(out, "etcd came back empty: found at") || !strings.Contains(out, "held locks") {
		t.Errorf("status after the loss: exit %d:\n%s", code, out)
	}
	cron.cmd.Process.Signal(os.Interrupt)
	cron.wait(20 * time.Second)
}
