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
// children; every child of baton that is neither a supervisor it started
// nor a child it had before (a process an entrypoint started before it
// exec'd baton) is one of them, and is killed with its descendants, before
// baton reports the command's end (and so before it gives up a lock, a
// term or a claim).
type orphanage struct {
	once sync.Once
	on   bool // baton is a subreaper
	// starting is held for reading while supervisors start, and for
	// writing by a sweep's look and kill: a sweep never sees a supervisor
	// that is not yet in live, and starts do not wait for one another.
	starting sync.RWMutex
	// mu guards live and foreign.
	mu      sync.Mutex
	live    map[int]bool // supervisors started and not yet reaped
	foreign map[int]bool // children baton had before it became a subreaper
}

// orphans is baton's: being a subreaper is a property of the process.
var orphans orphanage

// start starts a supervisor.
func (o *orphanage) start(cmd *exec.Cmd) error {
	o.starting.RLock()
	defer o.starting.RUnlock()
	o.once.Do(func() {
		o.foreign = map[int]bool{}
		if table, err := parents(); err == nil {
			for pid, ppid := range table {
				if ppid == os.Getpid() {
					o.foreign[pid] = true
				}
			}
		}
		o.on = becomeSubreaper() == nil
	})
	if err := cmd.Start(); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
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
		o.starting.Lock()
		o.mu.Lock()
		table, err := parents()
		var found []int
		if err == nil {
			for pid, ppid := range table {
				switch {
				case ppid != self || o.live[pid]:
				case o.foreign[pid]:
					if zombie(pid) {
						waitPid(pid) // not baton's to kill, but to reap
						delete(o.foreign, pid)
					}
				default:
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
		o.starting.Unlock()
		if len(found) == 0 {
			return
		}
		for _, pid := range found {
			waitPid(pid)
		}
	}
}
