package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// localURLs returns n http://127.0.0.1 URLs on distinct free ports, for
// baton processes to bind (etcdtest.FreePorts).
func localURLs(t *testing.T, n int) []string {
	t.Helper()
	ports, err := etcdtest.FreePorts(n)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, p := range ports {
		urls = append(urls, fmt.Sprintf("http://127.0.0.1:%d", p))
	}
	return urls
}

// etcdMember is the command line of one `baton etcd` member on 127.0.0.1.
type etcdMember struct {
	name, client, peer, dir string
}

func (m etcdMember) args(cluster string) []string {
	args := []string{"etcd", "--name", m.name, "--data-dir", m.dir,
		"--listen-client-urls", m.client, "--listen-peer-urls", m.peer,
		"--initial-cluster-token", "test-" + filepath.Base(filepath.Dir(m.dir))}
	if cluster != "" {
		args = append(args, "--initial-cluster", cluster)
	}
	return args
}

func etcdMembers(t *testing.T, n int) []etcdMember {
	t.Helper()
	urls := localURLs(t, 2*n)
	dir := t.TempDir()
	var ms []etcdMember
	for i := range n {
		name := fmt.Sprintf("etcd-%d", i)
		ms = append(ms, etcdMember{name: name, client: urls[2*i], peer: urls[2*i+1], dir: filepath.Join(dir, name)})
	}
	return ms
}

// separateEtcd runs a one-member etcd as a baton etcd process of its own,
// and returns its client URL. Tests that hold ticks to the clock use it: an
// in-process etcd pauses with the test process (GC under -race, a loaded
// machine), and a claim held up by such a pause can be overtaken by the next
// tick's, a documented miss (etcd was slow) that such a test would take for
// a defect of what it checks.
func separateEtcd(t *testing.T) string {
	t.Helper()
	m := etcdMembers(t, 1)[0]
	p := startBaton(t, nil, m.args("")...)
	p.waitOutput("baton etcd: member etcd-0 ready, clients at "+m.client, time.Minute)
	return m.client
}

func newTestClient(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(etcdtest.ClientConfig(endpoints...))
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

// TestEtcdServesHealthAndStopsOnSIGTERM: one member serves /health and
// clients, and a SIGTERM stops it at once with status 0.
func TestEtcdServesHealthAndStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	m := etcdMembers(t, 1)[0]
	p := startBaton(t, nil, m.args("")...)
	p.waitOutput("baton etcd: member etcd-0 ready, clients at "+m.client, 30*time.Second)

	resp, err := http.Get(m.client + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var health struct{ Health string }
	if err := json.Unmarshal(body, &health); err != nil || resp.StatusCode != http.StatusOK || health.Health != "true" {
		t.Fatalf("GET /health: %d %s (%v), want 200 {\"health\":\"true\",...}", resp.StatusCode, body, err)
	}

	cli := newTestClient(t, m.client)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/baton/test", "hello"); err != nil {
		t.Fatal(err)
	}
	got, err := cli.Get(ctx, "/baton/test")
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "hello" {
		t.Fatalf("get after put: %v, %v", got, err)
	}
	cli.Close()

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(30 * time.Second); code != exitOK {
		t.Fatalf("after SIGTERM baton etcd exited %d, want 0; output:\n%s", code, p.out.String())
	}
	// At once: the member closed by itself, not cut short by the grace a
	// raft leader gets to hand its leadership over (it says which). Only
	// the stop is judged: a fresh member's version monitor can log an
	// error while it starts, before its first commit reaches its backend
	// ("missing term information"), and tries again by itself.
	out := p.out.String()
	_, stop, _ := strings.Cut(out, "baton etcd: member etcd-0 stopping")
	if !strings.Contains(stop, "baton etcd: member etcd-0 stopped\n") || strings.Contains(stop, `"level":"error"`) {
		t.Errorf("a clean stop should say so and log no error; output:\n%s", out)
	}
}

// TestEtcdThreeMembersFormOneByOneAndSurviveAKill: three members of a static
// cluster started one at a time form one cluster, the first waiting for the
// others, and the cluster still commits writes after one is killed.
func TestEtcdThreeMembersFormOneByOneAndSurviveAKill(t *testing.T) {
	t.Parallel()
	ms := etcdMembers(t, 3)
	var initial []string
	for _, m := range ms {
		initial = append(initial, m.name+"="+m.peer)
	}
	cluster := strings.Join(initial, ",")

	// Alone, the first member cannot form the cluster: it waits, serving
	// nobody, rather than exit.
	first := startBaton(t, nil, ms[0].args(cluster)...)
	first.waitOutput("member etcd-0 starting", 30*time.Second)
	cli0 := newTestClient(t, ms[0].client)
	defer cli0.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, err := cli0.Get(ctx, "/baton/test")
	cancel()
	if err == nil {
		t.Fatal("a lone member of a three-member cluster served a read")
	}
	select {
	case <-first.done:
		t.Fatalf("the first member exited (%d) while waiting for its peers; output:\n%s", first.status, first.out.String())
	default:
	}
	cli0.Close()

	procs := []*process{first}
	for _, m := range ms[1:] {
		procs = append(procs, startBaton(t, nil, m.args(cluster)...))
	}
	for i, p := range procs {
		p.waitOutput(fmt.Sprintf("member %s ready, clients at %s", ms[i].name, ms[i].client), 30*time.Second)
	}

	var endpoints []string
	for _, m := range ms {
		endpoints = append(endpoints, m.client)
	}
	cli := newTestClient(t, endpoints...)
	defer cli.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	members, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range members.Members {
		names = append(names, m.Name)
	}
	if len(names) != 3 {
		t.Fatalf("member list %v, want etcd-0, etcd-1 and etcd-2", names)
	}

	// Kill one; two of three are a quorum.
	if err := procs[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-procs[0].done
	survivors := newTestClient(t, ms[1].client, ms[2].client)
	defer survivors.Close()
	var putErr error
	until(t, 20*time.Second, "a put after a member was killed", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		_, putErr = survivors.Put(pctx, "/baton/after-kill", "still here")
		return putErr == nil
	})
	got, err := survivors.Get(ctx, "/baton/after-kill")
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("get after the kill: %v, %v", got, err)
	}
	survivors.Close()
	cli.Close()

	for _, p := range procs[1:] {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range procs[1:] {
		if code := p.wait(10 * time.Second); code != exitOK {
			t.Errorf("after SIGTERM a member exited %d, want 0", code)
		}
	}
}

