// Command server is the etcd member that package etcdtest runs for tests, in
// a process of its own: built once without the race detector, so that a
// test binary built with -race instruments baton's code and not etcd's, and
// killed as a real process is, its sockets reset by the kernel at once.
//
// It is started by etcdtest only. It prints "ready" on standard output once
// the member serves clients, and errors on standard error. It stops
// gracefully on SIGTERM or SIGINT (a raft leader hands over first), and
// at once when its standard input reaches end of file: the test process
// that started it has exited, however it died.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

func main() {
	var (
		name     = flag.String("name", "m0", "member name")
		dir      = flag.String("data-dir", "", "data directory")
		client   = flag.String("client-url", "", "client URL to listen on and advertise")
		peer     = flag.String("peer-url", "", "peer URL to listen on and advertise")
		cluster  = flag.String("initial-cluster", "", "the static initial cluster")
		token    = flag.String("initial-cluster-token", "", "the cluster token")
		existing = flag.Bool("existing", false, "join the cluster as it is on disk (a restart)")
		certFile = flag.String("cert-file", "", "serve clients over TLS with this certificate")
		keyFile  = flag.String("key-file", "", "the certificate's key")
		caFile   = flag.String("trusted-ca-file", "", "require client certificates signed by this CA")
		quota    = flag.Int64("quota-backend-bytes", 0, "the backend's quota (0: etcd's default)")
		removeOn = flag.Bool("remove-on-exit", false, "delete the data directory when the test process exits")
		logLevel = flag.String("log-level", "", "etcd's log level (default: none)")
	)
	flag.Parse()
	if err := serve(*name, *dir, *client, *peer, *cluster, *token, *existing, *certFile, *keyFile, *caFile, *quota, *removeOn, *logLevel); err != nil {
		fmt.Fprintln(os.Stderr, "etcdtest server:", err)
		os.Exit(1)
	}
}

func serve(name, dir, client, peer, cluster, token string, existing bool, certFile, keyFile, caFile string, quota int64, removeOnExit bool, logLevel string) error {
	cu, err := url.Parse(client)
	if err != nil {
		return fmt.Errorf("-client-url: %w", err)
	}
	pu, err := url.Parse(peer)
	if err != nil {
		return fmt.Errorf("-peer-url: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cluster
	cfg.InitialClusterToken = token
	cfg.ClusterState = embed.ClusterStateFlagNew
	if existing {
		cfg.ClusterState = embed.ClusterStateFlagExisting
	}
	cfg.ListenMetricsUrls = nil
	cfg.UnsafeNoFsync = true // test data is thrown away; fsync only slows tests
	cfg.BcryptCost = 4       // the minimum: auth tests hash passwords, not guard them
	cfg.QuotaBackendBytes = quota
	if logLevel == "" {
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	} else {
		cfg.LogLevel = logLevel
	}
	if certFile != "" {
		cfg.ClientTLSInfo = transport.TLSInfo{
			CertFile:       certFile,
			KeyFile:        keyFile,
			TrustedCAFile:  caFile,
			ClientCertAuth: caFile != "",
		}
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	orphaned := make(chan struct{})
	go func() {
		// The test process holds the write end: end of file means it exited.
		io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		close(orphaned)
	}()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-e.Server.ReadyNotify():
		fmt.Println("ready")
	case err := <-e.Err():
		e.Close()
		return err
	case <-orphaned:
		e.Server.HardStop()
		cleanup(dir, removeOnExit)
		return nil
	case <-stop:
		e.Close()
		return nil
	}
	select {
	case err := <-e.Err():
		if err != nil && !strings.Contains(err.Error(), "closed") {
			fmt.Fprintln(os.Stderr, "etcdtest server:", err)
		}
	case <-orphaned:
		e.Server.HardStop()
		cleanup(dir, removeOnExit)
	case <-stop:
		e.Close()
		<-e.Server.StopNotify()
	}
	return nil
}

// cleanup deletes the data directory, and the directory it is in once
// that is empty: the last member of a cluster to go takes the base
// directory its test made for the members' data.
func cleanup(dir string, remove bool) {
	if remove && dir != "" {
		os.RemoveAll(dir)
		os.Remove(filepath.Dir(dir)) // fails, harmlessly, while another member's data is there
	}
}
