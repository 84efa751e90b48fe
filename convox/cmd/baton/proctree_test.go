package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// treeScript is a command that first counts the live processes of every
// earlier tree of the test (a second holder must find none), then starts a
// tree that tries every way out of a process group: a background process,
// a nested shell with its own child, a new session (setsid), and a daemon
// that double-forks into a new session, orphaned at once. Each process of
// the tree carries TREE=MARK:$BATON_ID in its environment. With a third
// argument the tree writes nothing: under baton run its output would be
// the test's pipe, which a process that outlives baton would hold open.
const treeScript = `n=$(grep -las "TREE=$1:" /proc/[0-9]*/environ | wc -l)
echo "$BATON_ID $n" >> "$2"
[ -n "$3" ] && exec >/dev/null 2>&1
export TREE="$1:$BATON_ID"
sleep 1003 &
sh -c 'sleep 1004 & wait' &
setsid sh -c 'exec sleep 1001' &
sh -c 'setsid sh -c "sleep 1002 &" &'
wait
`

// treeProc is a live process of a tree.
type treeProc struct {
	pid     int
	cmdline string
}

// treeOf returns the live (not zombie) processes whose environment has
// TREE=mark:id, or, with id empty, TREE=mark: and any id.
func treeOf(t *testing.T, mark, id string) []treeProc {
	t.Helper()
	want := []byte("TREE=" + mark + ":" + id)
	names, err := filepath.Glob("/proc/[0-9]*/environ")
	if err != nil {
		t.Fatal(err)
	}
	var out []treeProc
	for _, name := range names {
		env, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		hit := false
		for _, v := range bytes.Split(env, []byte{0}) {
			if id == "" && bytes.HasPrefix(v, want) || bytes.Equal(v, want) {
				hit = true
			}
		}
		pid, _ := strconv.Atoi(strings.Split(name, "/")[2])
		if !hit || zombie(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(name), "cmdline"))
		out = append(out, treeProc{pid, strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))})
	}
	return out
}

// waitTree waits until the four sleeps of id's tree run.
func waitTree(t *testing.T, mark, id string) {
	t.Helper()
	until(t, 20*time.Second, id+"'s tree to start", func() bool {
		n := 0
		for _, p := range treeOf(t, mark, id) {
			if strings.HasPrefix(p.cmdline, "sleep 100") {
				n++
			}
		}
		return n == 4
	})
}

// supervisorOf returns the pid of baton's `baton _supervise` child.
func supervisorOf(t *testing.T, baton int) int {
	t.Helper()
	var found int
	until(t, 10*time.Second, "the supervisor", func() bool {
		table, err := parents()
		if err != nil {
			t.Fatal(err)
		}
		for pid, ppid := range table {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			if ppid == baton && bytes.Contains(b, []byte("_supervise")) {
				found = pid
				return true
			}
		}
		return false
	})
	return found
}

