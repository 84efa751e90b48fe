package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/types"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A member of a three-member cluster whose data lives on an emptyDir comes
// back from a restart with nothing: etcd would refuse it, since its peers
// remember it with a log it no longer has. So a member that starts with no
// data, under --initial-cluster-state new, first asks its peers whether
// their cluster already runs. If it does, the member has the cluster remove
// its old self and add it afresh, and joins as a new member with the
// cluster's data. If no peer answers with a working cluster, the members are
// forming one, and the member starts as configured.

// rejoinTimeout bounds the whole inquiry: a member of a cluster still forming
// must not wait long before it starts.
const rejoinTimeout = 5 * time.Second

// rejoinAddTimeout bounds the retries of adding the member back; past it
// baton exits 1 and its restart tries again.
const rejoinAddTimeout = 30 * time.Second

// rejoin returns cfg, changed to join the running cluster when this member
// lost its data and its peers still run a cluster.
func rejoin(ctx context.Context, env *environ, cfg *embed.Config) (*embed.Config, error) {
	if cfg.ClusterState != embed.ClusterStateFlagNew || hasData(cfg.Dir) {
		return cfg, nil
	}
	cluster, err := types.NewURLsMap(cfg.InitialCluster)
	if err != nil || len(cluster) < 2 {
		return cfg, nil
	}
	ctx, cancel := context.WithTimeout(ctx, rejoinTimeout)
	defer cancel()
	endpoints := peerClientURLs(ctx, cfg.Name, cluster)
	if len(endpoints) == 0 {
		return cfg, nil // no peer has a cluster: forming one
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return cfg, nil
	}
	defer cli.Close()
	list, err := cli.MemberList(ctx)
	if authRefused(err) {
		return nil, rejoinRefused(cfg, err)
	}
	if err != nil {
		// No quorum to answer: the cluster cannot take a member now, and
		// starting as configured is all that is left.
		fmt.Fprintf(env.stderr, "baton etcd: member %s has no data and its peers' cluster does not answer (%v); starting as configured\n", cfg.Name, err)
		return cfg, nil
	}
	peerURLs := urlStringList(cfg.AdvertisePeerUrls)
	for _, m := range list.Members {
		if m.Name == cfg.Name || slices.Equal(m.PeerURLs, peerURLs) {
			_, err := cli.MemberRemove(ctx, m.ID)
			switch {
			case authRefused(err):
				return nil, rejoinRefused(cfg, err)
			case err != nil:
				return nil, fmt.Errorf("member %s lost its data; removing its old self (%x) from the running cluster: %w", cfg.Name, m.ID, err)
			}
		}
	}
	// etcd takes a member only while the cluster has been connected to a
	// quorum for a few seconds, which a member just lost can break: retry.
	actx, acancel := context.WithTimeout(context.Background(), rejoinAddTimeout)
	defer acancel()
	var added *clientv3.MemberAddResponse
	for {
		cctx, ccancel := context.WithTimeout(actx, 2*time.Second)
		added, err = cli.MemberAdd(cctx, peerURLs)
		ccancel()
		if err == nil {
			break
		}
		if authRefused(err) {
			return nil, rejoinRefused(cfg, err)
		}
		select {
		case <-actx.Done():
			return nil, fmt.Errorf("member %s lost its data; adding it back to the running cluster: %w", cfg.Name, err)
		case <-time.After(time.Second):
		}
	}
	var initial []string
	for _, m := range added.Members {
		name := m.Name
		if m.ID == added.Member.ID {
			name = cfg.Name
		}
		if name == "" {
			continue // another member added and not started yet
		}
		for _, u := range m.PeerURLs {
			initial = append(initial, name+"="+u)
		}
	}
	fmt.Fprintf(env.stderr, "baton etcd: member %s had no data; rejoining the running cluster as a new member (%x)\n", cfg.Name, added.Member.ID)
	cfg.ClusterState = embed.ClusterStateFlagExisting
	cfg.InitialCluster = strings.Join(initial, ",")
	return cfg, nil
}

// rejoinRefused is the error of a member that lost its data while its
// peers run their cluster with auth on: only root may change the members,
// and root's secret was in the data the member lost. Starting as
// configured would be refused as a member the cluster has bootstrapped
// already, so it says what to do instead.
func rejoinRefused(cfg *embed.Config, err error) error {
	return fmt.Errorf("member %s has no data, and its peers run their cluster with authentication on (%v): only etcd's root user may remove its old self and add it afresh, and root's secret was kept in the data this member lost. "+
		"Restore its data dir from a backup (and keep the members' data on a volume that outlives a restart); or, as root, run `etcdctl member remove ID` of its old self and `etcdctl member add %s --peer-urls %s`, then start it with --initial-cluster-state existing",
		cfg.Name, err, cfg.Name, strings.Join(urlStringList(cfg.AdvertisePeerUrls), ","))
}

// authRefused reports whether etcd refused a request for want of
// credentials or permission.
func authRefused(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, rpctypes.ErrUserEmpty), errors.Is(err, rpctypes.ErrPermissionDenied), errors.Is(err, rpctypes.ErrInvalidAuthToken),
		errors.Is(err, rpctypes.ErrAuthFailed):
		return true
	}
	c := status.Code(err)
	return c == codes.Unauthenticated || c == codes.PermissionDenied
}

// hasData reports whether dir holds a member's data.
func hasData(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "member", "wal"))
	return err == nil
}

// peerClientURLs asks each peer but self, on its peer URL, for the members
// of its cluster, and returns the client URLs they publish. A member
// publishes them once its cluster has formed, so none come back from peers
// of a cluster still forming.
func peerClientURLs(ctx context.Context, self string, cluster types.URLsMap) []string {
	var out []string
	for name, urls := range cluster {
		if name == self {
			continue
		}
		for _, u := range urls {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(u.String(), "/")+"/members", nil)
			if err != nil {
				continue
			}
			c := http.Client{Timeout: time.Second}
			resp, err := c.Do(req)
			if err != nil {
				continue
			}
			var members []struct {
				Name       string   `json:"name"`
				ClientURLs []string `json:"clientURLs"`
			}
			err = json.NewDecoder(resp.Body).Decode(&members)
			resp.Body.Close()
			if err != nil {
				continue
			}
			for _, m := range members {
				if m.Name != self {
					out = append(out, m.ClientURLs...)
				}
			}
			if len(out) > 0 {
				slices.Sort(out)
				return slices.Compact(out)
			}
		}
	}
	return nil
}

func urlStringList(us types.URLs) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.String()
	}
	return out
}
