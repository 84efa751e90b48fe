package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/embed"
)

func init() {
	register(command{name: "etcd", summary: "run the bundled etcd server (embedded etcd)", run: runEtcd})
}

const etcdSynopsis = `Usage: baton etcd [flags]

Runs an etcd server, embedded in baton, for baton's coordination: the
bundled etcd service of a Convox app, or etcd on a laptop. Flags are named
as etcd's own, so a manifest reads as an etcd one would. The member prints
"baton etcd: member NAME ready, clients at URLS" once it serves clients,
answers GET /health on its client URLs ({"health":"true",...} while it has
a raft leader; Convox's health check), and on SIGTERM or SIGINT stops
cleanly and exits 0.

One member, as the bundled Convox service (singleton: true, port: 2379,
health: /health):

  baton etcd --listen-client-urls http://0.0.0.0:2379 --advertise-client-urls http://etcd:2379

Three members, one service each (etcd-0, etcd-1 and etcd-2), formed from a
static --initial-cluster:

  baton etcd --name etcd-0 --listen-client-urls http://0.0.0.0:2379 \
    --advertise-client-urls http://etcd-0:2379 --listen-peer-urls http://0.0.0.0:2380 \
    --initial-cluster etcd-0=http://etcd-0:2380,etcd-1=http://etcd-1:2380,etcd-2=http://etcd-2:2380

A member of a new cluster waits for its peers as long as it takes, so the
members may start in any order and at any time; the cluster serves once two
of three are up. --initial-advertise-peer-urls defaults to this member's URLs
in --initial-cluster.

Auth: with BATON_ETCD_USERNAME and BATON_ETCD_PASSWORD in its environment
(the variables its clients read), the member's first start creates etcd's
root user with a random secret that is never printed, creates that user
with a role that may read and write the app's prefix only (BATON_PREFIX,
else /baton/$APP under Convox, else /baton, as the clients resolve it) and
turns auth on. Every later start applies the users again: a changed
password takes effect. Root's secret is kept in etcd itself, under
/baton-etcd/root-secret, which only root may read. --user NAME:PREFIX adds
the user of another app, with the password in $BATON_ETCD_PASSWORD_<NAME>
(NAME in upper case, other characters as '_'). Without any user the member
warns that it runs unauthenticated: anyone who reaches it can change every
key. In a cluster of three, the raft leader sets auth up. Until auth is on
in its data, a member serves clients only on a loopback port of its own:
its client URLs open once auth is on, so no client finds it open.

etcd's JSON gateway (/v3/... over plain HTTP, which curl reaches) is off
unless --enable-grpc-gateway; /health is served either way. With
--cert-file and --key-file clients connect over TLS (https:// client URLs;
clients verify it with BATON_ETCD_CA).

Data: a member keeps its data in --data-dir, which it locks: a second
member on the same directory exits 1 at once. A database that cannot be
read, or a write-ahead log etcd cannot start from (damaged, zeroed, empty,
or cut short of what the database applied), is one line naming the
directory, and exit status 1, checked before etcd starts; so is a --cert-file or --key-file that cannot
be read. On an emptyDir
volume a restart loses the data: the member comes back as a new, empty
cluster. baton's clients recover by themselves (new sessions, new
elections, the next tick runs), and report that etcd came back empty, but
pauses, once-claims, run history and locks are forgotten. A member of three
that comes back empty while its peers still run their cluster rejoins it:
it has the cluster remove its old self and add it afresh, and takes the
cluster's data, so the three members may sit on emptyDir volumes and
restart one at a time, without auth. With auth on only root may change the
members, and root's secret was in the data the member lost: it says so,
with what to do (restore its data dir, or replace it by hand as root), and
exits 1. etcd's old revisions are compacted every
--auto-compaction-retention, so the data stays small.

SIGTERM or SIGINT stops the member at any time, while it starts included.`

// The cost of etcd's password hashes: etcd's default, and bcrypt's bounds.
const (
	etcdBcryptCost = 10
	bcryptMinCost  = 4
	bcryptMaxCost  = 31
)

// etcdLogLevels are the levels --log-level takes, as etcd's own flag does.
var etcdLogLevels = []string{"debug", "info", "warn", "error", "panic", "fatal"}

