//go:build linux

package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/testbin"
	clientv3 "go.etcd.io/etcd/client/v3"
)

var (
	flagDuration = flag.Duration("chaos.duration", 2*time.Minute, "how long TestChaos injects faults")
	flagSeed     = flag.Uint64("chaos.seed", 0, "seed of the fault schedule, the clock offsets and the run lengths (0: a new one)")
	flagReport   = flag.String("chaos.report", "", "write TestChaos's report to this file as JSON")
	flagDir      = flag.String("chaos.dir", "", "keep the ledger and the replicas' logs in this directory")
)

// The cluster under test.
const (
	replicas = 3
	ttl      = 5 * time.Second // --ttl
	grace    = 3 * time.Second // --grace: how long a replica sent SIGTERM lets its commands finish
	maxSkew  = 2 * time.Second // clock offsets are drawn from [-maxSkew, +maxSkew]
	prefix   = "/baton"
)

// scheduler is one `baton crontab` process per replica, running one job
// every second whose command takes about length.
type scheduler struct {
	Job
	length func(*rand.Rand) time.Duration
}

var schedulers = []scheduler{
	// Leader mode, overlaps allowed: the plain case.
	{Job{Name: "tick", Scheduler: "tick"}, func(*rand.Rand) time.Duration { return 300 * time.Millisecond }},
	// Leader mode, Forbid, runs longer than the tick: overlap is tried on
	// every tick.
	{Job{Name: "slow", Scheduler: "slow", Forbid: true}, func(r *rand.Rand) time.Duration {
		return 1500*time.Millisecond + time.Duration(r.IntN(11))*100*time.Millisecond
	}},
	// Claim mode, Forbid: every replica claims every tick from its own
	// skewed clock; the in-progress marker must hold through pauses. A
	// quarter of the runs fail their first attempt and are retried, under
	// the same claim, before the next tick.
	{Job{Name: "claim", Scheduler: "claim", Claim: true, Forbid: true, Retries: true}, func(*rand.Rand) time.Duration { return 200 * time.Millisecond }},
	// Leader mode, Replace: about half the runs outlast the tick and are
	// stopped by the next one, which must not start before they end.
	{Job{Name: "replace", Scheduler: "replace", Replace: true}, func(r *rand.Rand) time.Duration {
		return 300*time.Millisecond + time.Duration(r.IntN(15))*100*time.Millisecond
	}},
}

// batonBin is the baton command, built without -race: the replicas must
// keep time, and a race-instrumented baton under a loaded CI machine would
// not. The "faults" tag lets each replica's clock be skewed
// (clock.OffsetVar).
var batonBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	bin, err := testbin.Path(testbin.Build{Pkg: "./convox/cmd/baton", Tags: []string{"faults"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "build baton:", err)
		os.Exit(1)
	}
	batonBin = bin
	os.Exit(m.Run())
}

