package main

import (
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// orphanage ends what a supervisor leaves behind when it dies without
// ending its command's tree (kill -9, the OOM killer). baton is a child
// subreaper from its first command on, so those processes become baton's
// children; every child of baton that is not a supervisor it started is
// one of them, and is killed with its descendants, before baton reports
// the command's end (and so before it gives up a lock, a term or a claim).
type orphanage struct {
	once sync.Once
	on   bool // baton is a subreaper
	// mu guards live and is held while a supervisor starts, so a sweep
	// never sees a supervisor that is not yet in live.
	mu   sync.Mutex
	live map[int]bool // supervisors started and not yet reaped
}

// orphans is baton's: being a subreaper is a property of the process.
var orphans orphanage

// start starts a supervisor.
func (o *orphanage) start(cmd *exec.Cmd) error {
	o.once.Do(func() { o.on = becomeSubreaper() == nil })
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	if o.live == nil {
		o.live = map[int]bool{}
	}
	o.live[cmd.Process.Pid] = true
	return nil
}

// exited is told that the supervisor pid was reaped; it returns once
// nothing the supervisor left is alive.
func (o *orphanage) exited(pid int) {
	o.mu.Lock()
	delete(o.live, pid)
	o.mu.Unlock()
	o.sweep()
}

// sweep kills and reaps every orphan and its descendants. An orphan's
// children are reparented to baton before it can be reaped, so a sweep
// that finds none is done.
func (o *orphanage) sweep() {
	if !o.on {
		return
	}
	self := os.Getpid()
	for {
		o.mu.Lock()
		table, err := parents()
		var found []int
		if err == nil {
			for pid, ppid := range table {
				if ppid == self && !o.live[pid] {
					found = append(found, pid)
				}
			}
		}
		for _, pid := range found {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			for _, d := range descendants(pid, table) {
				_ = syscall.Kill(d, syscall.SIGKILL)
			}
		}
		o.mu.Unlock()
		if len(found) == 0 {
			return
		}
		for _, pid := range found {
			waitPid(pid)
		}
	}
}
