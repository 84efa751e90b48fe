package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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

Data: a member keeps its data in --data-dir. On an emptyDir volume a restart
loses it: the member comes back as a new, empty cluster. baton's clients
recover by themselves (new sessions, new elections, the next tick runs), but
pauses, last runs and run history are forgotten. A member of three that
comes back empty while its peers still run their cluster rejoins it: it has
the cluster remove its old self and add it afresh, and takes the cluster's
data, so the three members may sit on emptyDir volumes and restart one at a
time. etcd's old revisions are compacted every --auto-compaction-retention,
so the data stays small.`

// etcdLogLevels are the levels --log-level takes, as etcd's own flag does.
var etcdLogLevels = []string{"debug", "info", "warn", "error", "panic", "fatal"}

// etcdFlags are the flags of `baton etcd`.
type etcdFlags struct {
	name, dataDir                 string
	listenClient, advertiseClient []string
	listenPeer, advertisePeer     []string
	initialCluster, state, token  string
	logLevel, compactionRetention string
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
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(env, fs, "unexpected argument %q", fs.Arg(0))
	}
	stopping := new(atomic.Bool)
	cfg, err := f.config(env, stopping)
	if err != nil {
		return usageError(env, fs, "%v", err)
	}
	if cfg, err = rejoin(ctx, env, cfg); err != nil {
		return fail(env, "etcd", err)
	}
	return serveEtcd(ctx, env, cfg, stopping)
}

// config validates the flags and turns them into etcd's configuration. Every
// error names its flag.
func (f *etcdFlags) config(env *environ, stopping *atomic.Bool) (*embed.Config, error) {
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
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(etcdLogger(env, f.logLevel, stopping))
	return cfg, nil
}

// etcdURLs parses a URL flag as etcd would, with an error naming the flag.
func etcdURLs(flag string, values []string) ([]url.URL, error) {
	if len(values) == 0 {
		return nil, fmt.Errorf("%s is empty", flag)
	}
	us, err := types.NewURLs(values)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", flag, strings.Join(values, ","), err)
	}
	return us, nil
}

// checkAdvertised rejects an address others cannot dial.
func checkAdvertised(flag string, us []url.URL) error {
	for _, u := range us {
		if unspecified(u) {
			return fmt.Errorf("%s %q: %s is not an address others can reach; give this host's name", flag, u.String(), u.Hostname())
		}
	}
	return nil
}

// advertised is what to advertise for listen URLs by default: the URLs
// themselves, with this host's name in place of 0.0.0.0 or [::].
func advertised(listen []url.URL) []url.URL {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	out := make([]url.URL, len(listen))
	for i, u := range listen {
		out[i] = u
		if unspecified(u) {
			out[i].Host = net.JoinHostPort(host, u.Port())
		}
	}
	return out
}

func unspecified(u url.URL) bool {
	if u.Scheme == "unix" || u.Scheme == "unixs" {
		return false
	}
	h := u.Hostname()
	if h == "" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsUnspecified()
}

// parseInitialCluster reads NAME=URL,NAME=URL,... (a name may repeat, for a
// member with several peer URLs).
func parseInitialCluster(s string) (types.URLsMap, error) {
	urls := map[string][]string{}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		name, u, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("--initial-cluster %q: entry %q is not NAME=PEER-URL", s, entry)
		}
		if err := checkMemberName("--initial-cluster "+strconv.Quote(s)+": entry "+strconv.Quote(entry), name); err != nil {
			return nil, err
		}
		urls[name] = append(urls[name], u)
	}
	m := types.URLsMap{}
	for name, us := range urls {
		parsed, err := types.NewURLs(us)
		if err != nil {
			return nil, fmt.Errorf("--initial-cluster %q: member %q: %v", s, name, err)
		}
		m[name] = parsed
	}
	return m, nil
}

func checkMemberName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s: empty member name", what)
	case strings.ContainsAny(name, "=, \t"):
		return fmt.Errorf("%s: member name %q has '=', ',' or a space", what, name)
	}
	return nil
}

// compactionRetention checks a retention as etcd's periodic compactor reads
// it: a duration, or a bare number of hours.
func compactionRetention(s string) (string, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 0 {
		return s, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return s, nil
	}
	return "", fmt.Errorf("--auto-compaction-retention %q: want a duration such as \"1h\", or 0", s)
}

// etcdLogger logs etcd's messages at level and above to stderr, as JSON
// lines like etcd's own, less the noise of a normal start and stop.
func etcdLogger(env *environ, level string, stopping *atomic.Bool) *zap.Logger {
	var lvl zapcore.Level
	_ = lvl.Set(level) // checked against etcdLogLevels
	core := zapcore.NewCore(zapcore.NewJSONEncoder(logutil.DefaultZapLoggerConfig.EncoderConfig), zapcore.AddSync(env.stderr), lvl)
	return zap.New(quietCore{core, stopping}, zap.AddCaller())
}

// quietCore drops etcd's messages that say nothing wrong here: that clients
// and gRPC share a port, which is the point, since a Convox service has one
// port and /health must be on it; and, once the member is stopping, those
// of its listeners being closed.
type quietCore struct {
	zapcore.Core
	stopping *atomic.Bool
}

const (
	singlePortWarning = "Running http and grpc server on single port. This is not recommended for production."
	servingClosed     = "setting up serving from embedded etcd failed."
)

func (c quietCore) With(fields []zapcore.Field) zapcore.Core {
	return quietCore{c.Core.With(fields), c.stopping}
}

func (c quietCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Message == singlePortWarning || c.stopping.Load() && (e.Message == servingClosed || strings.HasSuffix(e.Message, " grpc server due to error")) {
		return ce
	}
	return c.Core.Check(e, ce)
}

// A member still waiting for its peers says so after etcdWaitNotice, then
// at doubling intervals up to etcdWaitNoticeMax.
const (
	etcdWaitNotice    = 10 * time.Second
	etcdWaitNoticeMax = 5 * time.Minute
)

// serveEtcd runs the member until a signal, ctx's end or a fatal error.
func serveEtcd(ctx context.Context, env *environ, cfg *embed.Config, stopping *atomic.Bool) int {
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fail(env, "etcd", fmt.Errorf("start member %s: %w", cfg.Name, err))
	}
	clients := urlStrings(cfg.AdvertiseClientUrls)
	fmt.Fprintf(env.stderr, "baton etcd: member %s starting, data in %s, initial cluster %s\n", cfg.Name, cfg.Dir, cfg.InitialCluster)
	every := etcdWaitNotice
	notice := time.NewTimer(every)
	defer notice.Stop()
	ready := false
	readyc := e.Server.ReadyNotify()
	for {
		select {
		case <-readyc:
			ready, readyc = true, nil
			notice.Stop()
			fmt.Fprintf(env.stdout, "baton etcd: member %s ready, clients at %s\n", cfg.Name, clients)
		case <-notice.C:
			fmt.Fprintf(env.stderr, "baton etcd: member %s still waiting for its peers (%s)\n", cfg.Name, cfg.InitialCluster)
			every = min(2*every, etcdWaitNoticeMax)
			notice.Reset(every)
		case err, ok := <-e.Err():
			if !ok {
				err = fmt.Errorf("stopped")
			}
			stopping.Store(true)
			e.Server.HardStop()
			e.Close()
			return fail(env, "etcd", fmt.Errorf("member %s: %w", cfg.Name, err))
		case sig := <-env.signals:
			fmt.Fprintf(env.stderr, "baton etcd: member %s stopping (%v)\n", cfg.Name, sig)
			return stopEtcd(env, e, ready, stopping)
		case <-ctx.Done():
			return stopEtcd(env, e, ready, stopping)
		}
	}
}

// etcdStopGrace bounds a graceful stop. A raft leader hands its leadership
// to a peer first, which etcd gives up on only after seven seconds when the
// peers are stopping too, as in a deploy of every member at once.
const etcdStopGrace = 4 * time.Second

// stopEtcd closes the member, a raft leader handing its leadership over
// first, and stops it at once past etcdStopGrace or on a second signal:
// whatever was committed is on disk either way.
func stopEtcd(env *environ, e *embed.Etcd, ready bool, stopping *atomic.Bool) int {
	stopping.Store(true)
	name := e.Config().Name
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !ready {
			// Nothing to hand over; do not wait on a cluster that never formed.
			e.Server.HardStop()
		}
		e.Close()
	}()
	grace := time.NewTimer(etcdStopGrace)
	defer grace.Stop()
	select {
	case <-done:
		fmt.Fprintf(env.stderr, "baton etcd: member %s stopped\n", name)
		return exitOK
	case <-grace.C:
		e.Server.HardStop()
		fmt.Fprintf(env.stderr, "baton etcd: member %s stopped; no peer took its leadership within %v\n", name, etcdStopGrace)
		return exitOK
	case sig := <-env.signals:
		e.Server.HardStop()
		fmt.Fprintf(env.stderr, "baton etcd: member %s stopped at once (%v)\n", name, sig)
		return exitFailure
	}
}

func urlStrings(us []url.URL) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = u.String()
	}
	return strings.Join(s, ",")
}
