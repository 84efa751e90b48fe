package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNoCredentialOfAMalformedURLIsEchoed gives run, status and crontab
// --check endpoints whose password makes the URL malformed (a "/", a space,
// an "@", a "#", a "?") or that have no scheme: neither half of the
// password appears in anything baton prints.
func TestNoCredentialOfAMalformedURLIsEchoed(t *testing.T) {
	t.Parallel()
	tab := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(tab, []byte("* * * * * true\n"), 0o644)
	closed := strings.TrimPrefix(closedEndpoint(t), "http://")
	for _, ep := range []string{
		"http://app:sekr/itpw@" + closed,
		"app:sekr:itpw@" + closed,
		"http://app:sekr itpw@" + closed,
		"http://app:sekr@itpw@" + closed,
		"http://app:sekr#itpw@" + closed,
		"http://app:sekr?itpw@" + closed,
		"https://app:sekr/itpw@" + closed,
		"http://app:sekr/itpw@127.0.0.1:x",
	} {
		for _, args := range [][]string{
			{"run", "--dial-timeout", "1s", "--lock", "x", "--", "true"},
			{"status", "--dial-timeout", "1s"},
			{"crontab", "--check", tab},
			{"crontab", "--dial-timeout", "1s", tab},
		} {
			t.Run(ep+"/"+args[0], func(t *testing.T) {
				t.Parallel()
				p := startBaton(t, []string{"BATON_ETCD_ENDPOINTS=" + ep}, args...)
				if args[0] == "crontab" && args[1] != "--check" {
					// It waits for etcd, or exits at once on an endpoint
					// that can never work.
					until(t, 20*time.Second, "crontab waiting for etcd or exiting", func() bool {
						select {
						case <-p.done:
							return true
						default:
							return strings.Contains(p.out.String(), "waiting for etcd")
						}
					})
					p.cmd.Process.Signal(syscall.SIGTERM)
				}
				p.wait(time.Minute)
				if out := p.out.String(); strings.Contains(out, "sekr") || strings.Contains(out, "itpw") {
					t.Errorf("baton %v with BATON_ETCD_ENDPOINTS=%s echoes the password:\n%s", args, ep, out)
				}
			})
		}
	}
}

// TestURLCredentialsAreUsed: the user and password of an endpoint URL log
// in to an etcd with auth on, a wrong one is named as such (its user, not
// its password), and credentials given both ways that differ are a usage
// error.
func TestURLCredentialsAreUsed(t *testing.T) {
	t.Parallel()
	m := etcdWithAuth(t)
	withUser := func(userinfo string) string {
		return strings.Replace(m.Endpoint(), "http://", "http://"+userinfo+"@", 1)
	}
	base := []string{"BATON_PREFIX=/baton/app"}
	for _, tc := range []struct {
		env  []string
		args []string
		code int
		want string
	}{
		{[]string{"BATON_ETCD_ENDPOINTS=" + withUser("app:app-secret")}, []string{"run", "--lock", "x", "--", "true"}, 0, ""},
		{[]string{"BATON_ETCD_ENDPOINTS=" + withUser("app:app%2Dsecret")}, []string{"status"}, 0, ""},
		{[]string{"BATON_ETCD_ENDPOINTS=" + withUser("app:wrongpw")}, []string{"status"}, exitFailure, `refused user "app": wrong user name or password`},
		{[]string{"BATON_ETCD_ENDPOINTS=" + withUser("app:wrongpw")}, []string{"run", "--lock", "x", "--", "true"}, runFailure, `refused user "app": wrong user name or password`},
		{[]string{"BATON_ETCD_ENDPOINTS=" + withUser("app:wrongpw"), "BATON_ETCD_USERNAME=app", "BATON_ETCD_PASSWORD=app-secret"},
			[]string{"status"}, exitUsage, "are not those of --username and --password"},
		{[]string{"BATON_ETCD_ENDPOINTS=" + withUser("app:app-secret") + "," + withUser("other:wrongpw")},
			[]string{"crontab", "--check", "/dev/null"}, exitUsage, "carries other credentials"},
	} {
		code, out := runBaton(t, append(append([]string{}, base...), tc.env...), tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) || strings.Contains(out, "wrongpw") {
			t.Errorf("baton %v with %v: exit %d, want %d and %q, no password:\n%s", tc.args, tc.env, code, tc.code, tc.want, out)
		}
	}
}

// TestAConfigurationErrorIsAUsageError: an endpoint that can never work is
// a usage error in every command, 2 (122 in run, whose own statuses stay
// out of its command's range), before anything dials.
func TestAConfigurationErrorIsAUsageError(t *testing.T) {
	t.Parallel()
	tab := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(tab, []byte("* * * * * true\n"), 0o644)
	for _, env := range [][]string{
		{"BATON_ETCD_ENDPOINTS=http://127.0.0.1:x"},
		{"BATON_ETCD_ENDPOINTS=127.0.0.1:1", "BATON_ETCD_USERNAME=app"},
	} {
		for _, tc := range []struct {
			args []string
			code int
		}{
			{[]string{"run", "--lock", "x", "--", "true"}, runUsage},
			{[]string{"status"}, exitUsage},
			{[]string{"pause", "job"}, exitUsage},
			{[]string{"crontab", tab}, exitUsage},
			{[]string{"crontab", "--check", tab}, exitUsage},
		} {
			if code, out := runBaton(t, env, tc.args...); code != tc.code || !strings.Contains(out, "--help` for usage") {
				t.Errorf("baton %v with %v: exit %d, want %d as a usage error:\n%s", tc.args, env, code, tc.code, out)
			}
		}
	}
}
