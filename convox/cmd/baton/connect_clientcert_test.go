package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// testCA is a CA that issues certificates into a test's directory.
type testCA struct {
	t    *testing.T
	dir  string
	file string
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	ca := &testCA{t: t, dir: t.TempDir()}
	ca.key = ca.newKey()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &ca.key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	if ca.cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	ca.file = ca.write(name+".pem", "CERTIFICATE", der)
	return ca
}

func (ca *testCA) newKey() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		ca.t.Fatal(err)
	}
	return k
}

func (ca *testCA) write(name, typ string, der []byte) string {
	p := filepath.Join(ca.dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		ca.t.Fatal(err)
	}
	return p
}

// issue writes a certificate for usage, valid until notAfter, and its key.
func (ca *testCA) issue(name string, usage x509.ExtKeyUsage, notAfter time.Time) (cert, key string) {
	k := ca.newKey()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: notAfter.Add(-2 * time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &k.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		ca.t.Fatal(err)
	}
	return ca.write(name+".pem", "CERTIFICATE", der), ca.write(name+"-key.pem", "PRIVATE KEY", keyDER)
}

// TestARefusedClientCertificateIsNamedAtOnce: an etcd that requires client
// certificates, reached without one, with another CA's or with an expired
// one, and a scheme that does not match the server's (http:// to TLS,
// https:// to plain text), is an error naming the TLS cause well within a
// long dial timeout, from every command; crontab does not wait for etcd on
// it. With a good certificate the same etcd works.
func TestARefusedClientCertificateIsNamedAtOnce(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "etcd-ca")
	other := newTestCA(t, "other-ca")
	later := time.Now().Add(time.Hour)
	serverCert, serverKey := ca.issue("server", x509.ExtKeyUsageServerAuth, later)
	goodCert, goodKey := ca.issue("client", x509.ExtKeyUsageClientAuth, later)
	expiredCert, expiredKey := ca.issue("expired", x509.ExtKeyUsageClientAuth, time.Now().Add(-time.Hour))
	otherCert, otherKey := other.issue("stranger", x509.ExtKeyUsageClientAuth, later)
	secure := etcdtest.StartTLS(t, etcdtest.TLS{CertFile: serverCert, KeyFile: serverKey, TrustedCAFile: ca.file})
	plain := etcdtest.Start(t)
	tlsEP := secure.Endpoint()
	if !strings.HasPrefix(tlsEP, "https://") {
		t.Fatalf("TLS member's endpoint %s", tlsEP)
	}
	tab := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(tab, []byte("* * * * * true\n"), 0o644)
	withCA := "BATON_ETCD_CA=" + ca.file
	good := []string{"BATON_ETCD_ENDPOINTS=" + tlsEP, withCA, "BATON_ETCD_CERT=" + goodCert, "BATON_ETCD_KEY=" + goodKey}
	if code, out := runBaton(t, good, "status"); code != 0 {
		t.Fatalf("status with a good client certificate: exit %d:\n%s", code, out)
	}
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"no client certificate", []string{"BATON_ETCD_ENDPOINTS=" + tlsEP, withCA}, "requires a client certificate"},
		{"another CA's", []string{"BATON_ETCD_ENDPOINTS=" + tlsEP, withCA, "BATON_ETCD_CERT=" + otherCert, "BATON_ETCD_KEY=" + otherKey}, "refused the client certificate " + otherCert},
		{"expired", []string{"BATON_ETCD_ENDPOINTS=" + tlsEP, withCA, "BATON_ETCD_CERT=" + expiredCert, "BATON_ETCD_KEY=" + expiredKey}, "refused the client certificate " + expiredCert},
		{"http to TLS", []string{"BATON_ETCD_ENDPOINTS=" + strings.Replace(tlsEP, "https://", "http://", 1)}, "serves TLS there: use https://"},
		{"https to plain", []string{"BATON_ETCD_ENDPOINTS=" + strings.Replace(plain.Endpoint(), "http://", "https://", 1), withCA}, "serves no TLS there: use http://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				args []string
				code int
			}{
				{[]string{"status"}, exitFailure},
				{[]string{"run", "--lock", "x", "--", "true"}, runFailure},
				{[]string{"crontab", tab}, exitFailure},
			} {
				start := time.Now()
				p := startBaton(t, tc.env, append([]string{c.args[0], "--dial-timeout", "30s"}, c.args[1:]...)...)
				code := p.wait(time.Minute)
				out := p.out.String()
				if code != c.code || !strings.Contains(out, tc.want) || !strings.Contains(out, "TLS") {
					t.Errorf("baton %s: exit %d, want %d and %q:\n%s", c.args[0], code, c.code, tc.want, out)
				}
				// At once: well within the 30 s the dial would wait.
				if took := time.Since(start); took > 15*time.Second || strings.Contains(out, "waiting for etcd") {
					t.Errorf("baton %s took %v, or waited for etcd:\n%s", c.args[0], took, out)
				}
			}
		})
	}
}
