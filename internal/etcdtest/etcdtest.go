// Package etcdtest runs real etcd for tests: a member shared by a test
// binary's tests, each in a key space of its own (Shared), and members of a
// test's own (Start, StartCluster) that it can stop, kill, pause, restart
// and wipe; all on 127.0.0.1 ports, with a TCP proxy (NewProxy) that delays,
// cuts or blackholes one client's traffic.
//
// Every member runs in a process of its own, built once without the race
// detector (server/): a test binary built with -race instruments baton's
// code, not etcd's, and a killed member's connections are reset by the
// kernel at once, as a crashed host's are. A member never outlives the test
// process that started it.
//
// Every server and client it makes is closed by t.Cleanup, clients first, so
// a test needs no teardown of its own.
package etcdtest

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"testing"
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
