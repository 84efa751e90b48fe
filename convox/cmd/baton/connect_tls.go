package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/batonhq/baton/convox"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/redact"
)

// certError is a connection over TLS that cannot work: etcd's certificate,
// refused by baton (no CA to verify it, BATON_ETCD_CA, the wrong CA, or a
// host name the certificate does not carry), baton's client certificate
// refused by etcd (or none given where etcd requires one), or TLS on one
// side only. gRPC retries a failed handshake until the deadline and then
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

// handshakeTimeout bounds baton's own TLS handshake with one endpoint, and
// the wait after it for etcd's verdict on the client's certificate.
const handshakeTimeout = 2 * time.Second

// tlsCause shakes hands with each endpoint as the client would, and
// returns a certError if every endpoint that answers refuses the
// connection over TLS: a server certificate baton refuses, a client
// certificate etcd refuses (or none where etcd requires one), or TLS on one
// side only (http:// to a TLS port, https:// to a plain one). It returns
// nil if one endpoint is fine, none answers, or ctx ends. tc is the
// client's TLS configuration, nil for none.
func tlsCause(ctx context.Context, cfg convox.Config, tc *tls.Config) error {
	var found error
	for _, ep := range cfg.Connection.Endpoints {
		addr, host, secure, ok := tlsAddress(ep, tc != nil)
		if !ok {
			continue
		}
		var hint string
		var err error
		if secure {
			c := tc.Clone()
			if c.ServerName == "" {
				c.ServerName = host
			}
			hint, err = secureCause(ctx, addr, c, cfg.Connection)
		} else {
			hint, err = plainCause(ctx, addr)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			return nil // this one is fine, or gave no answer; the cause is elsewhere
		}
		if found == nil {
			found = &certError{endpoint: redact.URLPasswords(ep), hint: hint, err: err}
		}
	}
	return found
}

// secureCause shakes hands with addr over TLS and waits for etcd's verdict
// on the client's certificate (with TLS 1.3 it comes after the handshake,
// at the first read). It returns what to change and the error, or a nil
// error when etcd accepts the connection or does not answer.
func secureCause(ctx context.Context, addr string, c *tls.Config, conn election.Connection) (string, error) {
	dctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	tconn, err := (&tls.Dialer{Config: c}).DialContext(dctx, "tcp", addr)
	if err == nil {
		defer tconn.Close()
		stop := context.AfterFunc(dctx, func() { tconn.Close() })
		defer stop()
		_ = tconn.SetReadDeadline(time.Now().Add(handshakeTimeout))
		_, err = tconn.Read(make([]byte, 1))
		if !remoteAlert(err) {
			return "", nil // accepted: etcd waits for the client to speak
		}
	}
	if hint, ok := certHint(err, conn.CAFile); ok {
		return hint, err
	}
	if remoteAlert(err) {
		if conn.CertFile == "" {
			return "etcd requires a client certificate (--client-cert-auth) and none was given: set BATON_ETCD_CERT and BATON_ETCD_KEY (or --cert and --key) to one signed by the CA of etcd's --trusted-ca-file", err
		}
		return fmt.Sprintf("etcd refused the client certificate %s (signed by another CA than that of its --trusted-ca-file, expired, or not for a client): give baton one it accepts (BATON_ETCD_CERT, BATON_ETCD_KEY)", conn.CertFile), err
	}
	if ctx.Err() == nil && speaksHTTP(ctx, addr) {
		return "etcd serves no TLS there: use http:// (and no BATON_ETCD_CA, BATON_ETCD_CERT or BATON_ETCD_KEY), or give etcd --cert-file and --key-file", err
	}
	return "", nil
}

// plainCause shakes hands over TLS with addr, which the client speaks to in
// plain text: a server that answers in TLS is a TLS port.
func plainCause(ctx context.Context, addr string) (string, error) {
	dctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	c := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} // only asks whether it speaks TLS
	conn, err := (&tls.Dialer{Config: c}).DialContext(dctx, "tcp", addr)
	if err == nil {
		conn.Close()
	}
	if err == nil || remoteAlert(err) {
		return "etcd serves TLS there: use https:// and set BATON_ETCD_CA (or --ca) to the CA certificate that signed etcd's", errors.New("the endpoint speaks TLS, the client plain text")
	}
	return "", nil
}

// remoteAlert reports whether err is a TLS alert the server sent.
func remoteAlert(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

// speaksHTTP reports whether addr answers a plain HTTP request, as etcd's
// client port does when it serves no TLS.
func speaksHTTP(ctx context.Context, addr string) bool {
	dctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	if _, err := io.WriteString(conn, "GET /version HTTP/1.1\r\nHost: etcd\r\nConnection: close\r\n\r\n"); err != nil {
		return false
	}
	head := make([]byte, 5)
	_, err = io.ReadFull(conn, head)
	return err == nil && string(head) == "HTTP/"
}

// tlsAddress is the host:port to dial for an endpoint, and whether the
// client speaks TLS to it: for https://, and for a bare host:port when the
// client has a TLS configuration (as etcd's client decides).
func tlsAddress(ep string, withTLS bool) (addr, host string, secure, ok bool) {
	secure = withTLS
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
			return "", "", false, false
		}
		ep, secure = u.Host, u.Scheme == "https"
	}
	host, _, err := net.SplitHostPort(ep)
	if err != nil {
		return "", "", false, false
	}
	return ep, host, secure, true
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
