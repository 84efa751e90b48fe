package election

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func TestConnectionFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Connection
	}{
		{"unset", nil, Connection{}},
		{"blank", map[string]string{"BATON_ETCD_ENDPOINTS": " , "}, Connection{}},
		{
			"comma list with spaces",
			map[string]string{"BATON_ETCD_ENDPOINTS": " http://etcd-0:2379, etcd-1:2379 ,,https://etcd-2:2379 "},
			Connection{Endpoints: []string{"http://etcd-0:2379", "etcd-1:2379", "https://etcd-2:2379"}},
		},
		{
			"credentials and TLS",
			map[string]string{
				"BATON_ETCD_ENDPOINTS": "https://etcd:2379",
				"BATON_ETCD_USERNAME":  "baton",
				"BATON_ETCD_PASSWORD":  "s3cret",
				"BATON_ETCD_CA":        "/etc/baton/ca.pem",
				"BATON_ETCD_CERT":      "/etc/baton/client.pem",
				"BATON_ETCD_KEY":       "/etc/baton/client-key.pem",
			},
			Connection{
				Endpoints: []string{"https://etcd:2379"},
				Username:  "baton", Password: "s3cret",
				CAFile: "/etc/baton/ca.pem", CertFile: "/etc/baton/client.pem", KeyFile: "/etc/baton/client-key.pem",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"BATON_ETCD_ENDPOINTS", "BATON_ETCD_USERNAME", "BATON_ETCD_PASSWORD", "BATON_ETCD_CA", "BATON_ETCD_CERT", "BATON_ETCD_KEY"} {
				t.Setenv(k, tc.env[k])
			}
			got := ConnectionFromEnv()
			if !slices.Equal(got.Endpoints, tc.want.Endpoints) {
				t.Errorf("Endpoints = %q, want %q", got.Endpoints, tc.want.Endpoints)
			}
			if want := len(tc.want.Endpoints) > 0; got.Configured() != want {
				t.Errorf("Configured = %v, want %v", got.Configured(), want)
			}
			got.Endpoints, tc.want.Endpoints = nil, nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ConnectionFromEnv = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestClientConfig(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	noPEM := filepath.Join(t.TempDir(), "empty-ca.pem")
	if err := os.WriteFile(noPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing-key.pem")

	t.Run("plain", func(t *testing.T) {
		cfg, err := Connection{Endpoints: []string{"http://etcd:2379", "etcd-1:2379"}}.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.TLS != nil || cfg.DialTimeout != 5*time.Second || len(cfg.Endpoints) != 2 {
			t.Fatalf("config = TLS %v, dial timeout %v, endpoints %q", cfg.TLS, cfg.DialTimeout, cfg.Endpoints)
		}
	})
	t.Run("a bad endpoint's password is not echoed", func(t *testing.T) {
		for _, ep := range []string{"http://app:s3cr3t@etcd:x", "ftp://app:s3cr3t@etcd:2379", "http://app:s3cr3t@",
			"http://app:s3/cr3t@127.0.0.1:1", "app:s3cr3t@127.0.0.1:2379", "http://app:s3 cr3t@etcd:2379",
			"http://app:s3@cr3t@etcd:x", "http://app:s3#cr3t@etcd:x", "http://app:s3?cr3t@etcd:x"} {
			_, err := Connection{Endpoints: []string{ep}}.ClientConfig()
			if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "app:xxxxx@") {
				t.Errorf("endpoint %s: %v", ep, err)
			}
		}
	})
	t.Run("https", func(t *testing.T) {
		cfg, err := Connection{Endpoints: []string{"https://etcd:2379"}, DialTimeout: time.Second}.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.TLS == nil || cfg.DialTimeout != time.Second {
			t.Fatalf("config = TLS %v, dial timeout %v; want TLS and 1s", cfg.TLS, cfg.DialTimeout)
		}
	})
	t.Run("client certificate", func(t *testing.T) {
		cfg, err := Connection{Endpoints: []string{"https://etcd:2379"}, CAFile: pki.ca, CertFile: pki.clientCert, KeyFile: pki.clientKey}.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.TLS == nil || cfg.TLS.RootCAs == nil || len(cfg.TLS.Certificates) != 1 {
			t.Fatalf("TLS config without the CA or the client certificate: %+v", cfg.TLS)
		}
	})

	for _, tc := range []struct {
		name string
		conn Connection
		want string // in the error message
	}{
		{"no endpoints", Connection{}, "BATON_ETCD_ENDPOINTS"},
		{"bad scheme", Connection{Endpoints: []string{"ftp://etcd:2379"}}, `"ftp://etcd:2379"`},
		{"no host", Connection{Endpoints: []string{"http://"}}, `"http://"`},
		{"no port", Connection{Endpoints: []string{"etcd"}}, `"etcd"`},
		{"one bad of two", Connection{Endpoints: []string{"etcd:2379", "etcd 1:2379"}}, `"etcd 1:2379"`},
		{"space-separated list", Connection{Endpoints: []string{"etcd-0 etcd-1:2379"}}, `"etcd-0 etcd-1:2379"`},
		{"port not a number", Connection{Endpoints: []string{"etcd:client"}}, `port "client"`},
		{"URL port not a number", Connection{Endpoints: []string{"http://etcd:client"}}, `"http://etcd:client"`},
		{"username alone", Connection{Endpoints: []string{"etcd:2379"}, Username: "root"}, "password"},
		{"password alone", Connection{Endpoints: []string{"etcd:2379"}, Password: "pw"}, "username"},
		{"certificate alone", Connection{Endpoints: []string{"etcd:2379"}, CertFile: pki.clientCert}, "BATON_ETCD_KEY"},
		{"key alone", Connection{Endpoints: []string{"etcd:2379"}, KeyFile: pki.clientKey}, "BATON_ETCD_CERT"},
		{"missing key file", Connection{Endpoints: []string{"etcd:2379"}, CertFile: pki.clientCert, KeyFile: missing}, missing},
		{"missing CA file", Connection{Endpoints: []string{"etcd:2379"}, CAFile: missing}, missing},
		{"CA without PEM", Connection{Endpoints: []string{"etcd:2379"}, CAFile: noPEM}, noPEM + ": no PEM"},
		{"key of another certificate", Connection{Endpoints: []string{"etcd:2379"}, CertFile: pki.clientCert, KeyFile: pki.serverKey}, pki.serverKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := noPanic(func() error { _, err := tc.conn.ClientConfig(); return err })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ClientConfig = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestUnreachableEtcdFailsWithinTheDeadline(t *testing.T) {
	cli := etcdtest.NewClient(t, closedEndpoint(t))
	t.Setenv("BATON_ID", "test")

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := NewSession(ctx, cli, WithTTL(2*time.Second))
		done <- err
	}()
	if err := waitFor(t, done, 5*time.Second, "NewSession against a closed port"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NewSession = %v, want a deadline error", err)
	}

	m, err := NewMutex(cli, "jobs", WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		done <- m.Lock(ctx)
	}()
	if err := waitFor(t, done, 5*time.Second, "Lock against a closed port"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v, want a deadline error", err)
	}
}

// Run does not give up while etcd is down, is elected once it is back, and
// returns promptly when its context ends at any point.
func TestElectorRunWaitsOutAnOutage(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	srv.Stop()

	e, err := New(cli, "jobs", WithIdentity("a"), WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	terms := make(chan Term, 1)
	ran := make(chan error, 1)
	go func() {
		ran <- e.Run(ctx, func(ctx context.Context, term Term) {
			terms <- term
			<-ctx.Done()
		})
	}()

	// Run has tried to reach etcd and failed.
	conn := cli.ActiveConnection()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	for s := conn.GetState(); s.String() != "TRANSIENT_FAILURE"; s = conn.GetState() {
		if !conn.WaitForStateChange(wctx, s) {
			t.Fatalf("the client never failed to connect; state %v", s)
		}
	}
	select {
	case err := <-ran:
		t.Fatalf("Run returned %v while etcd is down", err)
	default:
	}

	srv.Restart(t)
	term := waitFor(t, terms, 10*time.Second, "Run to be elected once etcd is back")
	if term.Identity != "a" {
		t.Fatalf("term = %+v", term)
	}
	cancel()
	if err := waitFor(t, ran, 5*time.Second, "Run to return after cancel"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

func TestElectorRunStopsPromptlyWhileUnreachable(t *testing.T) {
	t.Parallel()
	cli := etcdtest.NewClient(t, closedEndpoint(t))
	e, err := New(cli, "jobs", WithIdentity("a"), WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx, func(context.Context, Term) { t.Error("elected without etcd") }) }()
	conn := cli.ActiveConnection()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	for s := conn.GetState(); s.String() != "TRANSIENT_FAILURE"; s = conn.GetState() {
		if !conn.WaitForStateChange(wctx, s) {
			t.Fatalf("the client never failed to connect; state %v", s)
		}
	}
	cancel()
	if err := waitFor(t, ran, 2*time.Second, "Run to return after cancel"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

// logRecorder is a slog handler that keeps messages.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
	seen chan struct{} // receives after each record, when there is room
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, rec.Message)
	r.mu.Unlock()
	select {
	case r.seen <- struct{}{}:
	default:
	}
	return nil
}

func (r *logRecorder) count(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if m == msg {
			n++
		}
	}
	return n
}

// While etcd is unreachable, Run says so in the log and retries on its own
// backoff, rather than wait silently inside one grant for as long as the
// outage lasts.
func TestElectorRunLogsWhileUnreachable(t *testing.T) {
	t.Parallel()
	cli := etcdtest.NewClient(t, closedEndpoint(t))
	rec := &logRecorder{seen: make(chan struct{}, 1)}
	e, err := New(cli, "jobs", WithIdentity("a"), WithTTL(2*time.Second), WithLogger(slog.New(rec)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.Run(ctx, func(context.Context, Term) { t.Error("elected without etcd") }) }()
	for rec.count("baton: cannot start a session") < 2 {
		waitFor(t, rec.seen, 10*time.Second, "Run to log two failed attempts")
	}
	cancel()
	if err := waitFor(t, ran, 2*time.Second, "Run to return after cancel"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, as PEM files.
type testPKI struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	newKey := func() *ecdsa.PrivateKey {
		t.Helper()
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		t.Helper()
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	now := time.Now()
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "baton test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		t.Helper()
		k := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	serverDER, serverKey := issue(2, "etcd", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	clientDER, clientKey := issue(3, "baton", x509.ExtKeyUsageClientAuth, nil)
	return testPKI{
		ca:         write("ca.pem", "CERTIFICATE", caDER),
		serverCert: write("server.pem", "CERTIFICATE", serverDER),
		serverKey:  write("server-key.pem", "PRIVATE KEY", keyDER(serverKey)),
		clientCert: write("client.pem", "CERTIFICATE", clientDER),
		clientKey:  write("client-key.pem", "PRIVATE KEY", keyDER(clientKey)),
	}
}

// newConnClient builds a client the way the SDK's users do, from a
// Connection, quiet, closed at the end of the test.
func newConnClient(t *testing.T, c Connection) (*clientv3.Client, error) {
	t.Helper()
	cfg, err := c.ClientConfig()
	if err != nil {
		t.Fatalf("ClientConfig: %v", err)
	}
	cfg.Logger = zap.NewNop()
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cli.Close() })
	return cli, nil
}

// roundTrip elects a leader and takes a lock over cli.
func roundTrip(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx := deadlineCtx(t, 10*time.Second)
	c := startCandidate(t, cli, "jobs", "a")
	term := waitFor(t, c.terms, 5*time.Second, "a elected")
	if l, err := c.e.Leader(ctx); err != nil || l.Identity != "a" || l.Fence != term.term.Fence {
		t.Fatalf("Leader = %+v, %v", l, err)
	}
	if err := c.stop(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	m, err := NewMutex(cli, "jobs", WithIdentity("a"), WithTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if owned, err := m.Owned(ctx); err != nil || !owned {
		t.Fatalf("Owned = %v, %v", owned, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// failsWithin asserts that a request over cli fails, and within d.
func failsWithin(t *testing.T, cli *clientv3.Client, d time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Get(ctx, "/t/probe")
		done <- err
	}()
	err := waitFor(t, done, d, "a request to fail")
	if err == nil {
		t.Fatal("the request succeeded")
	}
	return err
}

func TestTLSClientCertificates(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	srv := etcdtest.StartTLS(t, etcdtest.TLS{CertFile: pki.serverCert, KeyFile: pki.serverKey, TrustedCAFile: pki.ca})

	t.Run("round trip", func(t *testing.T) {
		cli, err := newConnClient(t, Connection{Endpoints: srv.Endpoints(), CAFile: pki.ca, CertFile: pki.clientCert, KeyFile: pki.clientKey})
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, cli)
	})
	t.Run("host:port endpoint", func(t *testing.T) {
		cli, err := newConnClient(t, Connection{Endpoints: []string{srv.Addr()}, CAFile: pki.ca, CertFile: pki.clientCert, KeyFile: pki.clientKey})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Put(deadlineCtx(t, 5*time.Second), "/t/probe", "x"); err != nil {
			t.Fatalf("put over TLS with a host:port endpoint: %v", err)
		}
	})
	t.Run("no client certificate", func(t *testing.T) {
		cli, err := newConnClient(t, Connection{Endpoints: srv.Endpoints(), CAFile: pki.ca})
		if err != nil {
			return // refused at once: as good
		}
		failsWithin(t, cli, 5*time.Second)
	})
	t.Run("server not trusted", func(t *testing.T) {
		cli, err := newConnClient(t, Connection{Endpoints: srv.Endpoints(), CertFile: pki.clientCert, KeyFile: pki.clientKey})
		if err != nil {
			return
		}
		failsWithin(t, cli, 5*time.Second)
	})
}

func TestAuthUsernamePassword(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	root := srv.Client(t)
	ctx := deadlineCtx(t, 10*time.Second)
	steps := []func() error{
		func() error { _, err := root.UserAdd(ctx, "root", "pw"); return err },
		func() error { _, err := root.RoleAdd(ctx, "root"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := root.AuthEnable(ctx); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("enable auth: %v", err)
		}
	}

	t.Run("wrong password", func(t *testing.T) {
		cfg, err := Connection{Endpoints: srv.Endpoints(), Username: "root", Password: "wrong", DialTimeout: 2 * time.Second}.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Logger = zap.NewNop()
		done := make(chan error, 1)
		go func() {
			cli, err := clientv3.New(cfg)
			if err == nil {
				defer cli.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_, err = cli.Get(ctx, "/t/probe")
			}
			done <- err
		}()
		if err := waitFor(t, done, 5*time.Second, "a client with a wrong password to fail"); err == nil {
			t.Fatal("a client with a wrong password could read")
		} else if !strings.Contains(err.Error(), "authentication failed") {
			t.Fatalf("error = %v, want it to say authentication failed", err)
		}
	})
	t.Run("no credentials", func(t *testing.T) {
		cli, err := newConnClient(t, Connection{Endpoints: srv.Endpoints()})
		if err != nil {
			return
		}
		failsWithin(t, cli, 5*time.Second)
	})
	t.Run("right password", func(t *testing.T) {
		cli, err := newConnClient(t, Connection{Endpoints: srv.Endpoints(), Username: "root", Password: "pw"})
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, cli)
	})
}