// etcdFlags are the flags of `baton etcd`.
type etcdFlags struct {
	name, dataDir                 string
	listenClient, advertiseClient []string
	listenPeer, advertisePeer     []string
	initialCluster, state, token  string
	logLevel, compactionRetention string
	certFile, keyFile             string
	gateway                       bool
	bcryptCost                    int
	users                         []string
	fs                            *pflag.FlagSet
}

func runEtcd(ctx context.Context, env *environ, args []string) int {
	fs := flagSet(env, "etcd", etcdSynopsis)
	f := &etcdFlags{fs: fs}
	fs.StringVar(&f.name, "name", "etcd", "this member's name, as in --initial-cluster")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory of the member's data (default \"NAME.etcd\")")
	fs.StringSliceVar(&f.listenClient, "listen-client-urls", []string{"http://127.0.0.1:2379"}, "URLs to serve clients and /health on, comma-separated; http://0.0.0.0:2379 serves every interface")
	fs.StringSliceVar(&f.advertiseClient, "advertise-client-urls", nil, "client URLs to tell clients and peers (default --listen-client-urls, with this host's name for 0.0.0.0)")
	fs.StringSliceVar(&f.listenPeer, "listen-peer-urls", []string{"http://127.0.0.1:2380"}, "URLs to serve the other members on, comma-separated")
	fs.StringSliceVar(&f.advertisePeer, "initial-advertise-peer-urls", nil, "peer URLs to tell the other members (default this member's URLs in --initial-cluster, else --listen-peer-urls)")
	fs.StringVar(&f.initialCluster, "initial-cluster", "", "the members of a new cluster, NAME=PEER-URL,... (default this member alone: NAME=its peer URLs)")
	fs.StringVar(&f.state, "initial-cluster-state", "new", "\"new\" to form a cluster; \"existing\" to join one this member was added to")
	fs.StringVar(&f.token, "initial-cluster-token", "baton-etcd", "a token that tells this cluster from others formed with the same --initial-cluster")
	fs.StringVar(&f.logLevel, "log-level", "warn", "etcd's log level: "+strings.Join(etcdLogLevels, ", ")+"; logs go to stderr")
	fs.StringVar(&f.compactionRetention, "auto-compaction-retention", "1h", "how long etcd keeps old revisions: a duration (\"1h\", \"30m\"), or 0 to keep them all")
	fs.StringVar(&f.certFile, "cert-file", "", "TLS certificate for clients; with --key-file, clients connect with https:// URLs only (they verify it with BATON_ETCD_CA); one expired or not yet valid is served with a warning at start")
	fs.StringVar(&f.keyFile, "key-file", "", "TLS key of --cert-file")
	fs.BoolVar(&f.gateway, "enable-grpc-gateway", false, "serve etcd's JSON gateway (/v3/...) on the client URLs; off, since it takes plain HTTP requests such as curl's")
	fs.IntVar(&f.bcryptCost, "bcrypt-cost", etcdBcryptCost, fmt.Sprintf("cost of hashing the users' passwords, %d to %d: each client's login costs the server this much", bcryptMinCost, bcryptMaxCost))
	fs.StringArrayVar(&f.users, "user", nil, "another app's user NAME:PREFIX, limited to PREFIX/, its password in $BATON_ETCD_PASSWORD_<NAME>; repeatable")
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(env, fs, "unexpected argument %q", fs.Arg(0))
	}
	st := new(memberState)
	cfg, err := f.config(env, st)
	if errors.As(err, new(*iofs.PathError)) {
		return fail(env, "etcd", err) // a file that cannot be read
	}
	if err != nil {
		return usageError(env, fs, "%v", err)
	}
	users, err := etcdUsers(f.users)
	if err != nil {
		return usageError(env, fs, "%v", err)
	}
	if w := certValidity(f.certFile, time.Now()); w != "" {
		fmt.Fprintf(env.stderr, "baton etcd: WARNING: %s\n", w)
	}
	release, err := lockDataDir(cfg.Dir)
	if err != nil {
		return fail(env, "etcd", err)
	}
	defer release()
	applied, err := checkDatabase(ctx, cfg.Dir)
	if err != nil {
		return fail(env, "etcd", err)
	}
	if err := checkWAL(cfg.Dir, applied); err != nil {
		return fail(env, "etcd", err)
	}
	if cfg, err = rejoin(ctx, env, cfg); err != nil {
		return fail(env, "etcd", err)
	}
	if needsPrivateStart(cfg, users) {
		private, err := privateConfig(cfg)
		if err != nil {
			return fail(env, "etcd", err)
		}
		fmt.Fprintf(env.stderr, "baton etcd: member %s sets up auth on %s before it serves clients\n", cfg.Name, urlStrings(private.ListenClientUrls))
		if code := serveEtcd(ctx, env, private, st, users, true); code != authReady {
			return code
		}
	}
	return serveEtcd(ctx, env, cfg, st, users, false)
}

