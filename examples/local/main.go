// Command local is baton's demonstration on one machine: an embedded etcd
// (`baton etcd`) and three replicas of an app (`baton crontab`), as separate
// processes, running one crontab whose job fires every second. It prints
// which replica ran each tick, deploys over the leader (SIGTERM), crashes
// the next one (kill -9), and ends with a tally: every tick ran once.
//
//	go run ./examples/local
//
// It builds the baton command first, so it needs the Go toolchain and takes
// a few seconds more the first time.
package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

const ttl = 2 // seconds: a crashed leader is replaced within this

func main() {
	if _, err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "local:", err)
		os.Exit(1)
	}
}

// tally is the demonstration's outcome.
type tally struct {
	expected, ran, duplicated int
	// missed are ticks no replica ran; crashMissed those of them in the
	// crash's gap, which a TTL may cost.
	missed, crashMissed int
}

func run() (tally, error) {
	var sum tally
	err := demonstrate(&sum)
	return sum, err
}

func demonstrate(sum *tally) error {
	dir, err := os.MkdirTemp("", "baton-local-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	fmt.Println("building baton...")
	baton := filepath.Join(dir, "baton")
	build := exec.Command("go", "build", "-o", baton, "github.com/batonhq/baton/convox/cmd/baton")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build baton: %w", err)
	}

	client, peer, err := freePorts()
	if err != nil {
		return err
	}
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", client)
	etcd := exec.Command(baton, "etcd", "--name", "local", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", endpoint, "--advertise-client-urls", endpoint,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer))
	var etcdLog strings.Builder // shown only if etcd fails
	etcd.Stdout, etcd.Stderr = &etcdLog, &etcdLog
	if err := etcd.Start(); err != nil {
		return err
	}
	defer func() { _ = etcd.Process.Signal(syscall.SIGTERM); _ = etcd.Wait() }()
	if err := waitHealthy(endpoint + "/health"); err != nil {
		return fmt.Errorf("%w\n%s", err, etcdLog.String())
	}
	fmt.Printf("etcd is up at %s (baton etcd, embedded)\n\n", endpoint)

	ledger := filepath.Join(dir, "ledger")
	crontab := filepath.Join(dir, "crontab")
	job := `tick: * * * * * * echo "$BATON_TICK $BATON_ID $BATON_FENCE" >> ` + ledger + "\n"
	if err := os.WriteFile(crontab, []byte(job), 0o644); err != nil {
		return err
	}
	fmt.Printf("crontab (every replica runs the same one):\n  %s\n", job)

	replicas := map[string]*exec.Cmd{}
	start := func(id string) error {
		cmd := exec.Command(baton, "crontab", "--seconds", "--log-level", "warn", crontab)
		cmd.Env = append(os.Environ(), "BATON_ETCD_ENDPOINTS="+endpoint, "BATON_ID="+id, fmt.Sprintf("BATON_TTL=%d", ttl))
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		replicas[id] = cmd
		return nil
	}
	for _, id := range []string{"web-1", "web-2", "web-3"} {
		if err := start(id); err != nil {
			return err
		}
	}
	defer func() {
		for _, cmd := range replicas {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}()
	fmt.Println("three replicas started: web-1, web-2, web-3, each with the crontab")
	fmt.Println()

	tail := &tailer{path: ledger}
	// watch prints runs until n more ticks ran, and returns the last runner.
	watch := func(n int) (string, error) {
		deadline := time.Now().Add(time.Duration(n+ttl+10) * time.Second)
		for seen := 0; seen < n; {
			if time.Now().After(deadline) {
				return "", fmt.Errorf("no tick for too long; is etcd up?")
			}
			for _, r := range tail.next() {
				fmt.Printf("  tick %s  ran on %s  (fence %s)\n", r.tick.Format("15:04:05"), r.by, r.fence)
				seen++
			}
			time.Sleep(100 * time.Millisecond)
		}
		return tail.last().by, nil
	}

	leader, err := watch(4)
	if err != nil {
		return err
	}
	fmt.Printf("\n>>> deploy: SIGTERM to the leader, %s. It resigns at once; the next tick runs elsewhere, on time.\n\n", leader)
	stopped := replicas[leader]
	delete(replicas, leader)
	_ = stopped.Process.Signal(syscall.SIGTERM)
	_ = stopped.Wait()

	if leader, err = watch(4); err != nil {
		return err
	}
	fmt.Printf("\n>>> crash: kill -9 of the leader, %s. Its lease lapses within the TTL (%ds); a survivor takes over\n"+
		"    and runs the latest tick it missed, once.\n\n", leader, ttl)
	crashed := replicas[leader]
	delete(replicas, leader)
	_ = crashed.Process.Kill()
	_ = crashed.Wait()
	crashTick := tail.last().tick

	if _, err = watch(4); err != nil {
		return err
	}
	for _, cmd := range replicas {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	replicas = nil

	runs := tail.all()
	ran := map[time.Time]int{}
	for _, r := range runs {
		ran[r.tick]++
	}
	first, last := runs[0].tick, runs[len(runs)-1].tick
	expected := int(last.Sub(first)/time.Second) + 1
	dup := 0
	var missed []string
	for t := first; !t.After(last); t = t.Add(time.Second) {
		switch n := ran[t]; {
		case n > 1:
			dup += n - 1
		case n == 0:
			missed = append(missed, t.Format("15:04:05"))
			if t.After(crashTick) && !t.After(crashTick.Add(ttl*time.Second)) {
				sum.crashMissed++
			}
		}
	}
	*sum = tally{expected: expected, ran: len(ran), duplicated: dup, missed: len(missed), crashMissed: sum.crashMissed}
	fmt.Printf("\nsummary: ticks expected %d, run %d, duplicated: %d, missed: %d", expected, len(ran), dup, len(missed))
	if len(missed) > 0 {
		fmt.Printf(" (%s, after the crash at %s: a crash costs up to the TTL; a deploy costs nothing)",
			strings.Join(missed, " "), crashTick.Format("15:04:05"))
	}
	fmt.Println()
	if dup > 0 {
		return fmt.Errorf("%d ticks ran twice", dup)
	}
	return nil
}

// record is one run of the job, as the job appended it to the ledger.
type record struct {
	tick      time.Time
	by, fence string
}

// tailer reads the ledger's new lines.
type tailer struct {
	path    string
	offset  int64
	records []record
}

func (t *tailer) next() []record {
	f, err := os.Open(t.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, 0); err != nil {
		return nil
	}
	var out []record
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break // a partial line is read again next time
		}
		t.offset += int64(len(line))
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		tick, err := time.Parse(time.RFC3339, f[0])
		if err != nil {
			continue
		}
		out = append(out, record{tick: tick, by: f[1], fence: f[2]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].tick.Before(out[j].tick) })
	t.records = append(t.records, out...)
	return out
}

func (t *tailer) last() record { return t.records[len(t.records)-1] }

func (t *tailer) all() []record {
	t.next()
	out := append([]record(nil), t.records...)
	sort.Slice(out, func(i, j int) bool { return out[i].tick.Before(out[j].tick) })
	return out
}

func waitHealthy(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcd at %s not healthy: %v", url, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// freePorts finds two free loopback ports for etcd's clients and peers.
func freePorts() (int, int, error) {
	var ports []int
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, 0, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports[0], ports[1], nil
}
