package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// replica is one running process of a contender.
type replica struct {
	instance string
	offset   time.Duration
	cmd      *exec.Cmd
	done     chan struct{}
	stopped  bool // SIGSTOPped and not yet continued
}

// cluster is the replicas of one contender in one scenario.
type cluster struct {
	dir     string // the run's directory: ledger, crontab, logs
	command func(instance string, offset time.Duration) *exec.Cmd

	mu       sync.Mutex
	replicas map[string]*replica
	order    []string
}

func newCluster(dir string, command func(string, time.Duration) *exec.Cmd) *cluster {
	return &cluster{dir: dir, command: command, replicas: map[string]*replica{}}
}

// start launches a replica named instance whose clock is off by offset.
func (c *cluster) start(instance string, offset time.Duration) error {
	cmd := c.command(instance, offset)
	log, err := os.Create(filepath.Join(c.dir, instance+".log"))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", instance, err)
	}
	r := &replica{instance: instance, offset: offset, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(r.done) }()
	c.mu.Lock()
	c.replicas[instance] = r
	c.order = append(c.order, instance)
	c.mu.Unlock()
	return nil
}

func (c *cluster) get(instance string) (*replica, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.replicas[instance]
	if !ok {
		return nil, fmt.Errorf("no replica %q", instance)
	}
	return r, nil
}

// first is the earliest started replica still running.
func (c *cluster) first() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range c.order {
		select {
		case <-c.replicas[name].done:
		default:
			return name
		}
	}
	return ""
}

// signal sends sig to the replica's process alone (kill -9, SIGTERM).
func (c *cluster) signal(instance string, sig syscall.Signal) error {
	r, err := c.get(instance)
	if err != nil {
		return err
	}
	return r.cmd.Process.Signal(sig)
}

// pause stops the replica and everything it started (SIGSTOP), as a VM pause
// or a stop-the-world stall would: a job a baton replica runs as a child
// process freezes with it, as a Go job in a goroutine does.
func (c *cluster) pause(instance string) error {
	r, err := c.get(instance)
	if err != nil {
		return err
	}
	pid := r.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	for _, p := range descendants(pid) {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	c.mu.Lock()
	r.stopped = true
	c.mu.Unlock()
	return nil
}

// resume continues a paused replica, its children first.
func (c *cluster) resume(instance string) error {
	r, err := c.get(instance)
	if err != nil {
		return err
	}
	pid := r.cmd.Process.Pid
	for _, p := range descendants(pid) {
		_ = syscall.Kill(p, syscall.SIGCONT)
	}
	c.mu.Lock()
	r.stopped = false
	c.mu.Unlock()
	return syscall.Kill(pid, syscall.SIGCONT)
}

// wait waits at most d for the replica to exit and reports whether it did.
func (c *cluster) wait(instance string, d time.Duration) bool {
	r, err := c.get(instance)
	if err != nil {
		return true
	}
	select {
	case <-r.done:
		return true
	case <-time.After(d):
		return false
	}
}

// stopAll sends SIGTERM to every replica still running, continuing paused
// ones first, and kills those not gone within grace.
func (c *cluster) stopAll(grace time.Duration) {
	c.mu.Lock()
	var live []*replica
	for _, name := range c.order {
		live = append(live, c.replicas[name])
	}
	c.mu.Unlock()
	for _, r := range live {
		if r.stopped {
			_ = c.resume(r.instance)
		}
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(grace)
	for _, r := range live {
		select {
		case <-r.done:
		case <-deadline:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	}
}

// descendants lists the processes below pid, read from /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, ch := range children[p] {
			out = append(out, ch)
			queue = append(queue, ch)
		}
	}
	return out
}
