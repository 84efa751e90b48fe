package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// harness is what every figure shares: the working directory, the baton
// binary and the processes started, which close stops.
type harness struct {
	cfg    config
	dir    string
	baton  string
	stderr io.Writer

	mu    sync.Mutex
	procs []*proc
}

func newHarness(ctx context.Context, cfg config, stderr io.Writer) (*harness, error) {
	dir, err := os.MkdirTemp("", "baton-bench-")
	if err != nil {
		return nil, err
	}
	h := &harness{cfg: cfg, dir: dir, baton: cfg.baton, stderr: stderr}
	if h.baton == "" {
		h.baton = filepath.Join(dir, "baton")
		h.logf("building baton")
		if err := buildBaton(ctx, h.baton); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	return h, nil
}

// buildBaton builds the baton command of this checkout into out.
func buildBaton(ctx context.Context, out string) error {
	args := []string{"build", "-o", out, "github.com/batonhq/baton/convox/cmd/baton"}
	b, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.stderr, "%s bench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// close stops every process still running and removes the working
// directory, unless asked to keep it.
func (h *harness) close() {
	h.mu.Lock()
	procs := h.procs
	h.procs = nil
	h.mu.Unlock()
	for _, p := range procs {
		p.stop(5 * time.Second)
	}
	if h.cfg.keep {
		h.logf("kept %s", h.dir)
		return
	}
	os.RemoveAll(h.dir)
}

// subdir makes a fresh directory for one figure or measurement.
func (h *harness) subdir(name string) (string, error) {
	d := filepath.Join(h.dir, name)
	if err := os.RemoveAll(d); err != nil {
		return "", err
	}
	return d, os.MkdirAll(d, 0o755)
}

// proc is a child process: baton, or a worker of this program.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
}

// start runs bin with args in a clean environment (PATH, HOME and env only,
// so that the caller's BATON_* variables stay out), its output in a log
// file under dir.
func (h *harness) start(dir, name, bin string, env []string, args ...string) (*proc, error) {
	logf, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	var out io.Writer = logf
	if h.cfg.verbose {
		out = io.MultiWriter(logf, prefixWriter{w: h.stderr, prefix: "[" + name + "] "})
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, log: logf, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits up to d for the process to exit.
func (p *proc) wait(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return p.err
	case <-t.C:
		return fmt.Errorf("%s did not exit within %v", p.name, d)
	}
}

// stop sends SIGTERM, waits up to grace, then kills.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if p.wait(grace) != nil && !p.exited() {
		p.cmd.Process.Kill()
		<-p.done
	}
}

// output returns what the process has printed so far.
func (p *proc) output() string { return readFile(p.log.Name()) }

// prefixWriter writes each line with a prefix. A line split over writes
// may come out in pieces; it is for watching, not for parsing.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (pw prefixWriter) Write(b []byte) (int, error) {
	s := strings.TrimSuffix(string(b), "\n")
	s = pw.prefix + strings.ReplaceAll(s, "\n", "\n"+pw.prefix) + "\n"
	if _, err := io.WriteString(pw.w, s); err != nil {
		return 0, err
	}
	return len(b), nil
}

// sleepCtx sleeps d and reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// poll calls cond every interval until it holds, ctx ends or timeout passes.
func poll(ctx context.Context, timeout, interval time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v", what, timeout)
		}
		if !sleepCtx(ctx, interval) {
			return fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
}
