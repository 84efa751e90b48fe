package main

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"time"

	"github.com/batonhq/baton/convox"
	"github.com/batonhq/baton/election"
	"github.com/spf13/pflag"
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
	// access is what the command needs under the prefix.
	access access
}

// addConnFlags adds the connection flags to fs. identity and ttl say whether
// the command campaigns or locks, and so takes --id and --ttl.
func addConnFlags(fs *pflag.FlagSet, identity, ttl bool) *connFlags {
	c := &connFlags{fs: fs, withIdentity: identity, withTTL: ttl}
	fs.StringSliceVar(&c.endpoints, "endpoints", nil, "etcd client URLs, comma-separated; a URL's USER:PASSWORD@ is used as --username and --password (default $BATON_ETCD_ENDPOINTS; http://etcd:2379 under Convox)")
	fs.StringVar(&c.prefix, "prefix", "", "key prefix of this app's coordination (default $BATON_PREFIX, else /baton; /baton/$APP under Convox)")
	if identity {
		fs.StringVar(&c.id, "id", "", "this instance's identity in status and history (default $BATON_ID, else $HOSTNAME/pid)")
	}
	if ttl {
		fs.StringVar(&c.ttl, "ttl", "", "session TTL: how long a crashed holder keeps leadership or a lock, whole seconds, \"10\" or \"10s\", at most 9000000000 (etcd's longest lease) (default $BATON_TTL, else 10)")
	}
	fs.StringVar(&c.ca, "ca", "", "CA certificate file that verifies etcd's server certificate (default $BATON_ETCD_CA)")
	fs.StringVar(&c.cert, "cert", "", "client certificate file for etcd (default $BATON_ETCD_CERT)")
	fs.StringVar(&c.key, "key", "", "client key file for etcd (default $BATON_ETCD_KEY)")
	fs.StringVar(&c.username, "username", "", "etcd user (default $BATON_ETCD_USERNAME)")
	fs.StringVar(&c.password, "password", "", "etcd password (default $BATON_ETCD_PASSWORD)")
	fs.DurationVar(&c.dialTimeout, "dial-timeout", election.DefaultDialTimeout, "how long to wait for etcd to answer at start, any one endpoint being enough (crontab keeps waiting, and says so after each)")
	return c
}

// config merges the flags given over the environment, takes the
// credentials off the endpoints (takeURLCredentials) and checks the
// connection as the client will use it: endpoints, user and password,
// TLS files (read, not dialled). An error shows no password.
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
	if err := takeURLCredentials(&cfg.Connection); err != nil {
		return cfg, err
	}
	conn := cfg.Connection
	if !conn.Configured() {
		// The rest is checked all the same, for crontab --check.
		conn.Endpoints = []string{"127.0.0.1:2379"}
	}
	if _, err := conn.ClientConfig(); err != nil {
		return cfg, redactError(err)
	}
	if !cfg.Configured() {
		return cfg, errNoEndpoints
	}
	return cfg, nil
}

// errNoEndpoints is a configuration without etcd: crontab --check needs
// none, every other use does.
var errNoEndpoints = errors.New("no etcd endpoints: give --endpoints or set BATON_ETCD_ENDPOINTS")

// isUsage reports whether an error of config is a usage error (exit 2,
// 122 in run): every one is but a TLS file that cannot be read (exit 1,
// 121 in run).
func isUsage(err error) bool { return !errors.As(err, new(*iofs.PathError)) }

// electionOptions are the prefix, identity and TTL as election options.
func (c *connFlags) electionOptions(cfg convox.Config) ([]election.Option, error) {
	opts := cfg.ElectionOptions()
	if c.withTTL && c.fs.Changed("ttl") {
		d, err := election.ParseTTL(c.ttl)
		if err != nil {
			return nil, fmt.Errorf("--ttl: %w", err)
		}
		opts = append(opts, election.WithTTL(d))
	} else if v, ok := os.LookupEnv("BATON_TTL"); ok && v != "" {
		// Said here, before anything dials, rather than by every election.
		if _, err := election.ParseTTL(v); err != nil {
			return nil, fmt.Errorf("BATON_TTL: %w", err)
		}
	}
	return opts, nil
}
