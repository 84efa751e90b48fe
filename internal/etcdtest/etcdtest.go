// Package etcdtest runs real etcd members in the test process: one member, or a
// three-member cluster whose members can be stopped, killed, restarted and
// wiped, all on 127.0.0.1 ports with data in the test's temporary directory.
//
// Every server and client it makes is closed by t.Cleanup, clients first, so
// a test needs no teardown of its own.
package etcdtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startTimeout bounds how long a member may take to become ready.
const startTimeout = 30 * time.Second

// TLS configures a member to serve clients over TLS.
type TLS struct {
	CertFile, KeyFile string
	// TrustedCAFile, when set, makes the member require client certificates
	// signed by that CA.
	TrustedCAFile string
}

// Member is one in-process etcd server.
type Member struct {
	name    string
	dir     string
	client  url.URL
	peer    url.URL
	cluster string // the static --initial-cluster of the member's cluster
	token   string
	tls     *TLS
	quota   int64 // --quota-backend-bytes; 0 for etcd's default

	mu      sync.Mutex
	etcd    *embed.Etcd
	started bool // the data dir holds a member that has run before
}

// Start runs a one-member cluster and returns it once it serves clients.
func Start(t testing.TB) *Member {
	t.Helper()
	return startCluster(t, 1, nil).Members[0]
}

// StartTLS runs a one-member cluster that serves clients over TLS only.
func StartTLS(t testing.TB, cfg TLS) *Member {
	t.Helper()
	return startCluster(t, 1, &cfg).Members[0]
}

// Name is the member's name in its cluster.
func (m *Member) Name() string { return m.name }

// Endpoint is the member's client URL.
func (m *Member) Endpoint() string { return m.client.String() }

// Endpoints returns the member's client URL as a one-element list.
func (m *Member) Endpoints() []string { return []string{m.client.String()} }

// Addr is the member's client address, host:port, for a proxy to dial.
func (m *Member) Addr() string { return m.client.Host }

// Client returns a client of this member that is closed before the member at
// the end of the test.
func (m *Member) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	return NewClient(t, m.Endpoints()...)
}

// NewClient returns a client of the given endpoints, closed by t.Cleanup.
func NewClient(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(ClientConfig(endpoints...))
	if err != nil {
		t.Fatalf("etcdtest: client of %v: %v", endpoints, err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// ClientConfig is the client configuration tests use: quiet, and quick to
// notice a dead connection.
func ClientConfig(endpoints ...string) clientv3.Config {
	return clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               zap.NewNop(),
	}
}

// Running reports whether the member is serving.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.etcd != nil
}

// Stop shuts the member down gracefully: a raft leader hands its leadership
// to another member first.
func (m *Member) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.etcd == nil {
		return
	}
	m.etcd.Close()
	<-m.etcd.Server.StopNotify()
	m.etcd = nil
}

// Kill stops the member abruptly, as a crashed process would stop: no
// leadership transfer, connections dropped.
func (m *Member) Kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.etcd == nil {
		return
	}
	m.etcd.Server.HardStop()
	m.etcd.Close()
	m.etcd = nil
}

// Restart starts a stopped or killed member again on the same ports and data.
func (m *Member) Restart(t testing.TB) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.etcd != nil {
		t.Fatalf("etcdtest: restart of running member %s", m.name)
	}
	if err := m.startLocked(); err != nil {
		t.Fatalf("etcdtest: restart %s: %v", m.name, err)
	}
	if err := waitReady(m.etcd); err != nil {
		t.Fatalf("etcdtest: restart %s: %v", m.name, err)
	}
}

// Wipe stops the member, deletes its data and starts it again as a new,
// empty one-member cluster, as a bundled etcd on an emptyDir volume comes
// back after a restart. Only a member of a one-member cluster can be wiped
// alone.
func (m *Member) Wipe(t testing.TB) {
	t.Helper()
	m.Kill()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := os.RemoveAll(m.dir); err != nil {
		t.Fatalf("etcdtest: wipe %s: %v", m.name, err)
	}
	m.started = false
	m.token = fmt.Sprintf("%s-%d", m.token, time.Now().UnixNano())
	if err := m.startLocked(); err != nil {
		t.Fatalf("etcdtest: start wiped %s: %v", m.name, err)
	}
	if err := waitReady(m.etcd); err != nil {
		t.Fatalf("etcdtest: start wiped %s: %v", m.name, err)
	}
}

// IsRaftLeader reports whether the member is running and leads its cluster.
func (m *Member) IsRaftLeader() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.etcd == nil {
		return false
	}
	s := m.etcd.Server
	return uint64(s.MemberID()) == s.Lead()
}

