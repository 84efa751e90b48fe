//go:build linux

package chaos

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// Faults are drawn from the seed in decks: each deck is every kind once, in
// a shuffled order, so a run of a few minutes sees each kind. Every draw is
// made whatever happens at run time, so a seed replays the same schedule.
var faultKinds = []FaultKind{Kill, Deploy, Pause, Partition, MemberKill, LeaderKill, QuorumLoss, Wipe, Reload, ColdStart}

// Faults made of the application's own moves rather than failures. The
// checker knows them by what they are made of: a reload excuses nothing,
// and a cold start is recorded as the quorum loss and the deploys it is.
const (
	// Reload: SIGHUP to every baton process of the leader (of any replica,
	// or of every replica, one time in three), two to four times about a
	// second apart: each reads its crontab again, removes every job and
	// adds it back, while ticks come due.
	Reload FaultKind = "reload"
	// ColdStart: etcd down (two members killed, the third unreachable),
	// every replica stopped (SIGTERM) and started again while it is down,
	// then etcd back.
	ColdStart FaultKind = "cold-start"
)

// draw is the randomness of one fault, drawn before it is injected.
type draw struct {
	hold time.Duration // how long the fault lasts, on top of its minimum
	gap  time.Duration // quiet time after it
	pick int           // chooses a scheduler, a replica or a member
	any  bool          // a partition hits any replica rather than a leader
}

func drawFault(rng *rand.Rand) draw {
	return draw{
		hold: time.Duration(rng.Int64N(int64(3 * time.Second))).Round(100 * time.Millisecond),
		gap:  2*time.Second + time.Duration(rng.Int64N(int64(3*time.Second))).Round(100*time.Millisecond),
		pick: rng.IntN(1 << 20),
		any:  rng.IntN(3) == 0,
	}
}

// injectFaults injects faults one at a time until the deadline passes.
func (h *harness) injectFaults(until time.Time) {
	for time.Now().Before(until) {
		deck := slices.Clone(faultKinds)
		h.rng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		for _, kind := range deck {
			if !time.Now().Before(until) {
				return
			}
			d := drawFault(h.rng)
			f := h.inject(kind, d)
			h.faults = append(h.faults, f)
			h.t.Logf("%s", h.describe(f))
			time.Sleep(d.gap + quietAfter(f, ttl, 2*maxSkew))
		}
	}
}

func (h *harness) inject(kind FaultKind, d draw) Fault {
	switch kind {
	case Kill, Deploy, Pause:
		return h.replicaFault(kind, h.leaderVictim(d), d)
	case Partition:
		n := h.leaderVictim(d)
		if d.any {
			n = h.nodes[d.pick%len(h.nodes)]
		}
		return h.replicaFault(kind, n, d)
	case Reload:
		return h.reload(d)
	case ColdStart:
		return h.coldStart(d)
	default:
		return h.etcdFault(kind, d)
	}
}

// describe is one line of the test log about a fault.
func (h *harness) describe(f Fault) string {
	s := fmt.Sprintf("+%6.1fs %-16s %-8s for %4.1fs", f.Start.Sub(h.t0).Seconds(), f.Kind, f.Target, f.End.Sub(f.Start).Seconds())
	switch {
	case f.LedKnown && len(f.Led) == 0:
		s += " (leading nothing)"
	case f.LedKnown:
		s += " (leading " + strings.Join(f.Led, ",") + ")"
	case f.Kind == Kill || f.Kind == Deploy || f.Kind == Pause || f.Kind == Partition:
		s += " (leaders unknown)"
	}
	return s
}

// Replica faults.

// leaderVictim is the leader of a leader-mode scheduler chosen by the draw,
// or a replica the draw picks when that scheduler has no leader now.
func (h *harness) leaderVictim(d draw) *node {
	var leaderMode []string
	for _, s := range schedulers {
		if !s.Claim {
			leaderMode = append(leaderMode, s.Scheduler)
		}
	}
	leaders, _ := h.leaders()
	id := leaders[leaderMode[d.pick%len(leaderMode)]]
	for _, n := range h.nodes {
		if n.id == id {
			return n
		}
	}
	return h.nodes[d.pick%len(h.nodes)]
}

