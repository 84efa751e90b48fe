package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// recoverLine is a line a recover= test's command writes as it starts.
type recoverLine struct {
	tick, instance, recovered string
	fence                     int64
}

func readRecoverLines(t *testing.T, ledger string) []recoverLine {
	t.Helper()
	b, _ := os.ReadFile(ledger)
	var out []recoverLine
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		fence, _ := strconv.ParseInt(f[3], 10, 64)
		out = append(out, recoverLine{tick: f[0], instance: f[1], recovered: f[2], fence: fence})
	}
	return out
}

// TestCrontabRecoverRunsAKilledOrPausedRunAgain: the leader running an
// entry with [recover=1] is killed with SIGKILL mid-run, its command with
// it, or paused past its lease with its command (SIGSTOP, as a VM pause);
// the replica that leads next runs the tick's command again, once, with a
// later BATON_FENCE and BATON_RECOVERED=1. A paused leader, resumed, ends
// its run and starts the tick no third time.
func TestCrontabRecoverRunsAKilledOrPausedRunAgain(t *testing.T) {
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
			os.WriteFile(file, []byte(`long: [recover=1 overlap=forbid] */20 * * * * * echo $$ > `+dir+`/pid-$BATON_ID; `+
				`echo "$BATON_TICK $BATON_ID $BATON_RECOVERED $BATON_FENCE" >> `+ledger+"; sleep 600\n"), 0o644)
			replicas := map[string]*process{}
			for _, id := range []string{"r1", "r2"} {
				replicas[id] = startBaton(t, append(etcd.Env(), "BATON_ID="+id), "crontab", "--seconds", "--ttl", strconv.Itoa(policyTTL), file)
			}
			var first recoverLine
			until(t, 40*time.Second, "a run to start", func() bool {
				if lines := readRecoverLines(t, ledger); len(lines) > 0 {
					first = lines[0]
					return true
				}
				return false
			})
			victim := replicas[first.instance]
			resume := func() {}
			if sig == syscall.SIGKILL {
				victim.cmd.Process.Kill()
				victim.wait(10 * time.Second)
			} else {
				resume = pauseWithCommand(t, victim, filepath.Join(dir, "pid-"+first.instance))
				defer resume()
			}
			var again recoverLine
			until(t, 40*time.Second, "the tick run again", func() bool {
				for _, l := range readRecoverLines(t, ledger) {
					if l.tick == first.tick && l.instance != first.instance {
						again = l
						return true
					}
				}
				return false
			})
			if again.recovered != "1" || again.fence <= first.fence || first.recovered != "0" {
				t.Errorf("first run %+v, run again %+v: want BATON_RECOVERED 0 then 1, and a later fence", first, again)
			}
			if sig == syscall.SIGSTOP {
				resume()
				victim.waitOutput(`msg="cronx: no longer leading" scheduler=crontab instance=`+first.instance, 15*time.Second)
			}
			n := 0
			for _, l := range readRecoverLines(t, ledger) {
				if l.tick == first.tick {
					n++
				}
			}
			if n != 2 {
				b, _ := os.ReadFile(ledger)
				t.Errorf("tick %s started %d times, want twice:\n%s", first.tick, n, b)
			}
		})
	}
}