func (m *Member) startLocked() error {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenClientUrls = []url.URL{m.client}
	cfg.AdvertiseClientUrls = []url.URL{m.client}
	cfg.ListenPeerUrls = []url.URL{m.peer}
	cfg.AdvertisePeerUrls = []url.URL{m.peer}
	cfg.InitialCluster = m.cluster
	cfg.InitialClusterToken = m.token
	cfg.ClusterState = embed.ClusterStateFlagNew
	if m.started {
		cfg.ClusterState = embed.ClusterStateFlagExisting
	}
	cfg.ListenMetricsUrls = nil
	cfg.UnsafeNoFsync = true // test data is thrown away; fsync only slows tests
	cfg.BcryptCost = 4       // the minimum: auth tests hash passwords, not guard them
	cfg.QuotaBackendBytes = m.quota
	if os.Getenv("BATON_ETCDTEST_LOG") == "" {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	} else {
		cfg.LogLevel = os.Getenv("BATON_ETCDTEST_LOG")
	}
	if m.tls != nil {
		cfg.ClientTLSInfo = transport.TLSInfo{
			CertFile:       m.tls.CertFile,
			KeyFile:        m.tls.KeyFile,
			TrustedCAFile:  m.tls.TrustedCAFile,
			ClientCertAuth: m.tls.TrustedCAFile != "",
		}
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	m.etcd = e
	m.started = true
	return nil
}

func waitReady(e *embed.Etcd) error {
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case err := <-e.Err():
		e.Close()
		return err
	case <-time.After(startTimeout):
		e.Server.HardStop()
		e.Close()
		return fmt.Errorf("not ready within %v", startTimeout)
	}
}

// Cluster is a set of members that form one etcd cluster.
type Cluster struct {
	Members []*Member
}

// StartCluster runs an n-member cluster and returns it once every member
// serves clients.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return startCluster(t, n, nil)
}

func startCluster(t testing.TB, n int, tlsCfg *TLS) *Cluster {
	t.Helper()
	c, err := launch(t.TempDir(), n, tlsCfg)
	if c != nil {
		t.Cleanup(c.Kill)
	}
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	return c
}

// StartMain runs a one-member cluster outside a test, for a TestMain whose
// examples need etcd. stop kills the member and deletes its data.
func StartMain() (m *Member, stop func(), err error) {
	dir, err := os.MkdirTemp("", "etcdtest")
	if err != nil {
		return nil, nil, err
	}
	c, err := launch(dir, 1, nil)
	stop = func() {
		if c != nil {
			c.Kill()
		}
		os.RemoveAll(dir)
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	return c.Members[0], stop, nil
}

// Kill kills every member.
func (c *Cluster) Kill() {
	for _, m := range c.Members {
		m.Kill()
	}
}

// launch starts n members with data under base and waits until all serve.
// On error it returns the members started so far, for the caller to kill.
func launch(base string, n int, tlsCfg *TLS) (*Cluster, error) {
	ports, err := FreePorts(2 * n)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	token := fmt.Sprintf("etcdtest-%d", time.Now().UnixNano())
	c := &Cluster{}
	var initial []string
	for i := 0; i < n; i++ {
		m := &Member{
			name:   fmt.Sprintf("m%d", i),
			dir:    filepath.Join(base, fmt.Sprintf("m%d", i)),
			client: url.URL{Scheme: scheme, Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])},
			peer:   url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])},
			token:  token,
			tls:    tlsCfg,
		}
		initial = append(initial, m.name+"="+m.peer.String())
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		m.cluster = strings.Join(initial, ",")
	}
	// Members of a new cluster wait for each other, so start them together.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, m := range c.Members {
		m.mu.Lock()
		err := m.startLocked()
		e := m.etcd
		m.mu.Unlock()
		if err != nil {
			return c, fmt.Errorf("start %s: %w", m.name, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = waitReady(e)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return c, fmt.Errorf("start %s: %w", c.Members[i].name, err)
		}
	}
	return c, nil
}

// Endpoints returns every member's client URL.
func (c *Cluster) Endpoints() []string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.Endpoint())
	}
	return eps
}

// Client returns a client of every member, closed before the members at the
// end of the test.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	return NewClient(t, c.Endpoints()...)
}

// RaftLeader waits until the running members agree on a leader and returns it.
func (c *Cluster) RaftLeader(t testing.TB) *Member {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		for _, m := range c.Members {
			if m.IsRaftLeader() {
				return m
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("etcdtest: no raft leader within %v", startTimeout)
	return nil
}

// WaitHealthy waits until a linearizable read through every running member
// succeeds, which needs a quorum and a leader.
func (c *Cluster) WaitHealthy(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for _, m := range c.Members {
		if !m.Running() {
			continue
		}
		cli := m.Client(t)
		for {
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			_, err := cli.Get(rctx, "etcdtest/health")
			rcancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("etcdtest: member %s not healthy: %v", m.name, err)
			}
		}
	}
}