// TestChaos runs three replicas of three schedulers under random faults for
// -chaos.duration and checks the ledger their jobs wrote. See README.md.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("minutes of faults on real processes")
	}
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano()%1_000_000_000) + 1
	}
	t.Logf("seed %d; replay: go test ./internal/chaos -run TestChaos -chaos.seed %d -chaos.duration %v -v", seed, seed, *flagDuration)
	dir := *flagDir
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	h := &harness{t: t, seed: seed, dir: dir, rng: rand.New(rand.NewPCG(seed, 1))}
	h.etcd = startEtcd(t)
	cli, err := clientv3.New(etcdtest.ClientConfig(h.etcd.Endpoints()...))
	if err != nil {
		t.Fatal(err)
	}
	h.cli = cli
	defer cli.Close() // before the servers, which t.Cleanup stops
	h.sink = startSink(t, filepath.Join(dir, "ledger"), cli, &h.etcd.epoch, rand.New(rand.NewPCG(seed, 2)))
	defer h.sink.close()
	h.probe = startProbe(cli)
	defer h.probe.close()
	h.startNodes()
	defer h.stopNodes()

	h.warmUp()
	h.t0 = time.Now()
	t.Logf("faults from now for %v (t0 %s)", *flagDuration, h.t0.UTC().Format(stampLayout))
	h.injectFaults(h.t0.Add(*flagDuration))
	// Let the last fault's failover finish, then watch a quiet while.
	time.Sleep(ttl + failover + 3*time.Second)
	t1 := time.Now()
	h.stopNodes()
	h.sink.close()
	h.probe.close()

	sc := Scenario{
		From:    h.t0.Add(maxSkew + time.Second),
		To:      t1.Add(-maxSkew - 3*time.Second),
		TTL:     ttl,
		Offsets: map[string]time.Duration{},
		Faults:  h.faults,
		Outages: h.probe.outages(),
		Skips:   h.skips(),
		// A run that excuses most of its ticks proves little.
		MinStrict: minStrict,
	}
	for _, s := range schedulers {
		sc.Jobs = append(sc.Jobs, s.Job)
	}
	for _, n := range h.nodes {
		sc.Offsets[n.id] = n.offset
	}
	runs, errs := h.sink.ledger()
	for _, e := range errs {
		t.Errorf("sink: %s", e)
	}
	rep := Check(runs, sc)
	h.report(sc, rep)
	if len(rep.Violations) > 0 {
		t.Errorf("seed %d: %d violations (ledger lines above); replay: go test ./internal/chaos -run TestChaos -chaos.seed %d -chaos.duration %v -v",
			seed, len(rep.Violations)+rep.Unshown, seed, *flagDuration)
	}
}

type harness struct {
	t      *testing.T
	seed   uint64
	dir    string
	rng    *rand.Rand // the fault schedule; the test's goroutine only
	etcd   *etcd
	cli    *clientv3.Client
	sink   *sink
	probe  *probe
	nodes  []*node
	faults []Fault
	t0     time.Time
}

// node is a replica: one baton crontab process per scheduler, all with the
// same identity and clock offset, reaching etcd through the replica's own
// proxies, one per member, so that it can be partitioned alone.
type node struct {
	id      string
	offset  time.Duration
	proxies []*etcdtest.Proxy
	procs   []*proc // while started
}

