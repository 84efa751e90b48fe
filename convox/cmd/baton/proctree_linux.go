package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes this process the reaper of its orphaned
// descendants. The setting is not inherited by children; it survives
// execve(2).
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// errForeignProc says /proc is not this process's PID namespace's, so its
// pids are not ones this process could signal safely.
var errForeignProc = errors.New("/proc is not of this process's PID namespace")

// parents reads every process's parent from /proc. A process that exits
// while it is read is left out.
func parents() (map[int]int, error) {
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		if err != nil {
			return nil, err
		}
		return nil, errForeignProc
	}
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	table := make(map[int]int, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// "pid (comm) state ppid …"; comm may hold spaces and parentheses.
		f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(string(f[1])); err == nil {
			table[pid] = ppid
		}
	}
	return table, nil
}

// zombie reports whether pid has exited and awaits its parent's wait, or
// is gone.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
	return len(f) > 0 && string(f[0]) == "Z"
}

// commandAttr is the command's own process group, and SIGKILL when its
// supervisor dies.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// startLocked starts cmd from a thread that stays alive: Linux sends the
// parent-death signal when the thread that forked exits, not the process.
// The caller's goroutine must not return before the process exits.
func startLocked(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	return cmd.Start()
}

// inForeground reports whether f is a terminal whose foreground process
// group is this process's: a command then takes the terminal over while it
// runs, as a shell's job does, or it stops on its first read (SIGTTIN) or
// change of the terminal's settings (SIGTTOU).
func inForeground(f *os.File) bool {
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == syscall.Getpgrp()
}

// foregroundAttr makes attr's process the foreground process group of the
// terminal on fd, which the supervisor's stdin is, as it starts: the child
// sets it with SIGTTOU still blocked, so being in the background does not
// stop it.
func foregroundAttr(attr *syscall.SysProcAttr, fd int) {
	attr.Foreground, attr.Ctty = true, fd
}

// giveTerminalBack makes pgrp the foreground process group of the terminal
// on fd again, if the foreground group is still from, the command's.
// SIGTTOU is ignored first: the supervisor is not in the foreground group,
// and starts no command after.
func giveTerminalBack(fd, from, pgrp int) {
	if cur, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err != nil || cur != from {
		return
	}
	signal.Ignore(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, pgrp)
}

// foregroundGroup is the foreground process group of the terminal on fd.
func foregroundGroup(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.TIOCGPGRP) }

// hasEnv reports whether pid's environment has a variable that starts with
// prefix ("NAME="). A process whose environment cannot be read has none.
func hasEnv(pid int, prefix string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for v := range bytes.SplitSeq(b, []byte{0}) {
		if bytes.HasPrefix(v, []byte(prefix)) {
			return true
		}
	}
	return false
}