// config validates the flags and turns them into etcd's configuration. Every
// error names its flag.
func (f *etcdFlags) config(env *environ, st *memberState) (*embed.Config, error) {
	if err := checkMemberName("--name", f.name); err != nil {
		return nil, err
	}
	if f.dataDir == "" {
		f.dataDir = f.name + ".etcd"
	}
	listenClient, err := etcdURLs("--listen-client-urls", f.listenClient)
	if err != nil {
		return nil, err
	}
	listenPeer, err := etcdURLs("--listen-peer-urls", f.listenPeer)
	if err != nil {
		return nil, err
	}
	advertiseClient := advertised(listenClient)
	if f.fs.Changed("advertise-client-urls") {
		if advertiseClient, err = etcdURLs("--advertise-client-urls", f.advertiseClient); err != nil {
			return nil, err
		}
		if err := checkAdvertised("--advertise-client-urls", advertiseClient); err != nil {
			return nil, err
		}
	}
	var cluster types.URLsMap
	if f.initialCluster != "" {
		if cluster, err = parseInitialCluster(f.initialCluster); err != nil {
			return nil, err
		}
		if _, ok := cluster[f.name]; !ok {
			return nil, fmt.Errorf("--initial-cluster %q has no member named %q (--name); its members: %s",
				f.initialCluster, f.name, strings.Join(slices.Sorted(maps.Keys(cluster)), ", "))
		}
	}
	var advertisePeer []url.URL
	switch {
	case f.fs.Changed("initial-advertise-peer-urls"):
		if advertisePeer, err = etcdURLs("--initial-advertise-peer-urls", f.advertisePeer); err != nil {
			return nil, err
		}
		if err := checkAdvertised("--initial-advertise-peer-urls", advertisePeer); err != nil {
			return nil, err
		}
	case cluster != nil:
		advertisePeer = cluster[f.name]
	default:
		advertisePeer = advertised(listenPeer)
	}
	if cluster == nil {
		cluster = types.URLsMap{f.name: advertisePeer}
	}
	switch f.state {
	case embed.ClusterStateFlagNew, embed.ClusterStateFlagExisting:
	default:
		return nil, fmt.Errorf("--initial-cluster-state %q: want %q or %q", f.state, embed.ClusterStateFlagNew, embed.ClusterStateFlagExisting)
	}
	if f.token == "" {
		return nil, fmt.Errorf("--initial-cluster-token is empty")
	}
	if !slices.Contains(etcdLogLevels, f.logLevel) {
		return nil, fmt.Errorf("--log-level %q: want one of %s", f.logLevel, strings.Join(etcdLogLevels, ", "))
	}
	retention, err := compactionRetention(f.compactionRetention)
	if err != nil {
		return nil, err
	}
	if f.bcryptCost < bcryptMinCost || f.bcryptCost > bcryptMaxCost {
		return nil, fmt.Errorf("--bcrypt-cost %d: want %d to %d", f.bcryptCost, bcryptMinCost, bcryptMaxCost)
	}
	if err := checkClientTLS(f.certFile, f.keyFile, listenClient, advertiseClient); err != nil {
		return nil, err
	}

	cfg := embed.NewConfig()
	cfg.Name = f.name
	cfg.Dir = f.dataDir
	cfg.ListenClientUrls = listenClient
	cfg.AdvertiseClientUrls = advertiseClient
	cfg.ListenPeerUrls = listenPeer
	cfg.AdvertisePeerUrls = advertisePeer
	cfg.InitialCluster = cluster.String()
	cfg.ClusterState = f.state
	cfg.InitialClusterToken = f.token
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = retention
	cfg.ListenMetricsUrls = nil
	cfg.LogLevel = f.logLevel
	cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = f.certFile, f.keyFile
	cfg.EnableGRPCGateway = f.gateway
	cfg.BcryptCost = uint(f.bcryptCost)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(etcdLogger(env, f.logLevel, st))
	return cfg, nil
}
