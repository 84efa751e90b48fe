package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key,
// the certificate serving as its own CA.
func selfSigned(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "baton etcd test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestEtcdServesClientsOverTLS: with --cert-file and --key-file the member
// serves clients and /health over TLS only, and baton's commands reach it
// with BATON_ETCD_CA.
func TestEtcdServesClientsOverTLS(t *testing.T) {
	t.Parallel()
	cert, key := selfSigned(t)
	m := etcdMembers(t, 1)[0]
	m.client = strings.Replace(m.client, "http://", "https://", 1)
	p := startBaton(t, nil, append(m.args(""), "--cert-file", cert, "--key-file", key)...)
	p.waitOutput("member etcd-0 ready, clients at "+m.client, 30*time.Second)

	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	secure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	resp, err := secure.Get(m.client + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /health over TLS: %s", resp.Status)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get(strings.Replace(m.client, "https://", "http://", 1) + "/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("GET /health over plain HTTP answered 200")
		}
	}
	if code, out := runBaton(t, []string{"BATON_ETCD_ENDPOINTS=" + m.client, "BATON_ETCD_CA=" + cert}, "status"); code != exitOK {
		t.Errorf("baton status over TLS: exit %d:\n%s", code, out)
	}
}

// TestEtcdTLSFlagErrors: half a TLS setup is a usage error naming the flag.
func TestEtcdTLSFlagErrors(t *testing.T) {
	t.Parallel()
	cert, key := selfSigned(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cert-file", cert}, "--key-file"},
		{[]string{"--key-file", key}, "--cert-file"},
		{[]string{"--cert-file", cert, "--key-file", key}, "https://"},
		{[]string{"--listen-client-urls", "https://127.0.0.1:2379"}, "--cert-file"},
		{[]string{"--cert-file", key, "--key-file", cert, "--listen-client-urls", "https://127.0.0.1:2379"}, "--cert-file"},
	} {
		code, out := runBaton(t, nil, append([]string{"etcd", "--data-dir", filepath.Join(t.TempDir(), "d")}, tc.args...)...)
		if code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want %d naming %s:\n%s", tc.args, code, exitUsage, tc.want, out)
		}
	}
	// A file that cannot be read is a failure, as for every command.
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, args := range [][]string{{"--cert-file", missing, "--key-file", key}, {"--cert-file", cert, "--key-file", missing}} {
		code, out := runBaton(t, nil, append([]string{"etcd", "--data-dir", filepath.Join(t.TempDir(), "d"),
			"--listen-client-urls", "https://127.0.0.1:2379"}, args...)...)
		if code != exitFailure || !strings.Contains(out, missing) {
			t.Errorf("%v: exit %d, want %d naming %s:\n%s", args, code, exitFailure, missing, out)
		}
	}
}

// TestEtcdWarnsOfAnExpiredCertificate: a member given an expired
// certificate for its clients says so as it starts.
func TestEtcdWarnsOfAnExpiredCertificate(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "etcd-ca")
	cert, key := ca.issue("server", x509.ExtKeyUsageServerAuth, time.Now().Add(-time.Minute))
	m := etcdMembers(t, 1)[0]
	m.client = strings.Replace(m.client, "http://", "https://", 1)
	p := startBaton(t, nil, append(m.args(""), "--cert-file", cert, "--key-file", key)...)
	p.waitOutput("baton etcd: WARNING: --cert-file "+cert+" expired at ", 30*time.Second)
}
