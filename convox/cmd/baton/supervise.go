package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// leftoverGrace is how long what a command left running when it exited by
// itself (a background process, a daemon) gets after SIGTERM, before
// SIGKILL.
const leftoverGrace = time.Second

// supervisor is `baton _supervise [--foreground] -- CMD…`, the parent of
// one command. With --foreground (baton's stdin is a terminal whose
// foreground process group is baton's) the command's process group is the
// terminal's foreground group while it runs, and baton's again after. It
// is a child subreaper, so every descendant of the command stays its
// descendant, whatever session or process group it moves to; it exits once
// no descendant is left. baton sends it signals to pass on, a byte each, on
// the lifeline pipe (fd 3), whose write end only baton holds: EOF means
// baton is gone, and the supervisor kills the whole tree at once.
type supervisor struct {
	self int
	mu   sync.Mutex
	cmd  int // the command's pid, also its process group
	// exited is set when the command has been reaped; killing once
	// everything is to be killed, whatever appears.
	exited, killing bool
	// stopping is set once baton has passed on a signal: baton is stopping
	// the tree and kills it at the end of its own grace, so what the
	// command leaves when it exits keeps the rest of that grace. A shell
	// that forks its program (dash does) dies of the SIGTERM its program
	// traps; the program then finishes within --grace, not leftoverGrace.
	stopping bool
	// leftover kills what the command left, leftoverGrace after it exited
	// by itself; nil until then.
	leftover *time.Timer
}

// supervise runs the supervisor; it returns the command's exit status.
func supervise(args []string) int {
	foreground := len(args) > 0 && args[0] == "--foreground"
	if foreground {
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "baton _supervise: no command")
		return exitUsage
	}
	// The supervisor outlives the command to report its status and to end
	// what the command left, so it catches the signals meant for the
	// command and drops them (caught, not ignored: an ignored signal would
	// stay ignored in the command). SIGPIPE too: baton's end of stderr may
	// be gone before the supervisor is done.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	s := &supervisor{self: os.Getpid()}
	subreaper := becomeSubreaper() == nil
	lifeline := os.NewFile(3, "lifeline")
	syscall.CloseOnExec(3)

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = commandAttr()
	batonGroup, err := foregroundGroup(0)
	if foreground = foreground && err == nil; foreground {
		foregroundAttr(cmd.SysProcAttr, 0) // mutation:terminal-foreground
	}
	if err := startLocked(cmd); err != nil {
		fmt.Fprintf(os.Stderr, "baton: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	s.cmd = cmd.Process.Pid
	defer cmd.Process.Release()
	// Read only now: an EOF that came before the start ends the command
	// just started.
	go s.listen(lifeline)

	// Reap every child until none is left: the command, and each orphan
	// reparented here. A subreaper with no child has no descendant.
	var status syscall.WaitStatus
	options := 0
	if foreground {
		options = syscall.WUNTRACED
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, options, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			break // ECHILD
		}
		if ws.Stopped() {
			if pid == s.cmd && ws.StopSignal() == syscall.SIGTSTP {
				// The terminal's Ctrl-Z. baton cannot stop with its
				// command, as a shell's job would (its shell would take
				// the terminal back while the command holds it), and a
				// suspended command would hold its lock, term or claim
				// at a standstill: it goes on.
				_ = syscall.Kill(-s.cmd, syscall.SIGCONT) // mutation:terminal-stop-ignored
			}
			continue
		}
		if pid == s.cmd {
			if foreground {
				giveTerminalBack(0, s.cmd, batonGroup) // mutation:terminal-given-back
			}
			status = ws
			s.commandExited()
		}
		s.reaped()
	}
	if !subreaper {
		// Orphans went to init: the process group is all that is left
		// to reach them by.
		_ = syscall.Kill(-s.cmd, syscall.SIGKILL)
	}
	if status.Signaled() {
		return 128 + int(status.Signal())
	}
	return status.ExitStatus()
}

// listen passes on each signal baton sends, and kills the tree when baton
// is gone.
func (s *supervisor) listen(lifeline io.Reader) {
	b := make([]byte, 1)
	for {
		if _, err := lifeline.Read(b); err != nil {
			s.kill()
			return
		}
		if sig := syscall.Signal(b[0]); sig == syscall.SIGKILL {
			s.kill()
		} else {
			s.pass(sig)
		}
	}
}

// pass passes on a signal of baton's to the whole tree. baton sends one only
// to stop the tree, and follows it with SIGKILL when its grace ends: from
// now on that grace, not leftoverGrace, bounds every process of the tree.
func (s *supervisor) pass(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
	if s.leftover != nil {
		s.leftover.Stop()
	}
	s.signalTree(sig)
}

// commandExited asks what the command left running to end: SIGTERM, then
// SIGKILL after leftoverGrace; unless baton is stopping the tree, which then
// keeps the rest of baton's grace.
func (s *supervisor) commandExited() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exited = true
	if s.killing || s.stopping { // mutation:leftover-sweep-while-stopping
		return
	}
	if s.signalTree(syscall.SIGTERM) > 0 {
		s.leftover = time.AfterFunc(leftoverGrace, s.kill)
	}
}

// kill kills every descendant, now and whenever one is reaped after.
func (s *supervisor) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killing = true
	s.signalTree(syscall.SIGKILL)
}

// reaped kills again once killing: a process forked just before its parent
// was killed may have escaped the last walk, and is an orphan here now.
func (s *supervisor) reaped() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killing {
		s.signalTree(syscall.SIGKILL)
	}
}

// signalTree sends sig to the command's process group until the command
// is reaped (afterwards its pid may be reused), and to every descendant
// outside that group (one that left it: setsid, setpgid); each process gets
// sig once, so that a command's trap does not run twice. It returns how
// many it signalled. s.mu is held.
func (s *supervisor) signalTree(sig syscall.Signal) int {
	n := 0
	grouped := false
	table, err := parents()
	if !s.exited || err != nil {
		if syscall.Kill(-s.cmd, sig) == nil {
			n++
			grouped = true
		}
	}
	if err == nil {
		for _, pid := range descendants(s.self, table) {
			if pg, perr := syscall.Getpgid(pid); grouped && perr == nil && pg == s.cmd {
				continue // the group's signal reached it
			}
			if syscall.Kill(pid, sig) == nil {
				n++
			}
		}
	}
	return n
}
