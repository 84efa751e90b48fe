package main

import (
	"bufio"
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

// A command baton runs never outlives baton. baton starts it under a small
// supervisor, itself (`baton _supervise`), which leads a new process group
// that the command and everything it starts belong to. The supervisor holds
// the read end of a pipe whose write end only baton has; when baton dies, even
// by kill -9, the kernel closes that end, the supervisor reads EOF and kills
// the whole group. On Linux the command also gets a parent-death signal, in
// case the supervisor itself is killed. So no command keeps running, unfenced,
// beside a new leader's.

// proc is a running command and its supervisor.
type proc struct {
	cmd      *exec.Cmd
	lifeline *os.File // baton's end of the pipe; closed after the supervisor exits
	done     chan struct{}
	code     int // exit status; valid after done
	copying  sync.WaitGroup
}

// startProc runs argv with env under a supervisor. Output goes to stdout and
// stderr; when prefix is not empty each line is written as "prefix line".
func startProc(argv, env []string, stdin io.Reader, stdout, stderr io.Writer, prefix string) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find baton's own executable: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cmd := exec.Command(self, append([]string{"_supervise", "--"}, argv...)...)
	cmd.Env = env
	cmd.Stdin = stdin
	cmd.ExtraFiles = []*os.File{r} // fd 3 in the supervisor
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{cmd: cmd, lifeline: w, done: make(chan struct{})}
	if prefix == "" {
		cmd.Stdout, cmd.Stderr = stdout, stderr
	} else {
		for _, o := range []struct {
			pipe func() (io.ReadCloser, error)
			to   io.Writer
		}{{cmd.StdoutPipe, stdout}, {cmd.StderrPipe, stderr}} {
			rc, err := o.pipe()
			if err != nil {
				w.Close()
				return nil, err
			}
			p.copying.Add(1)
			go func() {
				defer p.copying.Done()
				copyLines(o.to, rc, prefix)
			}()
		}
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("start %q: %w", argv, err)
	}
	go p.wait()
	return p, nil
}

func (p *proc) wait() {
	// Output first: Wait closes the pipes, and the command may still be
	// writing its last lines.
	p.copying.Wait()
	err := p.cmd.Wait()
	p.lifeline.Close()
	p.code = exitCode(p.cmd.ProcessState, err)
	close(p.done)
}

// exitCode is the command's exit status, or 128+N when signal N killed it.
func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return exitFailure
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if c := ps.ExitCode(); c >= 0 {
		return c
	}
	return exitFailure
}

// signal sends sig to the command's whole process group.
func (p *proc) signal(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// stop asks the command to end with SIGTERM and kills its group after grace.
// It returns when the command has exited.
func (p *proc) stop(grace time.Duration) { p.stopWith(syscall.SIGTERM, grace) }

// stopWith asks the command to end with sig and kills its group after
// grace. It returns when the command has exited.
func (p *proc) stopWith(sig syscall.Signal, grace time.Duration) {
	p.signal(sig)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

// copyLines copies r to w a line at a time, each prefixed, so the lines of
// concurrent commands interleave whole. A line longer than the buffer is
// written in pieces, with the prefix once.
func copyLines(w io.Writer, r io.Reader, prefix string) {
	br := bufio.NewReaderSize(r, 64<<10)
	start := true
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(chunk) > 0 || (err == nil && !isPrefix) {
			var b []byte
			if start {
				b = append(b, prefix...)
			}
			b = append(b, chunk...)
			if !isPrefix {
				b = append(b, '\n')
			}
			lockedWrite(w, b)
			start = !isPrefix
		}
		if err != nil {
			return
		}
	}
}

var writeMu sync.Mutex

func lockedWrite(w io.Writer, b []byte) {
	writeMu.Lock()
	defer writeMu.Unlock()
	_, _ = w.Write(b)
}

// supervise is `baton _supervise -- CMD…`: it runs CMD in its own process
// group, exits with CMD's status, and kills the group when baton dies.
func supervise(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "baton _supervise: no command")
		return exitUsage
	}
	// baton signals the whole group; the supervisor outlives the command to
	// report its status, so it catches those signals and drops them. (Caught,
	// not ignored: an ignored signal would stay ignored in the command.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	lifeline := os.NewFile(3, "lifeline")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = parentDeath()
	if err := startLocked(cmd); err != nil {
		fmt.Fprintf(os.Stderr, "baton: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	if lifeline != nil {
		go func() {
			_, _ = io.Copy(io.Discard, lifeline)
			// EOF: baton is gone. Take the group down, this process included.
			_ = syscall.Kill(-os.Getpid(), syscall.SIGKILL)
		}()
	}
	err := cmd.Wait()
	return exitCode(cmd.ProcessState, err)
}
