package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

// A member given users whose data has never had auth on starts twice. The
// first start serves clients only on a loopback port of its own, sets up
// auth (or, on a member that is not the raft leader, waits for the leader's
// setup to reach it) and stops; only then does the member serve its client
// URLs. So no client of the rack ever finds the new etcd open, not even for
// the moment between its start and the setup of auth.

// authMarkerFile, in the data dir, says that auth was on in this member's
// data: later starts serve their client URLs at once.
const authMarkerFile = "baton-auth-on"

// errBootstrapped ends the private start once auth is on.
var errBootstrapped = errors.New("auth set up")

// needsPrivateStart reports whether the member must set up auth before it
// serves its client URLs.
func needsPrivateStart(cfg *embed.Config, users []etcdUser) bool {
	if len(users) == 0 {
		return false
	}
	_, err := os.Stat(filepath.Join(cfg.Dir, authMarkerFile))
	return err != nil
}

// privateConfig is cfg with clients served on a free loopback port only,
// in plain HTTP: the setup uses an in-process client, not the network.
func privateConfig(cfg *embed.Config) (*embed.Config, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("a loopback port to set up auth on: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	private := *cfg
	u := url.URL{Scheme: "http", Host: addr}
	private.ListenClientUrls, private.AdvertiseClientUrls = []url.URL{u}, []url.URL{u}
	private.ListenClientHttpUrls = nil
	private.ClientTLSInfo = transport.TLSInfo{}
	private.EnableGRPCGateway = false
	return &private, nil
}

// markAuthOn records that auth is on in the member's data.
func markAuthOn(dir string) error {
	return os.WriteFile(filepath.Join(dir, authMarkerFile), []byte("auth was set up in this data\n"), 0o600)
}

// waitAuthOn waits until auth is on in the member's copy of the data, as
// the raft leader's setup replicates to it.
func waitAuthOn(ctx context.Context, enabled func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, authTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !enabled() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("auth not turned on by the cluster's leader within %v", authTimeout)
		case <-tick.C:
		}
	}
	return nil
}
