package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// authEtcd is one `baton etcd` member with auth: user shop on /baton/shop,
// and, with --user, user blog on /baton/blog.
type authEtcd struct {
	t   *testing.T
	m   etcdMember
	env []string
}

func newAuthEtcd(t *testing.T, password string) *authEtcd {
	return &authEtcd{t: t, m: etcdMembers(t, 1)[0], env: []string{
		"BATON_ETCD_USERNAME=shop", "BATON_ETCD_PASSWORD=" + password, "BATON_PREFIX=/baton/shop",
		"BATON_ETCD_PASSWORD_BLOG=blog-secret"}}
}

// start starts the member on its data dir and waits until it serves.
func (a *authEtcd) start() *process {
	a.t.Helper()
	p := startBaton(a.t, a.env, append(a.m.args(""), "--user", "blog:/baton/blog", "--bcrypt-cost", "4")...)
	p.waitOutput("member etcd-0 ready", 30*time.Second)
	return p
}

// client connects as user with password; an empty user is no auth.
func (a *authEtcd) client(user, password string) *clientv3.Client {
	a.t.Helper()
	cfg := etcdtest.ClientConfig(a.m.client)
	cfg.Username, cfg.Password = user, password
	cli, err := clientv3.New(cfg)
	if err != nil {
		if user != "" {
			a.t.Fatalf("connect as %s: %v", user, err)
		}
		return nil
	}
	a.t.Cleanup(func() { cli.Close() })
	return cli
}

// batonEnv reaches the member as user shop.
func (a *authEtcd) batonEnv(password string) []string {
	return []string{"BATON_ETCD_ENDPOINTS=" + a.m.client, "BATON_ETCD_USERNAME=shop",
		"BATON_ETCD_PASSWORD=" + password, "BATON_PREFIX=/baton/shop"}
}

func put(cli *clientv3.Client, key string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := cli.Put(ctx, key, "x")
	return err
}

func refused(err error) bool {
	return errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrUserEmpty) ||
		errors.Is(err, rpctypes.ErrAuthFailed)
}

