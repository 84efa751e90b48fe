package etcdtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestSpacesAreApart: two tests' spaces name the same key and each sees its
// own value; a process given a space's Env finds its keys where a client of
// the space names them.
func TestSpacesAreApart(t *testing.T) {
	t.Parallel()
	a, b := Shared(t), Shared(t)
	if a.Prefix() == b.Prefix() || strings.HasPrefix(b.Prefix(), a.Prefix()) || strings.HasPrefix(a.Prefix(), b.Prefix()) {
		t.Fatalf("prefixes %q and %q overlap", a.Prefix(), b.Prefix())
	}
	ca, cb := a.Client(t), b.Client(t)
	ctx := ctxFor(t, 10*time.Second)
	if _, err := ca.Put(ctx, "/baton/k", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Put(ctx, "/baton/k", "b"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cli  *clientv3.Client
		want string
	}{{ca, "a"}, {cb, "b"}} {
		resp, err := c.cli.Get(ctx, "", clientv3.WithPrefix())
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != c.want {
			t.Errorf("a space's whole key space: %v, %v; want its one key, %q", resp, err, c.want)
		}
	}
	env := strings.Join(a.Env(), " ")
	if !strings.Contains(env, "BATON_PREFIX="+a.Prefix()+"/baton") {
		t.Errorf("Env %q does not put baton's keys in the space", env)
	}
}

// TestSharedMemberRefusesAClientOutsideASpace: a client made from the
// shared member's address alone, as through a proxy a test forgot to give
// the space, fails at its first request; and a space cannot compact.
func TestSharedMemberRefusesAClientOutsideASpace(t *testing.T) {
	t.Parallel()
	s := Shared(t)
	p := NewProxy(t, s.Addr())
	raw := NewClient(t, p.Endpoint())
	ctx := ctxFor(t, 10*time.Second)
	if _, err := raw.Put(ctx, "/baton/k", "v"); !errors.Is(err, rpctypes.ErrUserEmpty) && !errors.Is(err, rpctypes.ErrPermissionDenied) {
		t.Errorf("a put without the space's credentials: %v, want it refused", err)
	}
	cli := s.NewClient(t, p.Endpoint())
	if _, err := cli.Put(ctx, "/baton/k", "v"); err != nil {
		t.Fatalf("a put in the space through the proxy: %v", err)
	}
	resp, err := cli.Get(ctx, "/baton/k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err == nil {
		t.Error("a space's client compacted the shared member")
	}
}

// TestPausedMemberAnswersNothingUntilResumed: a paused member keeps its
// connections and answers nothing; resumed, it answers.
func TestPausedMemberAnswersNothingUntilResumed(t *testing.T) {
	t.Parallel()
	m := Start(t)
	cli := m.Client(t)
	if _, err := cli.Put(ctxFor(t, 5*time.Second), "k", "v"); err != nil {
		t.Fatal(err)
	}
	m.Pause(t)
	if _, err := cli.Get(ctxFor(t, 500*time.Millisecond), "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a get from a paused member: %v, want it to wait out its deadline", err)
	}
	m.Resume(t)
	if _, err := cli.Get(ctxFor(t, 5*time.Second), "k"); err != nil {
		t.Errorf("a get once resumed: %v", err)
	}
}

// TestKilledMemberRestartsWithItsData: a member killed as kill -9 kills a
// process answers nothing, and restarted on its data has it.
func TestKilledMemberRestartsWithItsData(t *testing.T) {
	t.Parallel()
	m := Start(t)
	cli := m.Client(t)
	if _, err := cli.Put(ctxFor(t, 5*time.Second), "k", "v"); err != nil {
		t.Fatal(err)
	}
	m.Kill()
	if m.Running() {
		t.Fatal("a killed member runs")
	}
	if _, err := cli.Get(ctxFor(t, 300*time.Millisecond), "k"); err == nil {
		t.Fatal("a killed member answered")
	}
	m.Restart(t)
	resp, err := cli.Get(ctxFor(t, 10*time.Second), "k")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("after the restart: %v, %v; want the key", resp, err)
	}
}

// TestMemberEndsWithTheTestProcess: the member's program exits when the
// process that started it does, however it died: its standard input ends;
// a member told to remove its data takes the directory made for it too.
func TestMemberEndsWithTheTestProcess(t *testing.T) {
	t.Parallel()
	bin, err := serverBinary()
	if err != nil {
		t.Fatal(err)
	}
	ports, err := FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	client, peer := "http://127.0.0.1:"+strconv.Itoa(ports[0]), "http://127.0.0.1:"+strconv.Itoa(ports[1])
	base := filepath.Join(t.TempDir(), "etcdtest-shared-1")
	if err := os.Mkdir(base, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-name", "m0", "-data-dir", filepath.Join(base, "m0"), "-client-url", client, "-peer-url", peer,
		"-initial-cluster", "m0="+peer, "-initial-cluster-token", "end", "-remove-on-exit")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stdin.Close() // as the kernel closes it when the test process dies
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the member still runs 10s after its standard input ended")
	}
	if _, err := os.Stat(base); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s outlives the member: %v", base, err)
	}
}
