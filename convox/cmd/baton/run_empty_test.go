package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// TestRunSaysALossCameWithEtcdsData wipes etcd under a running command, as
// a restarted bundled etcd on an emptyDir does, in each of run's three
// modes: the command is stopped, baton exits 3 (123 for --once), and says
// that etcd came back empty and what went with it — so a user who finds a
// --once job run again knows why.
func TestRunSaysALossCameWithEtcdsData(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode []string
		code int
	}{
		{[]string{"--leader", "worker"}, runLost},
		{[]string{"--lock", "nightly"}, runLost},
		{[]string{"--once", "import", "--ttl", "1h"}, runLost},
	} {
		t.Run(tc.mode[0], func(t *testing.T) {
			etcd := etcdtest.Start(t)
			pidFile := filepath.Join(t.TempDir(), "pid")
			args := append(append([]string{"run"}, tc.mode...), "--", "sh", "-c", "echo $$ > "+pidFile+"; exec sleep 300")
			p := startBaton(t, []string{"BATON_ETCD_ENDPOINTS=" + etcd.Endpoint(), "BATON_TTL=2"}, args...)
			until(t, 10*time.Second, "the command to start", func() bool { return len(readLines(pidFile)) == 1 })
			etcd.Wipe(t)
			if code := p.wait(20 * time.Second); code != tc.code {
				t.Fatalf("exit %d after the wipe, want %d:\n%s", code, tc.code, p.out.String())
			}
			out := p.out.String()
			if !strings.Contains(out, "etcd came back empty (its cluster ID changed") || !strings.Contains(out, "run --once claims") {
				t.Errorf("the wipe is not said, with what it took:\n%s", out)
			}
		})
	}
}

// TestRunPartitionIsNotTakenForAnEmptyEtcd: a command lost to a partition,
// where etcd never answered that the lease is gone, is not said to have
// lost etcd's data.
func TestRunPartitionIsNotTakenForAnEmptyEtcd(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, etcd.Addr())
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := startBaton(t, append(etcd.Env(proxy.Endpoint()), "BATON_TTL=2"),
		"run", "--leader", "worker", "--", "sh", "-c", "echo $$ > "+pidFile+"; exec sleep 300")
	until(t, 10*time.Second, "the command to start", func() bool { return len(readLines(pidFile)) == 1 })
	proxy.Blackhole()
	if code := p.wait(20 * time.Second); code != runLost {
		t.Fatalf("exit %d after the partition, want %d:\n%s", code, runLost, p.out.String())
	}
	if out := p.out.String(); strings.Contains(out, "came back empty") {
		t.Errorf("a partition is said to be an empty etcd:\n%s", out)
	}
}
