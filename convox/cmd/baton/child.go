package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// A command baton runs never outlives baton, and nor does anything it
// starts. baton starts it under a supervisor, itself (`baton _supervise`,
// supervise.go), a child subreaper that every descendant of the command
// stays under, and exits only once none is left:
//
//   - baton passes a signal on to the whole tree, every session and
//     process group in it, through the supervisor; SIGKILL after a grace;
//   - when the command exits, the supervisor ends what it left running;
//   - when baton dies, even by kill -9, the kernel closes baton's end of the
//     supervisor's lifeline pipe, and the supervisor kills the whole tree
//     at once, well before baton's lease can expire;
//   - when the supervisor dies, the command gets SIGKILL (its parent-death
//     signal), and what else the supervisor watched is reparented to baton,
//     also a subreaper, which kills it (orphans.go) before it reports the
//     command's end; what else baton inherits, as a container's PID 1, it
//     only reaps.
//
// So no descendant of a command keeps running, unfenced, beside a new
// leader's or holder's.

// proc is a running command and its supervisor.
type proc struct {
	cmd      *exec.Cmd
	lifeline *os.File // baton's end of the pipe; closed after the supervisor exits
	done     chan struct{}
	code     int // exit status; valid after done
	// killed is the signal that killed the supervisor itself, 0 if none;
	// valid after done.
	killed  syscall.Signal
	copying sync.WaitGroup
}

// startProc runs argv with env under a supervisor. Output goes to stdout and
// stderr; when prefix is not empty each line is written as "prefix line".
func startProc(argv, env []string, stdin io.Reader, stdout, stderr io.Writer, prefix string) (*proc, error) {
	if err := checkArgs("an argument", argv); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	if err := checkArgs("an environment variable", env); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find baton's own executable: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	args := []string{"_supervise", "--"}
	if f, ok := stdin.(*os.File); ok && inForeground(f) {
		args = []string{"_supervise", "--foreground", "--"}
	}
	cmd := exec.Command(self, append(args, argv...)...)
	cmd.Env = env
	cmd.Stdin = stdin
	cmd.ExtraFiles = []*os.File{r} // fd 3 in the supervisor
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{cmd: cmd, lifeline: w, done: make(chan struct{})}
	// Output goes through pipes of baton's own, not cmd's, whose Wait
	// would wait for their last writer: it may be an orphan that only the
	// sweep after Wait kills.
	var readers, writers []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	outs := []io.Writer{stdout, stderr}
	for i, dst := range []*io.Writer{&cmd.Stdout, &cmd.Stderr} {
		if f, ok := outs[i].(*os.File); ok && prefix == "" {
			*dst = f
			continue
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			closeAll(readers)
			closeAll(writers)
			w.Close()
			return nil, err
		}
		readers, writers = append(readers, pr), append(writers, pw)
		*dst = pw
		to := outs[i]
		p.copying.Add(1)
		go func() {
			defer p.copying.Done()
			defer pr.Close()
			if prefix == "" {
				_, _ = io.Copy(to, pr)
				return
			}
			copyLines(to, pr, prefix)
		}()
	}
	err = orphans.start(cmd)
	closeAll(writers)
	if err != nil {
		w.Close()
		p.copying.Wait()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	go p.wait()
	return p, nil
}

func (p *proc) wait() {
	err := p.cmd.Wait()
	// A supervisor that was killed left its orphans to baton: they go
	// first, and with them the last writers of the output pipes.
	orphans.exited(p.cmd.Process.Pid)
	p.copying.Wait()
	p.lifeline.Close()
	p.code = exitCode(p.cmd.ProcessState, err)
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		p.killed = ws.Signal()
	}
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

// signal sends sig to every process of the command's tree, through the
// supervisor.
func (p *proc) signal(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_, _ = p.lifeline.Write([]byte{byte(sig)})
}

// stop asks the command's tree to end with SIGTERM and kills what is left
// of it after grace. It returns when no process of the tree is left.
func (p *proc) stop(grace time.Duration) { p.stopWith(syscall.SIGTERM, grace) }

// stopWith asks the command's tree to end with sig and kills what is left
// of it after grace. It returns when no process of the tree is left.
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

// maxOutputLine is the longest line of a command's output that baton writes
// whole; a longer one is split into lines of at most this length.
const maxOutputLine = 64 << 10

// copyLines copies r to w a line at a time, each prefixed and written in one
// write, so the lines of concurrent commands interleave whole. A line longer
// than maxOutputLine is written as several lines, each prefixed and cut at a rune's
// boundary.
func copyLines(w io.Writer, r io.Reader, prefix string) {
	br := bufio.NewReaderSize(r, maxOutputLine)
	var carry []byte // a rune cut by the last piece
	cut := false     // the last piece was cut from a longer line
	for {
		chunk, err := br.ReadSlice('\n')
		full := err == bufio.ErrBufferFull
		piece := append(carry, chunk...)
		carry = nil
		if full {
			n := runeBoundary(piece)
			carry = append([]byte(nil), piece[n:]...)
			piece = piece[:n]
		}
		// A long line's end: nothing left of it but its newline.
		end := cut && string(piece) == "\n"
		cut = full
		if len(piece) > 0 && !end {
			b := make([]byte, 0, len(prefix)+len(piece)+1)
			b = append(b, prefix...)
			b = append(b, bytes.TrimSuffix(piece, []byte("\n"))...)
			lockedWrite(w, append(b, '\n'))
		}
		if err != nil && !full {
			return
		}
	}
}

// runeBoundary is the length of b's longest prefix that does not end inside
// a UTF-8 sequence.
func runeBoundary(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) && i > 0 {
				return i
			}
			break
		}
	}
	return len(b)
}

// writeMu serializes the writes of commands' lines, and of baton's own log
// lines, so that none lands inside another.
var writeMu sync.Mutex

func lockedWrite(w io.Writer, b []byte) { _, _ = lockedWriter{w}.Write(b) }

// lockedWriter writes to w under writeMu.
type lockedWriter struct{ w io.Writer }

func (l lockedWriter) Write(b []byte) (int, error) {
	writeMu.Lock()
	defer writeMu.Unlock()
	return l.w.Write(b)
}
