package main

import (
	"os/exec"
	"runtime"
	"syscall"
)

// parentDeath asks the kernel to kill the command if the supervisor dies.
func parentDeath() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// startLocked starts cmd from a thread that stays alive: Linux sends the
// parent-death signal when the thread that forked exits, not the process.
func startLocked(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	return cmd.Start()
}
