package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestRunLostKeyStopsTheCommand deletes the key a running holder's lock or
// claim stands on (etcdctl del): another caller could take it at once, so
// the command is stopped and baton exits 123, as for a lost term.
func TestRunLostKeyStopsTheCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode string
		args []string
		key  string // deleted with its prefix, under the space's /baton
	}{
		{"lock", []string{"--lock", "held"}, "/baton/lock/held/"},
		{"once", []string{"--once", "held", "--ttl", "1h"}, "/baton/once/held/running"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			etcd := etcdtest.Shared(t)
			cli := etcd.Client(t)
			pidFile := filepath.Join(t.TempDir(), "pid")
			args := append(append([]string{"run"}, tc.args...), "--", "sh", "-c", "echo $$ > "+pidFile+"; exec sleep 300")
			p := startBaton(t, etcd.Env(), args...)
			until(t, 10*time.Second, "the command to start", func() bool { return len(readLines(pidFile)) == 1 })
			pid, _ := strconv.Atoi(readLines(pidFile)[0])
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := cli.Delete(ctx, tc.key, clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			if resp.Deleted != 1 {
				t.Fatalf("%d keys deleted under %s, want the holder's", resp.Deleted, tc.key)
			}
			if code := p.wait(10 * time.Second); code != runLost {
				t.Fatalf("exit %d after the key's deletion, want %d", code, runLost)
			}
			if syscall.Kill(pid, 0) == nil && !zombie(pid) {
				t.Fatalf("the command (pid %d) still runs", pid)
			}
			if out := p.out.String(); !strings.Contains(out, "was deleted or replaced; stopping sh") {
				t.Errorf("the loss is not reported:\n%s", out)
			}
		})
	}
}
