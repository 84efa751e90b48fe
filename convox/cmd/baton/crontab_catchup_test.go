package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// TestCrontabCatchUpRunsATickMissedWhileEveryReplicaWasDown: every
// replica of a [catch-up=1m] entry is paused (SIGSTOP) past the TTL and
// past its next tick's misfire grace of 1s, as a cluster whose VMs all
// stall, or killed (SIGKILL) and started again as late; then the cluster
// runs that tick once, caught up, within its catch-up window, where the
// grace alone would have dropped it.
func TestCrontabCatchUpRunsATickMissedWhileEveryReplicaWasDown(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process")
	}
	for name, sig := range map[string]syscall.Signal{"SIGKILL": syscall.SIGKILL, "SIGSTOP": syscall.SIGSTOP} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			etcd := etcdtest.Shared(t)
			dir := t.TempDir()
			ledger := filepath.Join(dir, "ledger")
			file := filepath.Join(dir, "crontab")
			os.WriteFile(file, []byte(`tens: [catch-up=1m] */10 * * * * * echo "$BATON_TICK $BATON_ID ${BATON_CAUGHT_UP:-unset}" >> `+ledger+"\n"), 0o644)
			start := func() (replicas []*process) {
				for _, id := range []string{"r1", "r2"} {
					replicas = append(replicas, startBaton(t, append(etcd.Env(), "BATON_ID="+id),
						"crontab", "--seconds", "--ttl", "2", "--misfire-grace", "1s", "--name", "catchup", file))
				}
				return replicas
			}
			replicas := start()
			ticks := func() map[time.Time][]string {
				out := map[time.Time][]string{}
				for _, l := range readLines(ledger) {
					f := strings.Fields(l)
					if len(f) != 3 {
						continue
					}
					tick, err := time.Parse(time.RFC3339Nano, f[0])
					if err != nil {
						t.Fatalf("BATON_TICK %q: %v", f[0], err)
					}
					out[tick] = append(out[tick], f[1]+" caught-up="+f[2])
				}
				return out
			}
			var first time.Time
			until(t, 30*time.Second, "a run of tens", func() bool {
				for tick := range ticks() {
					first = tick
					return true
				}
				return false
			})
			for _, p := range replicas {
				p.cmd.Process.Signal(sig)
				if sig == syscall.SIGSTOP {
					defer p.cmd.Process.Signal(syscall.SIGCONT)
				} else {
					p.wait(10 * time.Second)
				}
			}
			missed := first.Add(10 * time.Second)
			// Down until the missed tick is two seconds past its grace.
			until(t, 30*time.Second, "the missed tick's grace to pass", func() bool { return time.Now().After(missed.Add(3 * time.Second)) })
			if sig == syscall.SIGSTOP {
				for _, p := range replicas {
					p.cmd.Process.Signal(syscall.SIGCONT)
				}
			} else {
				start()
			}
			until(t, 30*time.Second, "the missed tick's run", func() bool { return len(ticks()[missed]) > 0 })
			next := missed.Add(10 * time.Second)
			until(t, 30*time.Second, "the next tick's run", func() bool { return len(ticks()[next]) > 0 })
			got := ticks()
			if len(got[missed]) != 1 || !strings.HasSuffix(got[missed][0], "caught-up=1") || len(got[next]) != 1 {
				t.Errorf("the tick %v missed while every replica was down ran as %v, and the next as %v: want the missed one once, caught up (BATON_CAUGHT_UP=1), and the next once",
					missed.Format(time.TimeOnly), got[missed], got[next])
			}
			t.Logf("missed %v ran as %v", missed.Format(time.TimeOnly), got[missed])
		})
	}
}
