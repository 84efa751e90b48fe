package main

import (
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
)

// commandMark is in the environment of every command baton starts
// (BATON_FENCE, run.go and crontab_job.go), and so in that of every process
// a command starts, unless it clears its environment.
const commandMark = "BATON_FENCE="

// orphanage ends what a supervisor leaves behind when it dies without
// ending its command's tree (kill -9, the OOM killer). baton is a child
// subreaper from its first command on, so those processes become baton's
// children. Others do too that are none of a command's: the children baton
// had before it became a subreaper (a process an entrypoint started before
// it exec'd baton) and what they leave; and, when baton is a container's
// PID 1, every orphan of the container, a `docker exec` or `kubectl exec`
// session's included. Of baton's children that are not supervisors it
// started, those with commandMark (and not among the children it had before)
// are a command's: they are killed with their descendants, before baton
// reports the command's end (and so before it gives up a lock, a term or a
// claim). The others are only reaped, when they exit.
type orphanage struct {
	once sync.Once
	on   bool // baton is a subreaper
	// starting is held for reading while supervisors start, and for
	// writing by a sweep's or a reap's look and kill or wait: neither
	// sees a supervisor that is not yet in live, and starts do not wait
	// for one another.
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
		if o.on || os.Getpid() == 1 {
			go o.reapOnExit()
		}
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

// reapOnExit reaps, whenever a child exits, every exited child that is not
// a supervisor (whose exit its proc waits for): orphans that are none of a
// command's are left to run, but not as zombies. A baton that runs commands
// starts no other child whose exit it would wait for.
func (o *orphanage) reapOnExit() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	for range ch {
		o.starting.Lock()
		o.mu.Lock()
		if table, err := parents(); err == nil {
			for pid, ppid := range table {
				if ppid == os.Getpid() && !o.live[pid] && zombie(pid) {
					waitPid(pid)
					delete(o.foreign, pid)
				}
			}
		}
		o.mu.Unlock()
		o.starting.Unlock()
	}
}

// sweep kills and reaps every orphan of a command and its descendants, and
// reaps the other orphans that have exited. An orphan's children are
// reparented to baton before it can be reaped, so a sweep that kills none
// is done.
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
				case zombie(pid):
					waitPid(pid)
					delete(o.foreign, pid)
				case o.foreign[pid] || !hasEnv(pid, commandMark): // mutation:orphan-not-a-commands
					// Not a command's: not baton's to kill.
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
