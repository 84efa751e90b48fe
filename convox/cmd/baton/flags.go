package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/convox"
	"github.com/batonhq/baton/election"
	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// connFlags are the flags every command that talks to etcd shares. A flag
// that is not given falls back to its BATON_* variable, and under Convox to
// what the runtime implies (convox.Load).
type connFlags struct {
	fs                    *pflag.FlagSet
	endpoints             []string
	prefix, id, ttl       string
	ca, cert, key         string
	username, password    string
	dialTimeout           time.Duration
	withIdentity, withTTL bool
}

// addConnFlags adds the connection flags to fs. identity and ttl say whether
// the command campaigns or locks, and so takes --id and --ttl.
func addConnFlags(fs *pflag.FlagSet, identity, ttl bool) *connFlags {
	c := &connFlags{fs: fs, withIdentity: identity, withTTL: ttl}
	fs.StringSliceVar(&c.endpoints, "endpoints", nil, "etcd client URLs, comma-separated (default $BATON_ETCD_ENDPOINTS; http://etcd:2379 under Convox)")
	fs.StringVar(&c.prefix, "prefix", "", "key prefix of this app's coordination (default $BATON_PREFIX, else /baton; /baton/$APP under Convox)")
	if identity {
		fs.StringVar(&c.id, "id", "", "this instance's identity in status and history (default $BATON_ID, else $HOSTNAME/pid)")
	}
	if ttl {
		fs.StringVar(&c.ttl, "ttl", "", "session TTL: how long a crashed holder keeps leadership or a lock, whole seconds, \"10\" or \"10s\" (default $BATON_TTL, else 10)")
	}
	fs.StringVar(&c.ca, "ca", "", "CA certificate file that verifies etcd's server certificate (default $BATON_ETCD_CA)")
	fs.StringVar(&c.cert, "cert", "", "client certificate file for etcd (default $BATON_ETCD_CERT)")
	fs.StringVar(&c.key, "key", "", "client key file for etcd (default $BATON_ETCD_KEY)")
	fs.StringVar(&c.username, "username", "", "etcd user (default $BATON_ETCD_USERNAME)")
	fs.StringVar(&c.password, "password", "", "etcd password (default $BATON_ETCD_PASSWORD)")
	fs.DurationVar(&c.dialTimeout, "dial-timeout", 5*time.Second, "how long to wait for etcd at start")
	return c
}

// config merges the flags given over the environment.
func (c *connFlags) config() (convox.Config, error) {
	cfg := convox.Load()
	set := func(name string, dst *string, v string) {
		if c.fs.Changed(name) {
			*dst = v
		}
	}
	if c.fs.Changed("endpoints") {
		cfg.Connection.Endpoints = c.endpoints
	}
	set("prefix", &cfg.Prefix, c.prefix)
	set("id", &cfg.Identity, c.id)
	set("ca", &cfg.Connection.CAFile, c.ca)
	set("cert", &cfg.Connection.CertFile, c.cert)
	set("key", &cfg.Connection.KeyFile, c.key)
	set("username", &cfg.Connection.Username, c.username)
	set("password", &cfg.Connection.Password, c.password)
	cfg.Connection.DialTimeout = c.dialTimeout
	if !cfg.Configured() {
		return cfg, fmt.Errorf("no etcd endpoints: give --endpoints or set BATON_ETCD_ENDPOINTS")
	}
	return cfg, nil
}

// electionOptions are the prefix, identity and TTL as election options.
func (c *connFlags) electionOptions(cfg convox.Config) ([]election.Option, error) {
	opts := cfg.ElectionOptions()
	if c.withTTL && c.fs.Changed("ttl") {
		d, err := parseTTL(c.ttl)
		if err != nil {
			return nil, fmt.Errorf("--ttl: %w", err)
		}
		opts = append(opts, election.WithTTL(d))
	}
	return opts, nil
}

// parseTTL reads a whole number of seconds, bare ("10") or as a duration
// ("10s", "1m").
func parseTTL(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 {
			return 0, fmt.Errorf("%q: want at least 1 second", s)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want whole seconds (\"10\") or a duration (\"10s\")", s)
	}
	if d < time.Second || d%time.Second != 0 {
		return 0, fmt.Errorf("%q: want a whole number of seconds, at least 1", s)
	}
	return d, nil
}

// connect merges the configuration and dials etcd, waiting for it at most
// the dial timeout so a wrong endpoint fails fast with its name.
func (c *connFlags) connect(ctx context.Context) (convox.Config, *clientv3.Client, error) {
	cfg, err := c.config()
	if err != nil {
		return cfg, nil, err
	}
	ccfg, err := cfg.Connection.ClientConfig()
	if err != nil {
		return cfg, nil, err
	}
	cli, err := clientv3.New(ccfg)
	if err != nil {
		return cfg, nil, fmt.Errorf("etcd %s: %w", strings.Join(cfg.Connection.Endpoints, ","), err)
	}
	sctx, cancel := context.WithTimeout(ctx, c.dialTimeout)
	defer cancel()
	if _, err := cli.Status(sctx, cli.Endpoints()[0]); err != nil {
		if _, gerr := cli.Get(sctx, "health"); gerr != nil {
			cli.Close()
			return cfg, nil, fmt.Errorf("etcd %s unreachable: %w", strings.Join(cfg.Connection.Endpoints, ","), gerr)
		}
	}
	return cfg, cli, nil
}