// leaders reads who leads each leader-mode scheduler, by replica; ok is false
// when etcd could not tell.
func (h *harness) leaders() (leaders map[string]string, ok bool) {
	leaders = map[string]string{}
	for _, s := range schedulers {
		if s.Claim {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		id, err := leaderOf(ctx, h.cli, s.Scheduler)
		cancel()
		if err != nil {
			return leaders, false
		}
		leaders[s.Scheduler] = id
	}
	return leaders, true
}

func (h *harness) replicaFault(kind FaultKind, n *node, d draw) Fault {
	f := Fault{Kind: kind, Target: n.id}
	if leaders, ok := h.leaders(); ok {
		f.LedKnown = true
		for s, id := range leaders {
			if id == n.id {
				f.Led = append(f.Led, s)
			}
		}
		slices.Sort(f.Led)
	}
	f.Start = time.Now()
	switch kind {
	case Kill:
		// baton dies at once; each command's supervisor sees its lifeline
		// close and kills the command's process group.
		n.signal(syscall.SIGKILL)
		n.wait(10 * time.Second)
		time.Sleep(time.Second + d.hold)
		n.start(h)
	case Deploy:
		n.signal(syscall.SIGTERM)
		// baton resigns (at most 3 s) and lets commands finish (--grace).
		if !n.wait(grace + 10*time.Second) {
			h.t.Errorf("replica %s did not exit within %v of SIGTERM", n.id, grace+10*time.Second)
			n.signal(syscall.SIGKILL)
			n.wait(10 * time.Second)
		}
		time.Sleep(500*time.Millisecond + d.hold/2)
		n.start(h)
	case Pause:
		// A VM pause: the replica and every command it runs stop together,
		// and go on together.
		stopped := n.pause()
		time.Sleep(ttl + time.Second + d.hold)
		resume(stopped)
	case Partition:
		for _, p := range n.proxies {
			p.Blackhole()
		}
		time.Sleep(ttl + time.Second + d.hold)
		for _, p := range n.proxies {
			p.Cut() // the partition broke every connection
			p.Pass()
		}
	}
	f.End = time.Now()
	return f
}

// signal sends sig to each of the replica's baton processes.
func (n *node) signal(sig syscall.Signal) {
	for _, p := range n.procs {
		_ = p.cmd.Process.Signal(sig)
	}
}

// wait waits until the replica's baton processes have exited, and reports
// whether they did within d.
func (n *node) wait(d time.Duration) bool {
	deadline := time.After(d)
	for _, p := range n.procs {
		select {
		case <-p.done:
		case <-deadline:
			return false
		}
	}
	return true
}

// stopped lists what a pause stopped: baton processes, and process groups
// (negative ids) of their commands.
type stopped []int

// pause stops the replica's baton processes, then the process groups of the
// commands they run (each command leads its own group, under a supervisor
// that is a child of baton). A stopped baton starts no new command, so one
// look at its children after it stopped finds them all; a second look
// catches a fork that was under way.
func (n *node) pause() stopped {
	var s stopped
	var batons []int
	for _, p := range n.procs {
		batons = append(batons, p.cmd.Process.Pid)
		if syscall.Kill(p.cmd.Process.Pid, syscall.SIGSTOP) == nil {
			s = append(s, p.cmd.Process.Pid)
		}
	}
	for range 2 {
		time.Sleep(20 * time.Millisecond)
		for _, pid := range children(batons) {
			if !slices.Contains(s, -pid) && syscall.Kill(-pid, syscall.SIGSTOP) == nil {
				s = append(s, -pid)
			}
		}
	}
	return s
}

// resume continues everything a pause stopped, at once.
func resume(s stopped) {
	for _, id := range s {
		_ = syscall.Kill(id, syscall.SIGCONT)
	}
}

// children returns the processes whose parent is one of pids.
func children(pids []int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); slices.Contains(pids, ppid) {
			out = append(out, pid)
		}
	}
	return out
}

// etcd faults.

func (h *harness) etcdFault(kind FaultKind, d draw) Fault {
	c := h.etcd.cluster
	f := Fault{Kind: kind, Start: time.Now()}
	switch kind {
	case MemberKill, LeaderKill:
		leader := c.RaftLeader(h.t)
		m := leader
		if kind == MemberKill {
			var followers []*etcdtest.Member
			for _, m := range c.Members {
				if m != leader {
					followers = append(followers, m)
				}
			}
			m = followers[d.pick%len(followers)]
		}
		f.Target, f.Start = m.Name(), time.Now()
		h.etcd.kill(m)
		time.Sleep(2*time.Second + d.hold)
		h.etcd.restart(h.t, m)
	case QuorumLoss:
		keep := d.pick % len(c.Members)
		var down []*etcdtest.Member
		var names []string
		for i, m := range c.Members {
			if i != keep {
				down, names = append(down, m), append(names, m.Name())
			}
		}
		f.Target, f.Start = strings.Join(names, ","), time.Now()
		for _, m := range down {
			h.etcd.kill(m)
		}
		time.Sleep(2*time.Second + d.hold)
		for _, m := range down {
			h.etcd.restart(h.t, m)
		}
	case Wipe:
		f.Target = "all"
		h.etcd.wipe(h.t, wipeDown+d.hold)
	}
	h.waitEtcd()
	f.End = time.Now()
	return f
}

// wipeDown is how long a wipe keeps etcd down at least. A restarted etcd
// pod is down for some seconds, and it matters: once etcd has forgotten
// which ticks were claimed, a replica whose clock is behind by more than the
// outage could claim again a tick claimed just before it. Nothing can
// remember it then; DESIGN.md asks baton only to survive a fresh etcd.
const wipeDown = 2*maxSkew + 2*time.Second