// TestEtcdBadFlagsAreUsageErrors: each bad flag is exit status 2 with an
// error naming the flag, before anything starts.
func TestEtcdBadFlagsAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--listen-client-urls", "127.0.0.1:2379"}, []string{"--listen-client-urls", "127.0.0.1:2379"}},
		{[]string{"--listen-peer-urls", "ftp://127.0.0.1:2380"}, []string{"--listen-peer-urls", "scheme"}},
		{[]string{"--listen-client-urls", "http://127.0.0.1"}, []string{"--listen-client-urls", "host:port"}},
		{[]string{"--advertise-client-urls", "http://0.0.0.0:2379"}, []string{"--advertise-client-urls", "0.0.0.0"}},
		{[]string{"--initial-advertise-peer-urls", "http://etcd:2380/path"}, []string{"--initial-advertise-peer-urls", "path"}},
		{[]string{"--initial-cluster", "etcd=http://etcd-0:2380,etcd-1"}, []string{"--initial-cluster", `"etcd-1"`, "NAME=PEER-URL"}},
		{[]string{"--initial-cluster", "etcd=etcd-0:2380"}, []string{"--initial-cluster", "etcd-0:2380"}},
		{[]string{"--name", "etcd-3", "--initial-cluster", "etcd-0=http://etcd-0:2380,etcd-1=http://etcd-1:2380"},
			[]string{"--initial-cluster", `"etcd-3"`, "etcd-0, etcd-1"}},
		{[]string{"--name", ""}, []string{"--name"}},
		{[]string{"--initial-cluster-state", "joining"}, []string{"--initial-cluster-state", "joining"}},
		{[]string{"--log-level", "loud"}, []string{"--log-level", "loud"}},
		{[]string{"--auto-compaction-retention", "weekly"}, []string{"--auto-compaction-retention", "weekly"}},
		{[]string{"--no-such-flag"}, []string{"--no-such-flag"}},
		{[]string{"extra"}, []string{`"extra"`}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			code, out := runBaton(t, nil, append([]string{"etcd", "--data-dir", filepath.Join(dir, "data")}, tc.args...)...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; output:\n%s", code, exitUsage, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not name %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "ready") {
				t.Errorf("a member started despite a bad flag:\n%s", out)
			}
		})
	}
}

func TestEtcdHelp(t *testing.T) {
	t.Parallel()
	code, out := runBaton(t, nil, "etcd", "--help")
	if code != exitOK {
		t.Fatalf("baton etcd --help exited %d; output:\n%s", code, out)
	}
	for _, w := range []string{"--listen-client-urls", "--initial-cluster", "--data-dir", "/health", "emptyDir", "Exit status",
		"BATON_ETCD_USERNAME", "--user", "--enable-grpc-gateway", "--cert-file", "unauthenticated"} {
		if !strings.Contains(out, w) {
			t.Errorf("baton etcd --help does not mention %s:\n%s", w, out)
		}
	}
}

// TestEtcdMemberRejoinsAfterLosingItsData restarts a member of three with
// an empty data dir, as an emptyDir volume does: it joins the running
// cluster as a new member and serves its data.
func TestEtcdMemberRejoinsAfterLosingItsData(t *testing.T) {
	t.Parallel()
	ms := etcdMembers(t, 3)
	var initial, endpoints []string
	for _, m := range ms {
		initial = append(initial, m.name+"="+m.peer)
		endpoints = append(endpoints, m.client)
	}
	cluster := strings.Join(initial, ",")
	var procs []*process
	for _, m := range ms {
		procs = append(procs, startBaton(t, nil, m.args(cluster)...))
	}
	for i, p := range procs {
		p.waitOutput(fmt.Sprintf("member %s ready", ms[i].name), 30*time.Second)
	}
	cli := newTestClient(t, endpoints...)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/baton/before", "kept"); err != nil {
		t.Fatal(err)
	}

	// etcd-2 dies and comes back with nothing.
	procs[2].cmd.Process.Kill()
	<-procs[2].done
	if err := os.RemoveAll(ms[2].dir); err != nil {
		t.Fatal(err)
	}
	again := startBaton(t, nil, ms[2].args(cluster)...)
	again.waitOutput("rejoining the running cluster", 30*time.Second)
	again.waitOutput("member etcd-2 ready", 30*time.Second)

	own := newTestClient(t, ms[2].client)
	defer own.Close()
	got, err := own.Get(ctx, "/baton/before")
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "kept" {
		t.Fatalf("the rejoined member reads %v, %v; want the cluster's data", got, err)
	}
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Members {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "etcd-0,etcd-1,etcd-2" {
		t.Fatalf("members %v after the rejoin", names)
	}
	// And with one of the old members gone too, the rejoined one is part of
	// the quorum.
	procs[0].cmd.Process.Kill()
	<-procs[0].done
	until(t, 20*time.Second, "a put with etcd-0 down", func() bool {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		defer pcancel()
		_, err := own.Put(pctx, "/baton/after", "x")
		return err == nil
	})
	own.Close()
	cli.Close()
}
