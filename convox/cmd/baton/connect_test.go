package main

import (
	"net"
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

// closedEndpoint is the URL of a 127.0.0.1 port that refuses connections.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep := "http://" + ln.Addr().String()
	ln.Close()
	return ep
}

// withFlags returns args with flags added before the COMMAND after "--".
func withFlags(args []string, flags ...string) []string {
	i := slices.Index(args, "--")
	if i < 0 {
		i = len(args)
	}
	return slices.Concat(args[:i], flags, args[i:])
}

// TestADeadFirstEndpointIsNotFatal gives every command that talks to etcd a
// list whose first endpoint refuses connections and whose second accepts
// them and never answers (a partitioned member): the live third endpoint is
// enough, and no command waits out its dial timeout.
func TestADeadFirstEndpointIsNotFatal(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, map[string]string{"report": "0 0 3 * * *"})
	hole := etcdtest.NewProxy(t, s.srv.Addr())
	hole.Blackhole()
	env := s.srv.Env(closedEndpoint(t), hole.Endpoint(), s.srv.Endpoint())
	ran := filepath.Join(t.TempDir(), "ran")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "report"},
		{[]string{"pause", "report"}, "paused"},
		{[]string{"resume", "report"}, "resumed"},
		{[]string{"trigger", "report"}, "report"},
		{[]string{"run", "--leader", "w", "--", "sh", "-c", "echo leader >> " + ran}, ""},
		{[]string{"run", "--lock", "w", "--", "sh", "-c", "echo lock >> " + ran}, ""},
		{[]string{"run", "--once", "k", "--ttl", "1h", "--", "sh", "-c", "echo once >> " + ran}, ""},
	} {
		// A dial timeout far above what a command takes, even on a loaded
		// machine (about 130 ms alone; one run took 11.5 s beside CI's
		// other tests): a command that waits it out cannot pass for a slow
		// one.
		start := time.Now()
		code, out := runBaton(t, env, withFlags(tc.args, "--dial-timeout", "60s")...)
		took := time.Since(start)
		if code != exitOK || !strings.Contains(out, tc.want) {
			t.Errorf("baton %v: exit %d, want 0 and %q in:\n%s", tc.args, code, tc.want, out)
		}
		if took >= 30*time.Second {
			t.Errorf("baton %v took %v: it waited for a dead endpoint", tc.args[0], took)
		}
	}
	if got := strings.Join(readLines(ran), " "); got != "leader lock once" {
		t.Errorf("commands ran: %q, want leader, lock and once", got)
	}
}

// etcdWithAuth is an in-process etcd with authentication on: user "app" may read and write
// under /baton/app, user "other" under /baton/other, and user "viewer" may read /baton/app.
func etcdWithAuth(t *testing.T) *etcdtest.Member {
	t.Helper()
	m := etcdtest.Start(t)
	rw, r := clientv3.PermissionType(clientv3.PermReadWrite), clientv3.PermissionType(clientv3.PermRead)
	m.EnableAuth(t, "root-secret",
		etcdtest.User{Name: "app", Password: "app-secret", Prefix: "/baton/app", Perm: rw},
		etcdtest.User{Name: "other", Password: "other-secret", Prefix: "/baton/other", Perm: rw},
		etcdtest.User{Name: "viewer", Password: "viewer-secret", Prefix: "/baton/app", Perm: r})
	return m
}

// TestStatusNeedsReadAccessOnly: a user who may only read the prefix sees
// the cluster with status, and is told, not hung, when it asks to pause.
func TestStatusNeedsReadAccessOnly(t *testing.T) {
	t.Parallel()
	m := etcdWithAuth(t)
	env := []string{"BATON_ETCD_ENDPOINTS=" + m.Endpoint(), "BATON_PREFIX=/baton/app",
		"BATON_ETCD_USERNAME=viewer", "BATON_ETCD_PASSWORD=viewer-secret"}
	if code, out := runBaton(t, env, "status", "--dial-timeout", "3s"); code != 0 {
		t.Errorf("status as a read-only user: exit %d:\n%s", code, out)
	}
	code, out := runBaton(t, env, "pause", "--dial-timeout", "3s", "report")
	if code != exitFailure || !strings.Contains(out, `user "viewer" may not read and write under the prefix /baton/app`) {
		t.Errorf("pause as a read-only user: exit %d, want %d and the missing permission named:\n%s", code, exitFailure, out)
	}
}

