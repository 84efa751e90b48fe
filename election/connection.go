package election

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/redact"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultDialTimeout is how long a first connection to etcd may take.
const DefaultDialTimeout = 5 * time.Second

// Connection says how to reach etcd: the BATON_ETCD_* variables, or the
// baton command's flags, in one place.
type Connection struct {
	// Endpoints are client URLs (http://etcd:2379) or host:port pairs, with
	// no user information: etcd's client never sends it, so an endpoint
	// with one (http://app:secret@etcd:2379) is an error, and the user and
	// password go in Username and Password.
	Endpoints []string
	// Username and Password authenticate with etcd's auth, when enabled.
	Username, Password string
	// CAFile verifies the server's certificate; CertFile and KeyFile are the
	// client's own, for servers that require client certificates. Any of
	// them switches the connection to TLS.
	CAFile, CertFile, KeyFile string
	// DialTimeout bounds the first connection; zero means DefaultDialTimeout.
	DialTimeout time.Duration
}

// ConnectionFromEnv reads BATON_ETCD_ENDPOINTS (a comma list),
// BATON_ETCD_USERNAME, BATON_ETCD_PASSWORD, BATON_ETCD_CA, BATON_ETCD_CERT and
// BATON_ETCD_KEY. Endpoints is empty when coordination is not configured.
func ConnectionFromEnv() Connection {
	var eps []string
	for _, e := range strings.Split(os.Getenv("BATON_ETCD_ENDPOINTS"), ",") {
		if e = strings.TrimSpace(e); e != "" {
			eps = append(eps, e)
		}
	}
	return Connection{
		Endpoints: eps,
		Username:  os.Getenv("BATON_ETCD_USERNAME"),
		Password:  os.Getenv("BATON_ETCD_PASSWORD"),
		CAFile:    os.Getenv("BATON_ETCD_CA"),
		CertFile:  os.Getenv("BATON_ETCD_CERT"),
		KeyFile:   os.Getenv("BATON_ETCD_KEY"),
	}
}

// Configured reports whether any endpoint is set.
func (c Connection) Configured() bool { return len(c.Endpoints) > 0 }

// ClientConfig validates the connection and returns an etcd client
// configuration for it. It reads the certificate files; it does not dial.
func (c Connection) ClientConfig() (clientv3.Config, error) {
	if len(c.Endpoints) == 0 {
		return clientv3.Config{}, errors.New("election: no etcd endpoints (set BATON_ETCD_ENDPOINTS)")
	}
	secure := c.CAFile != "" || c.CertFile != "" || c.KeyFile != ""
	for _, ep := range c.Endpoints {
		if err := checkEndpoint(ep); err != nil {
			return clientv3.Config{}, err
		}
		if strings.HasPrefix(ep, "https://") {
			secure = true
		}
	}
	if (c.Username == "") != (c.Password == "") {
		return clientv3.Config{}, errors.New("election: etcd username and password must be given together")
	}
	cfg := clientv3.Config{
		Endpoints:            c.Endpoints,
		Username:             c.Username,
		Password:             c.Password,
		DialTimeout:          c.DialTimeout,
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if secure {
		tc, err := c.tlsConfig()
		if err != nil {
			return clientv3.Config{}, err
		}
		cfg.TLS = tc
	}
	return cfg, nil
}

func checkEndpoint(ep string) error {
	// What is parsed carries no user information: a parser's error quotes
	// the piece it could not parse, which may be a piece of a password
	// (`invalid port ":pa"` of http://app:pa/ss@etcd:2379).
	shown := redact.Endpoint(ep)
	ep, userinfo := redact.CutUserinfo(ep)
	if userinfo != "" {
		return fmt.Errorf("election: etcd endpoint %q carries user information, which etcd's client never sends: give the user and password as Username and Password (BATON_ETCD_USERNAME, BATON_ETCD_PASSWORD)", shown)
	}
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil {
			return fmt.Errorf("election: etcd endpoint %q: %v", shown, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "unix" && u.Scheme != "unixs" {
			return fmt.Errorf("election: etcd endpoint %q: scheme %q is not http or https", shown, u.Scheme)
		}
		if u.Host == "" {
			return fmt.Errorf("election: etcd endpoint %q has no host", shown)
		}
		return nil
	}
	host, port, err := net.SplitHostPort(ep)
	if err != nil || strings.ContainsAny(host, " \t\n") {
		return fmt.Errorf("election: etcd endpoint %q: want a URL or host:port", shown)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("election: etcd endpoint %q: port %q is not a number", shown, port)
	}
	return nil
}

func (c Connection) tlsConfig() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("election: etcd CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("election: etcd CA %s: no PEM certificate in it", c.CAFile)
		}
		tc.RootCAs = pool
	}
	switch {
	case c.CertFile != "" && c.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("election: etcd client certificate %s and key %s: %w", c.CertFile, c.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	case c.CertFile != "":
		return nil, fmt.Errorf("election: etcd client certificate %s given without a key (BATON_ETCD_KEY)", c.CertFile)
	case c.KeyFile != "":
		return nil, fmt.Errorf("election: etcd client key %s given without a certificate (BATON_ETCD_CERT)", c.KeyFile)
	}
	return tc, nil
}