// TestEtcdAuthLimitsEachUserToItsPrefix: with BATON_ETCD_USERNAME and
// BATON_ETCD_PASSWORD, and a --user, no client without credentials may
// write, each user writes under its own prefix only, and the JSON gateway
// takes no plain HTTP put.
func TestEtcdAuthLimitsEachUserToItsPrefix(t *testing.T) {
	t.Parallel()
	a := newAuthEtcd(t, "shop-secret")
	p := a.start()
	if out := p.out.String(); strings.Contains(out, "shop-secret") || strings.Contains(out, "blog-secret") || strings.Contains(out, "WITHOUT AUTHENTICATION") {
		t.Errorf("output prints a password or warns of no auth:\n%s", out)
	}

	anon := a.client("", "")
	if err := put(anon, "/baton/shop/jobs/x"); !refused(err) {
		t.Errorf("a put without credentials: %v, want it refused", err)
	}
	shop := a.client("shop", "shop-secret")
	if err := put(shop, "/baton/shop/jobs/x"); err != nil {
		t.Errorf("shop's put under its prefix: %v", err)
	}
	for _, key := range []string{"/baton/blog/jobs/x", "/baton/shopping/x", "/baton", rootSecretKey} {
		if err := put(shop, key); !refused(err) {
			t.Errorf("shop's put of %s: %v, want it refused", key, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := shop.Get(ctx, rootSecretKey); !refused(err) {
		t.Errorf("shop reads root's secret: %v, want it refused", err)
	}
	blog := a.client("blog", "blog-secret")
	if err := put(blog, "/baton/blog/jobs/x"); err != nil {
		t.Errorf("blog's put under its prefix: %v", err)
	}
	if err := put(blog, "/baton/shop/jobs/y"); !refused(err) {
		t.Errorf("blog's put under shop's prefix: %v, want it refused", err)
	}
	if _, err := clientv3.New(func() clientv3.Config {
		c := etcdtest.ClientConfig(a.m.client)
		c.Username, c.Password = "shop", "wrong"
		return c
	}()); !refused(err) {
		t.Errorf("a wrong password: %v, want it refused", err)
	}

	// curl -X POST .../v3/kv/put: the gateway is off.
	resp, err := http.Post(a.m.client+"/v3/kv/put", "application/json", strings.NewReader(`{"key":"L2JhdG9uL3Nob3AvaGFjaw==","value":"eA=="}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		t.Errorf("POST /v3/kv/put answered %s, want it refused", resp.Status)
	}
	got, err := shop.Get(ctx, "/baton/shop/hack")
	if err != nil || len(got.Kvs) != 0 {
		t.Errorf("after the POST: %v, %v; want no key", got, err)
	}
	health, err := http.Get(a.m.client + "/health")
	if err != nil {
		t.Fatal(err)
	}
	health.Body.Close()
	if health.StatusCode != http.StatusOK {
		t.Errorf("GET /health: %s, want 200", health.Status)
	}
}

// TestEtcdAuthKeptOverRestartAndPasswordChangeApplied: auth outlives a
// restart on the same data, and a password changed in the environment
// replaces the old one.
func TestEtcdAuthKeptOverRestartAndPasswordChangeApplied(t *testing.T) {
	t.Parallel()
	a := newAuthEtcd(t, "first")
	p := a.start()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != exitOK {
		t.Fatalf("SIGTERM: exit %d", code)
	}
	a.env[1] = "BATON_ETCD_PASSWORD=second"
	a.start()
	if err := put(a.client("", ""), "/baton/shop/x"); !refused(err) {
		t.Errorf("after a restart a put without credentials: %v, want it refused", err)
	}
	cfg := etcdtest.ClientConfig(a.m.client)
	cfg.Username, cfg.Password = "shop", "first"
	if cli, err := clientv3.New(cfg); !refused(err) {
		if cli != nil {
			cli.Close()
		}
		t.Errorf("the old password after the change: %v, want it refused", err)
	}
	if err := put(a.client("shop", "second"), "/baton/shop/x"); err != nil {
		t.Errorf("the new password: %v", err)
	}
}

// TestEtcdWithoutAuthWarnsAndServesNoGateway: without credentials the
// member says loudly that anyone may change its keys; even so, a plain HTTP
// put (curl) is refused, unless the gateway is asked for.
func TestEtcdWithoutAuthWarnsAndServesNoGateway(t *testing.T) {
	t.Parallel()
	ms := etcdMembers(t, 2)
	p := startBaton(t, nil, ms[0].args("")...)
	p.waitOutput("member etcd-0 ready", 30*time.Second)
	if out := p.out.String(); !strings.Contains(out, "WARNING: etcd runs WITHOUT AUTHENTICATION") || !strings.Contains(out, "BATON_ETCD_PASSWORD") {
		t.Errorf("no warning of an unauthenticated etcd:\n%s", out)
	}
	gw := startBaton(t, nil, append(ms[1].args(""), "--enable-grpc-gateway")...)
	gw.waitOutput("member etcd-1 ready", 30*time.Second)
	for _, tc := range []struct {
		m    etcdMember
		want int
	}{{ms[0], http.StatusNotFound}, {ms[1], http.StatusOK}} {
		resp, err := http.Post(tc.m.client+"/v3/kv/put", "application/json", strings.NewReader(`{"key":"L2JhdG9uL2hhY2s=","value":"eA=="}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: POST /v3/kv/put answered %s, want %d", tc.m.name, resp.Status, tc.want)
		}
	}
}

// TestEtcdUserErrors: an incomplete user is a usage error naming it.
func TestEtcdUserErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{[]string{"BATON_ETCD_USERNAME=shop"}, nil, "BATON_ETCD_PASSWORD"},
		{nil, []string{"--user", "blog"}, "NAME:PREFIX"},
		{nil, []string{"--user", "blog-api:/baton/blog"}, "BATON_ETCD_PASSWORD_BLOG_API"},
		{[]string{"BATON_ETCD_PASSWORD_ROOT=x"}, []string{"--user", "root:/baton/x"}, "reserved"},
		{[]string{"BATON_ETCD_PASSWORD_B=x"}, []string{"--user", "b:/baton/b/"}, "ends with '/'"},
	} {
		code, out := runBaton(t, tc.env, append([]string{"etcd", "--data-dir", filepath.Join(t.TempDir(), "d")}, tc.args...)...)
		if code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("%v %v: exit %d, want %d naming %q:\n%s", tc.env, tc.args, code, exitUsage, tc.want, out)
		}
	}
}

