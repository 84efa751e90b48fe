package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// crontabCluster is a `baton etcd` member and replicas of `baton crontab`
// running one crontab, whose job appends a line to a ledger on every tick;
// an observer watches their election.
type crontabCluster struct {
	h       *harness
	dir     string
	name    string // scheduler name
	args    []string
	file    string
	etcd    *etcdProc
	cli     *clientv3.Client
	obs     *observer
	ledger  *ledger
	mu      sync.Mutex
	members map[string]*proc // by --id
}

// tickJob is a crontab entry that runs every second and appends
// "TICK ID STARTED" to ledger: the nominal tick, the replica and the time,
// in Unix nanoseconds, at which the job's shell ran.
//
// The job does nothing about SIGTERM, as most commands do not: on SIGTERM
// baton crontab passes the signal on to a command only once it has run for
// a second, so a deploy that comes as this one starts lets it finish.
func tickJob(ledger string) string {
	return `tick: * * * * * * echo "$BATON_TICK $BATON_ID $(date +%s%N)" >> ` + ledger + "\n"
}

// startCrontabCluster starts etcd and the observer; replicas are started
// with startReplica. args are added to every `baton crontab`.
func (h *harness) startCrontabCluster(ctx context.Context, dir, name, crontab string, args ...string) (*crontabCluster, error) {
	c := &crontabCluster{h: h, dir: dir, name: name, args: args, members: map[string]*proc{}}
	c.ledger = &ledger{path: filepath.Join(dir, "ledger")}
	c.file = filepath.Join(dir, "crontab")
	if crontab == "" {
		crontab = tickJob(c.ledger.path)
	}
	if err := os.WriteFile(c.file, []byte(crontab), 0o644); err != nil {
		return nil, err
	}
	var err error
	if c.etcd, err = h.startEtcd(ctx, dir); err != nil {
		return nil, err
	}
	if c.cli, err = newClient(c.etcd.endpoint); err != nil {
		c.close()
		return nil, err
	}
	if c.obs, err = observe(ctx, c.cli, "/baton/election/"+name+"/"); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// startReplica starts `baton crontab` with --id id.
func (c *crontabCluster) startReplica(id string) (*proc, error) {
	args := append([]string{"crontab", "--endpoints", c.etcd.endpoint, "--id", id, "--name", c.name, "--log-level", "info"}, c.args...)
	args = append(args, c.file)
	p, err := c.h.start(c.dir, id, c.h.baton, etcdAuth.env(), args...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.members[id] = p
	c.mu.Unlock()
	return p, nil
}

func (c *crontabCluster) member(id string) *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[id]
}

// pids returns the process ids of the replicas running, by --id.
func (c *crontabCluster) pids() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for id, p := range c.members {
		if !p.exited() {
			out[id] = p.pid()
		}
	}
	return out
}

// steady waits until n candidates are queued, one of them elected, and the
// ledger's latest line is the leader's: it schedules.
func (c *crontabCluster) steady(ctx context.Context, n int) (electionView, error) {
	for {
		v, err := c.obs.wait(ctx, time.Minute, fmt.Sprintf("%d candidates and a leader", n), func(s electionView) bool {
			return s.candidates == n && s.elected
		})
		if err != nil {
			return v, err
		}
		err = poll(ctx, 30*time.Second, 10*time.Millisecond, "the leader's first tick", func() (bool, error) {
			lines, err := c.ledger.read()
			if err != nil {
				return false, err
			}
			return len(lines) > 0 && lines[len(lines)-1].id == v.leaderID && lines[len(lines)-1].started.After(v.at), nil
		})
		if err != nil {
			return v, err
		}
		if now := c.obs.now(); now.leaderKey == v.leaderKey && now.candidates == n {
			return v, nil
		}
	}
}

func (c *crontabCluster) close() {
	if c.obs != nil {
		c.obs.close()
	}
	c.mu.Lock()
	members := c.members
	c.members = nil
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range members {
		wg.Go(func() { p.stop(30 * time.Second) })
	}
	wg.Wait()
	if c.cli != nil {
		c.cli.Close()
	}
	if c.etcd != nil {
		c.etcd.stop(10 * time.Second)
	}
}

// ledgerLine is one run of the tick job.
type ledgerLine struct {
	tick    time.Time // nominal
	id      string
	started time.Time
}

// ledger reads the lines jobs append, incrementally.
type ledger struct {
	path  string
	mu    sync.Mutex
	off   int64
	lines []ledgerLine
}

// read returns every complete line so far.
func (l *ledger) read() ([]ledgerLine, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.Open(l.path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(l.off, 0); err != nil {
		return nil, err
	}
	buf := make([]byte, 64<<10)
	var data []byte
	for {
		n, err := f.Read(buf)
		data = append(data, buf[:n]...)
		if err != nil || n == 0 {
			break
		}
	}
	end := strings.LastIndexByte(string(data), '\n')
	if end < 0 {
		return l.lines, nil
	}
	l.off += int64(end + 1)
	for s := range strings.SplitSeq(string(data[:end]), "\n") {
		f := strings.Fields(s)
		if len(f) != 3 {
			return nil, fmt.Errorf("ledger line %q: want TICK ID STARTED", s)
		}
		tick, err := time.Parse(time.RFC3339, f[0])
		if err != nil {
			return nil, fmt.Errorf("ledger line %q: %v", s, err)
		}
		ns, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("ledger line %q: %v", s, err)
		}
		l.lines = append(l.lines, ledgerLine{tick: tick, id: f[1], started: time.Unix(0, ns)})
	}
	return slices.Clip(l.lines), nil
}

// settled returns the ledger once no tick from its first to its last is
// missing, or as it is after timeout. A tick claimed in time can start its
// command after the next tick's on a loaded machine; a gap read before its
// line is written is not a miss.
func (l *ledger) settled(ctx context.Context, timeout time.Duration) ([]ledgerLine, error) {
	deadline := time.Now().Add(timeout)
	for {
		lines, err := l.read()
		if err != nil || len(tally(lines).missed) == 0 || time.Now().After(deadline) {
			return lines, err
		}
		if !sleepCtx(ctx, 50*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

// waitLine waits for a line for which cond holds and returns the first.
func (l *ledger) waitLine(ctx context.Context, timeout time.Duration, what string, cond func(ledgerLine) bool) (ledgerLine, error) {
	var found ledgerLine
	err := poll(ctx, timeout, 5*time.Millisecond, what, func() (bool, error) {
		lines, err := l.read()
		if err != nil {
			return false, err
		}
		for _, ln := range lines {
			if cond(ln) {
				found = ln
				return true, nil
			}
		}
		return false, nil
	})
	return found, err
}