// proc is one baton process.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (h *harness) startNodes() {
	var offsets []string
	for i := range replicas {
		n := &node{id: fmt.Sprintf("r%d", i+1)}
		n.offset = time.Duration(h.rng.Int64N(int64(2*maxSkew+1))) - maxSkew
		n.offset = n.offset.Round(time.Millisecond)
		for _, ep := range h.etcd.Endpoints() {
			n.proxies = append(n.proxies, etcdtest.NewProxy(h.t, strings.TrimPrefix(ep, "http://")))
		}
		h.nodes = append(h.nodes, n)
		offsets = append(offsets, fmt.Sprintf("%s %+v", n.id, n.offset))
	}
	h.t.Logf("replicas' clock offsets: %s", strings.Join(offsets, ", "))
	for _, s := range schedulers {
		line := fmt.Sprintf("%s: * * * * * * exec 3<>/dev/tcp/127.0.0.1/%d && "+
			`echo "start $BATON_JOB $BATON_TICK $BATON_ID $BATON_FENCE" >&3 && read -r _ d fail <&3 && `+
			`sleep "$d" 3>&- && echo done >&3 && read -r _ <&3 && test -z "$fail"`+"\n", s.Name, h.sink.port())
		if err := os.WriteFile(filepath.Join(h.dir, s.Scheduler+".crontab"), []byte(line), 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
	for _, n := range h.nodes {
		n.start(h)
	}
	h.t.Cleanup(func() {
		for _, n := range h.nodes {
			n.kill()
		}
	})
}

// start runs the replica's baton processes.
func (n *node) start(h *harness) {
	var eps []string
	for _, p := range n.proxies {
		eps = append(eps, p.Endpoint())
	}
	n.procs = nil
	for _, s := range schedulers {
		mode, overlap := s.mode(), s.overlap()
		cmd := exec.Command(batonBin, "crontab", "--seconds",
			"--endpoints", strings.Join(eps, ","), "--prefix", prefix, "--id", n.id,
			"--ttl", strconv.Itoa(int(ttl/time.Second)), "--name", s.Scheduler, "--mode", mode, "--overlap", overlap,
			"--misfire", "run-once", "--grace", grace.String(), "--shell", "/bin/bash",
			"--log-level", "debug")
		if s.Retries {
			cmd.Args = append(cmd.Args, "--attempts", "2", "--retry-backoff", "100ms")
		}
		cmd.Args = append(cmd.Args, filepath.Join(h.dir, s.Scheduler+".crontab"))
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LC_ALL=C",
			clock.OffsetVar + "=" + n.offset.String()}
		log, err := os.OpenFile(filepath.Join(h.dir, n.id+"-"+s.Scheduler+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			h.t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = log, log
		// Its own group, away from the terminal's signals; and dead with the
		// test, should the test die.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			log.Close()
			h.t.Fatalf("start baton: %v", err)
		}
		p := &proc{cmd: cmd, done: make(chan struct{})}
		go func() {
			_ = cmd.Wait()
			log.Close()
			close(p.done)
		}()
		n.procs = append(n.procs, p)
	}
}

// kill ends the replica's processes whatever their state.
func (n *node) kill() {
	n.signal(syscall.SIGCONT)
	n.signal(syscall.SIGKILL)
	for _, p := range n.procs {
		<-p.done
	}
}

// stopNodes sends every replica SIGTERM and waits for them; a replica that
// does not exit in time is an error, and is killed.
func (h *harness) stopNodes() {
	for _, n := range h.nodes {
		n.signal(syscall.SIGTERM)
	}
	for _, n := range h.nodes {
		if !n.wait(grace + 10*time.Second) {
			h.t.Errorf("replica %s did not exit within %v of SIGTERM", n.id, grace+10*time.Second)
			n.kill()
		}
	}
}

// warmUp waits until every job has written once: every scheduler runs.
func (h *harness) warmUp() {
	deadline := time.Now().Add(time.Minute)
	for {
		runs, _ := h.sink.ledger()
		written := map[string]bool{}
		for _, r := range runs {
			if r.Outcome == Written {
				written[r.Job] = true
			}
		}
		if len(written) == len(schedulers) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("not every job ran within a minute of the start: %v; logs in %s", written, h.dir)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// leaderOf returns the replica that leads a leader-mode scheduler, or ""
// when none does: the key with the lowest create revision under
// P/election/<scheduler>/, whose value is {"id": ...}.
func leaderOf(ctx context.Context, cli *clientv3.Client, scheduler string) (string, error) {
	resp, err := cli.Get(ctx, prefix+"/election/"+scheduler+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return "", err
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	var v struct{ ID string }
	if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil {
		return "", fmt.Errorf("leader of %s: %w", scheduler, err)
	}
	return v.ID, nil
}

// runReport is the run's report file.
type runReport struct {
	Seed     uint64            `json:"seed"`
	Duration string            `json:"duration"`
	TTL      string            `json:"ttl"`
	Offsets  map[string]string `json:"offsets"`
	From     time.Time         `json:"from"`
	To       time.Time         `json:"to"`
	Faults   []Fault           `json:"faults"`
	Outages  []Window          `json:"etcd_outages"`
	Check    Report            `json:"check"`
}

func (h *harness) report(sc Scenario, rep Report) {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, faults for %v, ticks due from %s to %s, ledger %s\n", h.seed, *flagDuration,
		sc.From.UTC().Format(time.RFC3339), sc.To.UTC().Format(time.RFC3339), filepath.Join(h.dir, "ledger"))
	count := map[FaultKind]int{}
	for _, f := range sc.Faults {
		count[f.Kind]++
	}
	fmt.Fprintf(&b, "faults: %d:", len(sc.Faults))
	for _, k := range faultKinds {
		fmt.Fprintf(&b, " %s %d", k, count[k])
	}
	fmt.Fprintf(&b, "\netcd unavailable %d times:", len(sc.Outages))
	for _, o := range sc.Outages {
		fmt.Fprintf(&b, " +%.1fs for %.1fs", o.From.Sub(h.t0).Seconds(), o.To.Sub(o.From).Seconds())
	}
	b.WriteString("\n" + rep.Summary())
	for _, v := range rep.Violations {
		if ls := h.logsAround(v); len(ls) > 0 {
			fmt.Fprintf(&b, "the replicas' logs from %s to %s around: %s: %s\n", stamp(v.Span.From), stamp(v.Span.To), v.Rule, v.Job)
			for _, l := range ls {
				b.WriteString("    " + l + "\n")
			}
		}
	}
	h.t.Logf("report:\n%s", b.String())
	if *flagReport == "" {
		return
	}
	rr := runReport{Seed: h.seed, Duration: flagDuration.String(), TTL: ttl.String(), Offsets: map[string]string{},
		From: sc.From, To: sc.To, Faults: sc.Faults, Outages: sc.Outages, Check: rep}
	for id, o := range sc.Offsets {
		rr.Offsets[id] = o.String()
	}
	js, err := json.MarshalIndent(rr, "", "  ")
	if err == nil {
		err = os.WriteFile(*flagReport, append(js, '\n'), 0o644)
	}
	if err != nil {
		h.t.Errorf("report: %v", err)
	}
}

// sink is the jobs' downstream: the one place their commands write, and a
// fenced one. A command connects, says "start JOB TICK ID FENCE", is told
// how long to work, works, and says "done"; the sink then takes the write
// only if the fence is still current in etcd (the leader's key, or the
// claim's in-progress marker, still has that create revision), and answers
// ok or refused. It records every run in the ledger when its command ends,
// including runs that ended without writing.
type sink struct {
	ln     net.Listener
	cli    *clientv3.Client
	epoch  interface{ Load() int64 }
	file   *os.File
	closed chan struct{}
	wg     sync.WaitGroup

	mu    sync.Mutex
	rng   *rand.Rand // run lengths
	tried map[attemptKey]bool
	runs  []Run
	errs  []string
	conns map[net.Conn]bool
}

func startSink(t *testing.T, path string, cli *clientv3.Client, epoch interface{ Load() int64 }, rng *rand.Rand) *sink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{ln: ln, cli: cli, epoch: epoch, file: f, closed: make(chan struct{}), rng: rng, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	return s
}

func (s *sink) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// close stops taking connections, waits a while for the runs in progress
// and ends the rest. It is idempotent.
func (s *sink) close() {
	select {
	case <-s.closed:
		return
	default:
	}
	close(s.closed)
	s.ln.Close()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		<-done
	}
	s.file.Close()
}

// ledger returns the runs recorded so far and the protocol errors seen.
func (s *sink) ledger() ([]Run, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Run(nil), s.runs...), append([]string(nil), s.errs...)
}

func (s *sink) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(c)
			c.Close()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

func (s *sink) serve(c net.Conn) {
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return // connected and said nothing: killed before it started
	}
	r, length, fail, err := s.begin(line)
	if err != nil {
		s.mu.Lock()
		s.errs = append(s.errs, err.Error())
		s.mu.Unlock()
		return
	}
	then := ""
	if fail {
		then = " fail" // the command writes, then exits 1
	}
	fmt.Fprintf(c, "ok %.3f%s\n", length.Seconds(), then)
	line, err = br.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "done" {
		r.End, r.Outcome = time.Now(), Interrupted
	} else {
		// The command waits for the verdict, and may be killed meanwhile:
		// it ends when its connection closes.
		ended := make(chan time.Time, 1)
		go func() {
			_, _ = io.Copy(io.Discard, br)
			ended <- time.Now()
		}()
		r.Outcome, line = Refused, "refused"
		if s.current(r) {
			r.Outcome, line = Written, "ok"
		}
		r.Wrote = time.Now()
		fmt.Fprintln(c, line)
		r.End = <-ended
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = append(s.runs, r)
	fmt.Fprintln(s.file, r)
}

// attemptKey is the claim a run was made under: its attempts share it.
type attemptKey struct {
	job      string
	tick     int64
	instance string
	epoch    int
	fence    int64
}

// begin reads "start JOB TICK ID FENCE" and returns the run, how long its
// command should work, and whether it should then fail: the first attempt
// of a quarter of a retried job's runs.
func (s *sink) begin(line string) (Run, time.Duration, bool, error) {
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != "start" {
		return Run{}, 0, false, fmt.Errorf("bad start line %q", line)
	}
	r := Run{Job: f[1], Instance: f[3], Epoch: int(s.epoch.Load()), Start: time.Now()}
	var err error
	if r.Tick, err = time.Parse(time.RFC3339, f[2]); err != nil {
		return Run{}, 0, false, fmt.Errorf("start line %q: %v", line, err)
	}
	if r.Fence, err = strconv.ParseInt(f[4], 10, 64); err != nil {
		return Run{}, 0, false, fmt.Errorf("start line %q: %v", line, err)
	}
	for _, sc := range schedulers {
		if sc.Name == r.Job {
			s.mu.Lock()
			defer s.mu.Unlock()
			fail := false
			if sc.Retries {
				if s.tried == nil {
					s.tried = map[attemptKey]bool{}
				}
				k := attemptKey{r.Job, r.Tick.Unix(), r.Instance, r.Epoch, r.Fence}
				fail = !s.tried[k] && s.rng.IntN(4) == 0
				s.tried[k] = true
			}
			return r, sc.length(s.rng), fail, nil
		}
	}
	return Run{}, 0, false, fmt.Errorf("start line %q: unknown job", line)
}

// current reports whether r's fence is still current: the run's in-progress
// marker, in either mode, has the fence as create revision.
// It waits for etcd up to half a minute; a fence that cannot be checked is
// refused, as a fenced downstream fails closed.
func (s *sink) current(r Run) bool {
	var sc scheduler
	for _, x := range schedulers {
		if x.Name == r.Job {
			sc = x
		}
	}
	key := prefix + "/jobs/" + sc.Scheduler + "/" + sc.Name + "/running/"
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := s.cli.Get(ctx, key, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		cancel()
		if err == nil {
			if int(s.epoch.Load()) != r.Epoch {
				return false // etcd was wiped since the run started: its fence is gone
			}
			for _, kv := range resp.Kvs {
				if kv.CreateRevision == r.Fence {
					return true
				}
			}
			return false
		}
		select {
		case <-s.closed:
			return false
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// probe measures when etcd is unavailable: a write every 200 ms that fails
// or takes longer than a second. A write needs what a claim needs, a raft
// leader, a quorum's commit and the apply; a read would pass while commits
// stall.
type probe struct {
	cli    *clientv3.Client
	stop   chan struct{}
	done   chan struct{}
	closer sync.Once

	mu   sync.Mutex
	down []Window
}

func startProbe(cli *clientv3.Client) *probe {
	p := &probe{cli: cli, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *probe) run() {
	defer close(p.done)
	var since time.Time // the start of the outage under way
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			if !since.IsZero() {
				p.record(Window{since, time.Now()})
			}
			return
		case <-tick.C:
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := p.cli.Put(ctx, "chaos/probe", sent.UTC().Format(stampLayout))
		cancel()
		switch {
		case err != nil && since.IsZero():
			since = sent
		case err == nil && !since.IsZero():
			p.record(Window{since, time.Now()})
			since = time.Time{}
		}
	}
}

func (p *probe) record(w Window) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = append(p.down, w)
}

func (p *probe) close() {
	p.closer.Do(func() { close(p.stop) })
	<-p.done
}

func (p *probe) outages() []Window {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Window(nil), p.down...)
}