// TestEtcdAuthInThreeMembers: three members with the same users form one
// cluster whose leader turns auth on; every member then refuses clients
// without credentials and serves the user under its prefix.
func TestEtcdAuthInThreeMembers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	ms := etcdMembers(t, 3)
	var initial, endpoints []string
	for _, m := range ms {
		initial = append(initial, m.name+"="+m.peer)
		endpoints = append(endpoints, m.client)
	}
	env := []string{"BATON_ETCD_USERNAME=shop", "BATON_ETCD_PASSWORD=shop-secret", "BATON_PREFIX=/baton/shop"}
	var procs []*process
	for _, m := range ms {
		procs = append(procs, startBaton(t, env, append(m.args(strings.Join(initial, ",")), "--bcrypt-cost", "4")...))
	}
	for i, p := range procs {
		p.waitOutput("member "+ms[i].name+" ready", 30*time.Second)
	}
	for _, ep := range endpoints {
		anon := newTestClient(t, ep)
		var err error
		until(t, 20*time.Second, "auth on at "+ep, func() bool {
			err = put(anon, "/baton/shop/x")
			return refused(err)
		})
		anon.Close()
		cfg := etcdtest.ClientConfig(ep)
		cfg.Username, cfg.Password = "shop", "shop-secret"
		cli, err := clientv3.New(cfg)
		if err != nil {
			t.Fatalf("connect as shop to %s: %v", ep, err)
		}
		if err := put(cli, "/baton/shop/x"); err != nil {
			t.Errorf("shop's put at %s: %v", ep, err)
		}
		cli.Close()
	}

	// etcd-2 comes back with nothing: with auth on, only root may change
	// the members, so it says what happened and what to do, and exits 1.
	procs[2].cmd.Process.Kill()
	<-procs[2].done
	if err := os.RemoveAll(ms[2].dir); err != nil {
		t.Fatal(err)
	}
	code, out := runBaton(t, env, append(ms[2].args(strings.Join(initial, ",")), "--bcrypt-cost", "4")...)
	for _, want := range []string{"member etcd-2 has no data, and its peers run their cluster with authentication on",
		"Restore its data dir from a backup", "etcdctl member add etcd-2 --peer-urls " + ms[2].peer, "--initial-cluster-state existing"} {
		if !strings.Contains(out, want) {
			t.Errorf("the emptied member does not say %q:\n%s", want, out)
		}
	}
	if code != exitFailure || strings.Contains(out, "does not answer") || strings.Contains(out, "bootstrapped") {
		t.Errorf("the emptied member exited %d:\n%s", code, out)
	}
}

// TestEtcdFirstStartIsNeverOpen: on the first start with users, no client
// ever writes without credentials, not even while auth is being set up
// (hashing passwords at a high cost makes that take a while); a restart
// serves its client URLs at once.
func TestEtcdFirstStartIsNeverOpen(t *testing.T) {
	t.Parallel()
	a := newAuthEtcd(t, "shop-secret")
	p := startBaton(t, a.env, append(a.m.args(""), "--user", "blog:/baton/blog", "--bcrypt-cost", "11")...)
	var (
		answered, opened int
		ready            bool
	)
	deadline := time.Now().Add(60 * time.Second)
	for !ready {
		if time.Now().After(deadline) {
			t.Fatalf("not ready within 60s; output:\n%s", p.out.String())
		}
		ready = strings.Contains(p.out.String(), "member etcd-0 ready")
		cfg := etcdtest.ClientConfig(a.m.client)
		cfg.DialTimeout = 200 * time.Millisecond
		cli, err := clientv3.New(cfg)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err = cli.Put(ctx, "/baton/shop/open", "x")
		cancel()
		cli.Close()
		switch {
		case err == nil:
			opened++
		case refused(err):
			answered++
		}
	}
	if opened > 0 {
		t.Fatalf("%d writes without credentials succeeded during the first start; output:\n%s", opened, p.out.String())
	}
	if !strings.Contains(p.out.String(), "sets up auth on http://127.0.0.1:") {
		t.Errorf("the first start did not set up auth on a private port; output:\n%s", p.out.String())
	}
	if err := put(a.client("", ""), "/baton/shop/open"); !refused(err) {
		t.Errorf("a put without credentials once ready: %v, want it refused", err)
	}
	t.Logf("%d refused writes while the member started", answered)

	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(30 * time.Second)
	p = a.start()
	if strings.Contains(p.out.String(), "sets up auth on") {
		t.Errorf("a restart with auth on set up auth privately again; output:\n%s", p.out.String())
	}
}
