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

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Cluster is a set of members that form one etcd cluster.
type Cluster struct {
	Members []*Member
}

// StartCluster runs an n-member cluster and returns it once every member
// serves clients.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return startCluster(t, n, Options{})
}

func startCluster(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	WatchStalls(t)
	c, err := launch(t.TempDir(), n, opts, false)
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
	c, err := launch(dir, 1, Options{}, true)
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
func launch(base string, n int, opts Options, removeOnExit bool) (*Cluster, error) {
	ports, err := FreePorts(2 * n)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if opts.TLS != nil {
		scheme = "https"
	}
	token := fmt.Sprintf("etcdtest-%d", time.Now().UnixNano())
	c := &Cluster{}
	var initial []string
	for i := 0; i < n; i++ {
		m := &Member{
			name:         fmt.Sprintf("m%d", i),
			dir:          filepath.Join(base, fmt.Sprintf("m%d", i)),
			client:       url.URL{Scheme: scheme, Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])},
			peer:         url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])},
			token:        token,
			opts:         opts,
			removeOnExit: removeOnExit,
		}
		initial = append(initial, m.name+"="+m.peer.String())
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		m.cluster = strings.Join(initial, ",")
	}
	// Members of a new cluster wait for each other, so start them together.
	for _, m := range c.Members {
		m.mu.Lock()
		err := m.startLocked()
		m.mu.Unlock()
		if err != nil {
			return c, fmt.Errorf("start %s: %w", m.name, err)
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, m := range c.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.mu.Lock()
			p := m.proc
			m.mu.Unlock()
			errs[i] = p.waitReady(startTimeout)
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
