// Package convox fits baton to the Convox runtime: it detects a Convox
// process from its environment and derives where etcd is, which key prefix
// the app uses and who this process is, so that a Go app coordinates its
// cron with one call.
//
// Under Convox every process of an app sees APP, RACK, SERVICE, RELEASE,
// BUILD and PORT, and HOSTNAME is the process id that `convox ps` shows.
// The bundled etcd service is reachable at http://etcd:2379 inside the app.
// So, unless the BATON_* variables say otherwise:
//
//	endpoints  http://etcd:2379
//	prefix     /baton/<APP>
//	identity   $HOSTNAME/<pid>, election's one rule (DefaultIdentity): the pod
//	           name that `convox ps` shows, and the pid, so two baton processes
//	           of one pod (an app's cronx and a `baton crontab`) differ
//
// Outside Convox, Load reports so and derives nothing: the BATON_*
// variables alone apply, as everywhere else.
package convox

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultEndpoint is the bundled etcd service's address inside an app.
const DefaultEndpoint = "http://etcd:2379"

// Runtime is what a Convox process knows of itself.
type Runtime struct {
	App, Rack, Service, Release, Build, Port string
	// Process is the process id (HOSTNAME), as `convox ps` lists it.
	Process string
}

// Detect reads the Convox runtime from the environment. ok is false outside
// Convox: APP, SERVICE and RELEASE are not all set.
func Detect() (r Runtime, ok bool) {
	r = Runtime{
		App:     os.Getenv("APP"),
		Rack:    os.Getenv("RACK"),
		Service: os.Getenv("SERVICE"),
		Release: os.Getenv("RELEASE"),
		Build:   os.Getenv("BUILD"),
		Port:    os.Getenv("PORT"),
		Process: os.Getenv("HOSTNAME"),
	}
	return r, r.App != "" && r.Service != "" && r.Release != ""
}

// Config is baton's configuration for this process.
type Config struct {
	// Runtime is the Convox runtime; zero outside Convox.
	Runtime Runtime
	// InConvox reports whether this is a Convox process.
	InConvox bool
	// Connection says how to reach etcd.
	Connection election.Connection
	// Prefix and Identity are the key prefix and this process's identity.
	Prefix, Identity string
}

// Load derives the configuration from the environment. BATON_* variables
// win over what Convox implies.
func Load() Config {
	r, ok := Detect()
	c := Config{Runtime: r, InConvox: ok, Connection: election.ConnectionFromEnv()}
	c.Prefix = os.Getenv("BATON_PREFIX")
	c.Identity = os.Getenv("BATON_ID")
	if !ok {
		return c
	}
	if !c.Connection.Configured() {
		c.Connection.Endpoints = []string{DefaultEndpoint}
	}
	if c.Prefix == "" {
		c.Prefix = "/baton/" + r.App
	}
	if c.Identity == "" {
		c.Identity = election.DefaultIdentity()
	}
	return c
}

// Configured reports whether coordination has an etcd to use: under Convox
// always, elsewhere when BATON_ETCD_ENDPOINTS is set.
func (c Config) Configured() bool { return c.Connection.Configured() }

// ElectionOptions are the prefix and identity as election options; empty
// values are left to election's own defaults.
func (c Config) ElectionOptions() []election.Option {
	var opts []election.Option
	if c.Prefix != "" {
		opts = append(opts, election.WithPrefix(c.Prefix))
	}
	if c.Identity != "" {
		opts = append(opts, election.WithIdentity(c.Identity))
	}
	return opts
}

// Client connects to etcd. The caller closes the client.
func (c Config) Client() (*clientv3.Client, error) {
	if !c.Configured() {
		return nil, errors.New("convox: no etcd configured: not a Convox process and BATON_ETCD_ENDPOINTS is unset")
	}
	cfg, err := c.Connection.ClientConfig()
	if err != nil {
		return nil, err
	}
	return clientv3.New(cfg)
}

// CronOptions coordinate a cronx.Cron through client with this
// configuration. The scheduler keeps cronx's default name, so the services
// of one app that run the same code (web and worker from one image) share
// its ticks rather than each running them:
//
//	cfg := convox.Load()
//	cli, err := cfg.Client()
//	c := cronx.New(cfg.CronOptions(cli)...)
func (c Config) CronOptions(client *clientv3.Client, extra ...cronx.Option) []cronx.Option {
	opts := []cronx.Option{cronx.WithEtcd(client), cronx.WithElection(c.ElectionOptions()...)}
	return append(opts, extra...)
}

// String describes the configuration in one line, for a start-up log.
func (c Config) String() string {
	if !c.InConvox {
		if !c.Configured() {
			return "convox: not a Convox process (APP, SERVICE, RELEASE unset); no etcd configured"
		}
		return fmt.Sprintf("convox: not a Convox process; etcd %s from BATON_ETCD_ENDPOINTS", strings.Join(c.Connection.Endpoints, ","))
	}
	return fmt.Sprintf("convox: app %s service %s process %s; etcd %s, prefix %s",
		c.Runtime.App, c.Runtime.Service, c.Identity, strings.Join(c.Connection.Endpoints, ","), c.Prefix)
}
