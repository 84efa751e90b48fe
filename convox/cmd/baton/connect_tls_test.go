package main

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tlsServer accepts TLS connections with cert and key and shakes hands,
// as etcd's client port would; it returns its port.
func tlsServer(t *testing.T, cert, key string) string {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestTLSMistakesAreNamed: a client without a CA, with the wrong CA, or
// naming the server by a name its certificate lacks gets the x509 cause
// and what to change, at once and with a failure status, from every
// command; crontab does not wait for etcd on it.
func TestTLSMistakesAreNamed(t *testing.T) {
	t.Parallel()
	cert, key := selfSigned(t)
	other, _ := selfSigned(t)
	port := tlsServer(t, cert, key)
	tab := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(tab, []byte("* * * * * true\n"), 0o644)
	for _, tc := range []struct {
		name string
		env  []string
		want []string
	}{
		{"no CA", []string{"BATON_ETCD_ENDPOINTS=https://127.0.0.1:" + port},
			[]string{"x509: certificate signed by unknown authority", "BATON_ETCD_CA"}},
		{"wrong CA", []string{"BATON_ETCD_ENDPOINTS=https://127.0.0.1:" + port, "BATON_ETCD_CA=" + other},
			[]string{"x509: certificate signed by unknown authority", "the CA " + other + " did not sign it"}},
		{"host name", []string{"BATON_ETCD_ENDPOINTS=https://localhost:" + port, "BATON_ETCD_CA=" + cert},
			[]string{"x509: certificate is not valid for any names, but wanted to match localhost", "as its certificate does (127.0.0.1)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct {
				args []string
				code int
			}{
				{[]string{"status"}, exitFailure},
				{[]string{"run", "--lock", "x", "--", "true"}, runFailure},
				{[]string{"crontab", tab}, exitFailure},
			} {
				var code int
				var out string
				for try := 1; ; try++ {
					p := startBaton(t, tc.env, append([]string{c.args[0], "--dial-timeout", "1s"}, c.args[1:]...)...)
					code = p.wait(20 * time.Second)
					out = p.out.String()
					// baton's own handshake with the endpoint, which names
					// the mistake, waits up to handshakeTimeout; on a machine
					// too loaded for a handshake in that time it says the
					// endpoint did not answer. Tried again, up to five times:
					// beside two busy loops, three in a row have timed out.
					if try == 5 || !strings.Contains(out, "unreachable: no endpoint answered") {
						break
					}
					t.Logf("baton %s, try %d: no handshake within %v: %s", c.args[0], try, handshakeTimeout, out)
				}
				if code != c.code {
					t.Errorf("baton %s: exit %d, want %d:\n%s", c.args[0], code, c.code, out)
				}
				for _, w := range append(tc.want, "TLS") {
					if !strings.Contains(out, w) {
						t.Errorf("baton %s: no %q in:\n%s", c.args[0], w, out)
					}
				}
				if strings.Contains(out, "deadline exceeded") || strings.Contains(out, "waiting for etcd") {
					t.Errorf("baton %s calls etcd unreachable:\n%s", c.args[0], out)
				}
			}
		})
	}
}