// waitEtcd waits until a linearizable read succeeds: a quorum and a leader.
func (h *harness) waitEtcd() {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := h.cli.Get(ctx, "chaos/health")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("etcd not healthy a minute after a fault: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// etcd is the cluster the replicas use, behind one fixed address per member
// (a proxy), so that a wipe can replace the whole cluster: etcdtest's
// members keep their ports only while their cluster lives.
type etcd struct {
	cluster *etcdtest.Cluster
	proxies []*etcdtest.Proxy
	// epoch counts wipes. It moves when the new cluster becomes reachable:
	// no claim can commit while etcd is down, so every run that starts
	// before then holds a fence of the old cluster.
	epoch atomic.Int64
}

func startEtcd(t *testing.T) *etcd {
	e := &etcd{cluster: etcdtest.StartCluster(t, 3)}
	for _, m := range e.cluster.Members {
		e.proxies = append(e.proxies, etcdtest.NewProxy(t, m.Addr()))
	}
	return e
}

// Endpoints are the proxies' URLs.
func (e *etcd) Endpoints() []string {
	var eps []string
	for _, p := range e.proxies {
		eps = append(eps, p.Endpoint())
	}
	return eps
}

// refused is an address nothing listens on: a proxy that forwards there
// refuses connections, as a dead host's port does.
const refused = "127.0.0.1:1"

// kill kills a member as kill -9 would: the kernel resets its connections,
// and its proxy's with them, and a new one through the proxy is refused.
func (e *etcd) kill(m *etcdtest.Member) {
	m.Kill()
}

// restart starts a killed member again.
func (e *etcd) restart(t *testing.T, m *etcdtest.Member) {
	m.Restart(t)
}

// wipe kills every member, keeps etcd down for at least down, and starts a
// new, empty cluster behind the same proxies.
func (e *etcd) wipe(t *testing.T, down time.Duration) {
	start := time.Now()
	for _, p := range e.proxies {
		p.Retarget(refused)
	}
	e.cluster.Kill()
	c := etcdtest.StartCluster(t, 3)
	time.Sleep(time.Until(start.Add(down)))
	e.cluster = c
	e.epoch.Add(1)
	for i, p := range e.proxies {
		p.Retarget(c.Members[i].Addr())
	}
}

// Application faults.

// reload makes replicas reload their crontabs a few times, at times drawn
// to fall at different points of a second, so that some reloads straddle a
// tick.
func (h *harness) reload(d draw) Fault {
	targets := []*node{h.leaderVictim(d)}
	if d.any {
		targets = h.nodes
	}
	var ids []string
	for _, n := range targets {
		ids = append(ids, n.id)
	}
	f := Fault{Kind: Reload, Target: strings.Join(ids, ","), Start: time.Now()}
	for i := range 2 + int(d.hold/time.Second) {
		for _, n := range targets {
			n.signal(syscall.SIGHUP)
		}
		time.Sleep(700*time.Millisecond + time.Duration((d.pick>>(3*i))%8)*90*time.Millisecond)
	}
	f.End = time.Now()
	return f
}

// coldStart takes etcd down, restarts every replica while it is down, and
// brings etcd back: the replicas must start without etcd and schedule once
// it answers. It records the quorum loss and the deploys it is made of, for
// the checker.
func (h *harness) coldStart(d draw) Fault {
	c := h.etcd.cluster
	f := Fault{Kind: ColdStart, Target: "all", Start: time.Now()}
	// Two members die and the third stops answering: a member restarted
	// alone could not form a quorum, so the third runs on, unreachable.
	keep := c.Members[d.pick%len(c.Members)]
	kept := h.etcd.proxies[slices.Index(c.Members, keep)]
	kept.Retarget(refused)
	var down []*etcdtest.Member
	var names []string
	for _, m := range c.Members {
		names = append(names, m.Name())
		if m != keep {
			down = append(down, m)
			h.etcd.kill(m)
		}
	}
	lost := Fault{Kind: QuorumLoss, Target: strings.Join(names, ","), Start: f.Start}
	var deploys []Fault
	for _, n := range h.nodes {
		deploys = append(deploys, Fault{Kind: Deploy, Target: n.id, Start: time.Now()})
		n.signal(syscall.SIGTERM)
	}
	for i, n := range h.nodes {
		if !n.wait(grace + 10*time.Second) {
			h.t.Errorf("replica %s did not exit within %v of SIGTERM", n.id, grace+10*time.Second)
			n.signal(syscall.SIGKILL)
			n.wait(10 * time.Second)
		}
		n.start(h)
		deploys[i].End = time.Now()
	}
	time.Sleep(2*time.Second + d.hold) // the replicas run; etcd does not answer
	for _, m := range down {
		h.etcd.restart(h.t, m)
	}
	kept.Retarget(keep.Addr())
	h.waitEtcd()
	f.End = time.Now()
	lost.End = f.End
	h.faults = append(h.faults, lost)
	h.faults = append(h.faults, deploys...)
	return f
}
