package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/batonhq/baton/convox"
	"github.com/batonhq/baton/internal/redact"
)

// certError is etcd's certificate, refused by baton: no CA to verify it
// (BATON_ETCD_CA), the wrong CA, or a host name the certificate does not
// carry. gRPC retries a failed handshake until the deadline and then
// reports only the deadline, so baton shakes hands itself to find the
// cause. A retry cannot cure it.
type certError struct {
	endpoint string
	hint     string
	err      error
}

func (e *certError) Error() string {
	return fmt.Sprintf("etcd %s: TLS: %v: %s", e.endpoint, e.err, e.hint)
}
func (e *certError) Unwrap() error        { return e.err }
func (e *certError) Is(target error) bool { return target == errRefused }

// handshakeTimeout bounds baton's own TLS handshake with one endpoint.
const handshakeTimeout = 2 * time.Second

// certCause shakes hands with each endpoint as the client would, and
// returns a certError if every endpoint that answers presents a
// certificate baton refuses; nil if one is accepted or none answers.
func certCause(ctx context.Context, cfg convox.Config, tc *tls.Config) error {
	var found error
	for _, ep := range cfg.Connection.Endpoints {
		addr, host, ok := tlsAddress(ep)
		if !ok {
			continue
		}
		c := tc.Clone()
		if c.ServerName == "" {
			c.ServerName = host
		}
		dctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
		conn, err := (&tls.Dialer{Config: c}).DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			conn.Close()
			return nil // this one is fine; the cause is elsewhere
		}
		if hint, ok := certHint(err, cfg.Connection.CAFile); ok && found == nil {
			found = &certError{endpoint: redact.URLPasswords(ep), hint: hint, err: err}
		}
	}
	return found
}

// tlsAddress is the host:port to dial for an endpoint that uses TLS.
func tlsAddress(ep string) (addr, host string, ok bool) {
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
			return "", "", false
		}
		ep = u.Host
	}
	host, _, err := net.SplitHostPort(ep)
	if err != nil {
		return "", "", false
	}
	return ep, host, true
}

// certHint says what to change for a certificate error; ok is false for
// any other error.
func certHint(err error, ca string) (string, bool) {
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &unknown) && ca == "":
		return "no CA was given to verify it with: set BATON_ETCD_CA (or --ca) to the CA certificate that signed etcd's", true
	case errors.As(err, &unknown):
		return fmt.Sprintf("the CA %s did not sign it: set BATON_ETCD_CA (or --ca) to the CA certificate that signed etcd's", ca), true
	case errors.As(err, &hostname):
		names := append([]string(nil), hostname.Certificate.DNSNames...)
		for _, ip := range hostname.Certificate.IPAddresses {
			names = append(names, ip.String())
		}
		return fmt.Sprintf("name the server in the endpoints as its certificate does (%s), or give etcd a certificate for %q", strings.Join(names, ", "), hostname.Host), true
	case errors.As(err, &invalid):
		return "etcd's certificate is not valid (expired, not yet valid, or not for a server): renew it", true
	}
	return "", false
}