// TestNoDescendantOutlivesItsRun kills, in turn, baton and its supervisor
// with SIGKILL while a command's tree runs, under each mode. Every process
// of the tree, in whatever session or process group, is gone at once;
// the next holder of the lock, term, claim or tick finds none of them alive
// when it starts; and a graceful SIGTERM of that holder ends its own tree,
// new sessions included, before it exits.
func TestNoDescendantOutlivesItsRun(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	for _, mode := range []string{"lock", "leader", "once", "crontab"} {
		for _, victim := range []string{"baton", "supervisor"} {
			t.Run(mode+"/"+victim, func(t *testing.T) {
				dir := t.TempDir()
				script := filepath.Join(dir, "tree.sh")
				os.WriteFile(script, []byte(treeScript), 0o755)
				probe := filepath.Join(dir, "probe")
				mark := fmt.Sprintf("%d-%s-%s", os.Getpid(), mode, victim)
				name := mode + "-" + victim
				cmd := []string{"sh", script, mark, probe}
				if mode != "crontab" {
					cmd = append(cmd, "quiet")
				}
				env := func(id string) []string {
					return append(etcd.Env(), "BATON_ID="+id, "BATON_TTL=2")
				}
				var args []string
				switch mode {
				case "crontab":
					tab := filepath.Join(dir, "crontab")
					os.WriteFile(tab, []byte(name+": [overlap=forbid] * * * * * * "+strings.Join(cmd, " ")+"\n"), 0o644)
					args = []string{"crontab", "--seconds", "--name", name, tab}
				case "once":
					args = append([]string{"run", "--once", name, "--ttl", "1h", "--"}, cmd...)
				default:
					args = append([]string{"run", "--" + mode, name, "--"}, cmd...)
				}
				a := startBaton(t, env("a"), args...)
				waitTree(t, mark, "a")
				var b *process
				if mode != "once" && !(mode == "crontab" && victim == "supervisor") {
					b = startBaton(t, env("b"), args...)
				}

				if victim == "baton" {
					a.cmd.Process.Kill()
					a.wait(5 * time.Second)
					until(t, 3*time.Second, "a's tree to die with baton", func() bool { return len(treeOf(t, mark, "a")) == 0 })
				} else {
					if err := syscall.Kill(supervisorOf(t, a.cmd.Process.Pid), syscall.SIGKILL); err != nil {
						t.Fatal(err)
					}
					if mode != "crontab" {
						if code := a.wait(10 * time.Second); code != 128+int(syscall.SIGKILL) {
							t.Errorf("a exited %d after its supervisor's SIGKILL, want 137", code)
						}
						if left := treeOf(t, mark, "a"); len(left) > 0 {
							t.Fatalf("baton exited while its command's tree lives: %v", left)
						}
						if !strings.Contains(a.out.String(), "supervisor of sh was killed by signal 9") {
							t.Errorf("baton does not say its supervisor was killed:\n%s", a.out.String())
						}
					}
				}

				// The next holder: b, or in --once a caller that retries
				// until the dead holder's claim expires, or in crontab
				// the next tick of a itself.
				next := "b"
				switch {
				case mode == "once":
					// A caller that finds the dead holder's claim exits,
					// and another is started; one that claims goes on
					// until its command has run, however slowly.
					until(t, 20*time.Second, "a second caller to run", func() bool {
						if b == nil || b.exited() {
							b = startBaton(t, env("b"), args...)
						}
						return len(readLines(probe)) == 2
					})
				case b == nil:
					next, b = "a", a
				}
				until(t, 20*time.Second, "the next holder's command", func() bool { return len(readLines(probe)) == 2 })
				if got, want := readLines(probe)[1], next+" 0"; got != want {
					t.Fatalf("the next holder started beside the last one's tree: probe %q, want %q", got, want)
				}
				waitTree(t, mark, next)
				// SIGTERM reaches every process of the tree, new sessions
				// included, so baton exits well before --grace (25 s) would
				// have it kill what ignored the signal.
				b.cmd.Process.Signal(syscall.SIGTERM)
				b.wait(15 * time.Second)
				if left := treeOf(t, mark, ""); len(left) > 0 {
					t.Fatalf("after SIGTERM, baton exited while its command's tree lives: %v", left)
				}
			})
		}
	}
}

// TestBatonSparesTheChildrenItHadBefore: a process an entrypoint started
// before it exec'd baton (sh -c 'daemon & exec baton ...') is baton's
// child but none of a command's: it outlives the runs.
func TestBatonSparesTheChildrenItHadBefore(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	sh := exec.Command("sh", "-c", `sleep 300 >/dev/null 2>&1 & echo $! > `+pidFile+`; exec "$0" run --lock spare -- sh -c 'sleep 0.2 & exit 0'`, batonBin)
	sh.Env = append([]string{"PATH=" + os.Getenv("PATH")}, etcd.Env()...)
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("baton run: %v:\n%s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(readLines(pidFile)[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if syscall.Kill(pid, 0) != nil || zombie(pid) {
		t.Fatalf("baton killed the process it had as a child before it ran a command:\n%s", out)
	}
}
