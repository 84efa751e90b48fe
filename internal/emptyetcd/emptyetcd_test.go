package emptyetcd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// reachable waits until cli reads from etcd again.
func reachable(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "x")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd unreachable: %v", err)
		}
	}
}

// TestEmptyEtcdFoundOnlyWhenTheDataIsGone: a restart that keeps the data
// is no loss; a deleted marker and a wiped member are, each said with its
// cause.
func TestEmptyEtcdFoundOnlyWhenTheDataIsGone(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	ctx := context.Background()
	var m etcdMemory
	check := func(what string, wantEmpty bool, why string) {
		t.Helper()
		reachable(t, cli)
		got, err := m.check(ctx, cli, "/p", "w1")
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if (got != "") != wantEmpty || !strings.Contains(got, why) {
			t.Fatalf("%s: check says %q, want empty %v (%q)", what, got, wantEmpty, why)
		}
	}
	check("first look", false, "")
	if _, err := cli.Put(ctx, "/p/jobs/x", "1"); err != nil {
		t.Fatal(err)
	}
	check("after a write", false, "")
	srv.Stop()
	srv.Restart(t)
	check("after a restart on the same data", false, "")

	if _, err := cli.Delete(ctx, bornKey("/p")); err != nil {
		t.Fatal(err)
	}
	check("marker deleted", true, "marker /p/etcd/born is gone")
	m = etcdMemory{}
	check("a new look", false, "")

	srv.Wipe(t)
	check("after a wipe", true, "cluster ID changed")
}

// TestWatchEmptyRecordsAndReports: a watcher asked to look again after a
// wipe reports it to its callback and records it, which Last then reads.
func TestWatchEmptyRecordsAndReports(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	defer cli.Close()
	ctx, cancel := context.WithCancel(context.Background())
	found := make(chan Event, 4)
	recheck := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Watch(ctx, cli, "/p", "web-1", recheck, func(e Event) { found <- e })
	}()
	defer func() { cancel(); <-done }()

	if _, ok, err := Last(ctx, cli, "/p"); ok || err != nil {
		t.Fatalf("Last before any loss: %v, %v", ok, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := cli.Get(ctx, bornKey("/p"))
		if err == nil && len(r.Kvs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watcher made no marker")
		}
		time.Sleep(10 * time.Millisecond)
	}
	srv.Wipe(t)
	select {
	case e := <-found:
		t.Fatalf("reported %+v before it was asked to look", e)
	case recheck <- struct{}{}:
	case <-time.After(20 * time.Second):
		t.Fatal("the watcher took no recheck within 20s")
	}
	// The look after the recheck waits for the client to reach the
	// restarted member: each try is bounded by checkTimeout and the tries
	// back off from retryMin, so on a loaded machine the fourth try starts
	// some 20 s after the first.
	var e Event
	select {
	case e = <-found:
	case <-time.After(time.Minute):
		t.Fatal("the wipe was not reported within a minute of the recheck")
	}
	if e.By != "web-1" || e.Why == "" || time.Since(e.At) > time.Minute {
		t.Errorf("reported %+v", e)
	}
	got, ok, err := Last(ctx, cli, "/p")
	if !ok || err != nil || got.By != "web-1" || got.Why != e.Why {
		t.Errorf("Last: %+v, %v, %v; want %+v", got, ok, err, e)
	}
}