// TestAuthFailuresAreClearAndFast runs run --leader, run --lock and crontab
// against an etcd with auth: without credentials, with a wrong password and
// as a user of another prefix, each exits at once with the cause; with the
// right user, each works.
func TestAuthFailuresAreClearAndFast(t *testing.T) {
	t.Parallel()
	m := etcdWithAuth(t)
	dir := t.TempDir()
	crontab := filepath.Join(dir, "crontab")
	ran := filepath.Join(dir, "ran")
	os.WriteFile(crontab, []byte("tick: * * * * * * echo tick >> "+ran+"\n"), 0o644)
	base := []string{"BATON_ETCD_ENDPOINTS=" + m.Endpoint(), "BATON_PREFIX=/baton/app"}
	for _, tc := range []struct {
		name  string
		creds []string
		want  string
	}{
		{"no credentials", nil, "authentication on and no user"},
		{"wrong password", []string{"BATON_ETCD_USERNAME=app", "BATON_ETCD_PASSWORD=nope"}, "wrong user name or password"},
		{"another prefix's user", []string{"BATON_ETCD_USERNAME=other", "BATON_ETCD_PASSWORD=other-secret"}, `user "other" may not read and write under the prefix /baton/app`},
	} {
		for _, cmd := range []struct {
			args []string
			code int
		}{
			{[]string{"run", "--leader", "w", "--", "touch", ran}, runFailure},
			{[]string{"run", "--lock", "w", "--", "touch", ran}, runFailure},
			{[]string{"run", "--once", "k", "--ttl", "1h", "--", "touch", ran}, runFailure},
			{[]string{"crontab", "--seconds", crontab}, exitFailure},
		} {
			t.Run(tc.name+"/"+cmd.args[0]+" "+cmd.args[1], func(t *testing.T) {
				// Fast: a refusal is final, not retried until the dial
				// timeout, which is far above what a command takes even
				// on a loaded machine.
				start := time.Now()
				p := startBaton(t, append(append([]string{}, base...), tc.creds...), withFlags(cmd.args, "--dial-timeout", "20s")...)
				code := p.wait(time.Minute)
				if code != cmd.code || !strings.Contains(p.out.String(), tc.want) {
					t.Errorf("exit %d, want %d and %q in:\n%s", code, cmd.code, tc.want, p.out.String())
				}
				if took := time.Since(start); took >= 10*time.Second {
					t.Errorf("took %v with a 20s dial timeout: the refusal was retried", took)
				}
			})
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("a command ran without access")
	}
	good := append(base, "BATON_ETCD_USERNAME=app", "BATON_ETCD_PASSWORD=app-secret")
	for _, args := range [][]string{
		{"run", "--leader", "w", "--", "sh", "-c", "echo leader >> " + ran},
		{"run", "--lock", "w", "--", "sh", "-c", "echo lock >> " + ran},
		{"run", "--once", "k", "--ttl", "1h", "--", "sh", "-c", "echo once >> " + ran},
	} {
		if code, out := runBaton(t, good, args...); code != 0 {
			t.Errorf("baton %v with the app's user: exit %d:\n%s", args, code, out)
		}
	}
	p := startBaton(t, good, "crontab", "--seconds", crontab)
	until(t, 15*time.Second, "a tick of the crontab with the app's user", func() bool {
		return strings.Contains(strings.Join(readLines(ran), " "), "tick")
	})
	p.cmd.Process.Signal(os.Interrupt)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Errorf("crontab exited %d", code)
	}
}

// TestEndpointPasswordIsNeverEchoed: a password in an endpoint URL appears
// in no error and no log line, whether the URL is malformed, etcd does not
// answer, or it does.
func TestEndpointPasswordIsNeverEchoed(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t)
	tab := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(tab, []byte("* * * * * true\n"), 0o644)
	withPassword := func(ep string) string { return strings.Replace(ep, "http://", "http://app:s3cr3t@", 1) }
	for _, tc := range []struct {
		endpoint string
		args     []string
		wait     string
	}{
		{"http://app:s3cr3t@127.0.0.1:x", []string{"status"}, ""},
		{"http://app:s3cr3t@127.0.0.1:x", []string{"crontab", tab}, ""},
		{"http://app:s3cr3t@127.0.0.1:x", []string{"run", "--lock", "x", "--", "true"}, ""},
		{withPassword(closedEndpoint(t)), []string{"status", "--dial-timeout", "1s"}, ""},
		{withPassword(closedEndpoint(t)), []string{"run", "--dial-timeout", "1s", "--lock", "x", "--", "true"}, ""},
		{withPassword(closedEndpoint(t)), []string{"crontab", "--dial-timeout", "1s", tab}, "waiting for etcd"},
		{withPassword(etcd.Endpoint()), []string{"crontab", tab}, "baton crontab: started"},
	} {
		p := startBaton(t, []string{"BATON_ETCD_ENDPOINTS=" + tc.endpoint}, tc.args...)
		if tc.wait != "" {
			p.waitOutput(tc.wait, 20*time.Second)
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
		p.wait(20 * time.Second)
		if out := p.out.String(); strings.Contains(out, "s3cr3t") || !strings.Contains(out, "127.0.0.1:") {
			t.Errorf("baton %v with %s echoes the password, or names no endpoint:\n%s", tc.args, tc.endpoint, out)
		}
	}
}
