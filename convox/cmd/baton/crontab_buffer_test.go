package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// jobBuffered reads the ticks of a crontab job that wait in its buffer.
func jobBuffered(t *testing.T, cli *clientv3.Client, job string) []time.Time {
	t.Helper()
	k, err := cronx.NewControl(cli, "/baton", "crontab")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := k.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range st.Jobs {
		if j.Name == job {
			return j.Buffered
		}
	}
	return nil
}

// TestCrontabBufferedTickRunsAfterItsLeaderIsKilledOrPaused runs two
// replicas of a [overlap=buffer-one] job whose command outlasts many
// ticks; the leader, running it with a tick buffered, is killed (kill -9)
// or paused past its lease (SIGSTOP, its command's process group with it,
// as a VM pause). The run's marker lapses with its lease, and the
// successor runs the buffered tick, with that tick as BATON_TICK, once; a
// paused leader, resumed, runs nothing more.
func TestCrontabBufferedTickRunsAfterItsLeaderIsKilledOrPaused(t *testing.T) {
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
			os.WriteFile(file, []byte(`slow: [overlap=buffer-one] */2 * * * * * echo $$ > `+dir+`/pid-$BATON_ID; `+
				`echo "start $BATON_TICK $BATON_ATTEMPT $BATON_ID $BATON_FENCE $(date +%s%N)" >> `+ledger+`; sleep 60`+"\n"), 0o644)
			replicas := map[string]*process{}
			for _, id := range []string{"r1", "r2"} {
				replicas[id] = startBaton(t, append(etcd.Env(), "BATON_ID="+id),
					"crontab", "--seconds", "--ttl", strconv.Itoa(policyTTL), "--grace", "1s", file)
			}
			cli := etcd.Client(t)
			var first attemptLine
			var buffered []time.Time
			until(t, 30*time.Second, "a run and a tick buffered behind it", func() bool {
				lines := readAttempts(t, ledger)
				if len(lines) == 0 {
					return false
				}
				first = lines[0]
				buffered = jobBuffered(t, cli, "slow")
				return len(buffered) == 1
			})
			victim, survivor := first.instance, map[string]string{"r1": "r2", "r2": "r1"}[first.instance]
			v := replicas[victim]
			resume := func() {}
			if sig == syscall.SIGKILL {
				v.cmd.Process.Kill()
				v.wait(10 * time.Second)
			} else {
				resume = pauseWithCommand(t, v, filepath.Join(dir, "pid-"+victim))
				defer resume()
			}
			stopped := time.Now()
			var runs []attemptLine
			until(t, 30*time.Second, "the buffered tick's run on the survivor", func() bool {
				runs = readAttempts(t, ledger)
				return len(runs) >= 2
			})
			if sig == syscall.SIGSTOP {
				resume()
				v.waitOutput(`msg="cronx: no longer leading" scheduler=crontab instance=`+victim, 15*time.Second)
				runs = readAttempts(t, ledger)
			}
			// The survivor's run of the buffered tick outlasts the test: it is
			// the last run there is.
			tick, err := time.Parse(time.RFC3339Nano, runs[1].tick)
			if len(runs) != 2 || err != nil || !tick.Equal(buffered[0]) || runs[1].instance != survivor || runs[1].at.Before(stopped) {
				t.Errorf("after %s was stopped (%s) running %s with %v buffered, runs %+v; want one run of %v on %s",
					victim, name, first.tick, buffered[0], runs, buffered[0], survivor)
			}
			if t.Failed() {
				b, _ := os.ReadFile(ledger)
				t.Logf("ledger:\n%s", b)
			}
		})
	}
}

// pauseWithCommand stops p and the process group of the command whose pid
// is in pidFile together, as a VM pause does, and returns what resumes
// them.
func pauseWithCommand(t *testing.T, p *process, pidFile string) (resume func()) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %v", pidFile, err)
	}
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(-pgid, syscall.SIGSTOP)
	p.cmd.Process.Signal(syscall.SIGSTOP)
	return func() {
		syscall.Kill(-pgid, syscall.SIGCONT)
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
}
