package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testbin"
)

// The baton binaries the package's tests run as real processes, built once
// per machine and source version (testbin). batonBin is built without the
// race detector: baton etcd (whose work is etcd's code), and the one-shot
// commands (status, pause, convox, help), which start by the hundred and
// have little concurrency of their own. raceBin, built with the race
// detector whenever the test binary is, runs the long-lived commands,
// crontab and run, where baton's own goroutines meet; a process of it that
// reports a data race fails its test.
var batonBin, raceBin string

func TestMain(m *testing.M) {
	if h := os.Getenv("TEST_HELPER"); h != "" {
		os.Exit(helperMain(h, os.Args[1:]))
	}
	var err error
	plain := testbin.Build{Pkg: "./convox/cmd/baton"}
	raced := plain
	raced.Race = raceEnabled
	var wg sync.WaitGroup
	var errs [2]error
	for i, b := range []testbin.Build{plain, raced} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var path string
			path, errs[i] = testbin.Path(b)
			if i == 0 {
				batonBin = path
			} else {
				raceBin = path
			}
		}()
	}
	wg.Wait()
	if err = errors.Join(errs[:]...); err != nil {
		fmt.Fprintln(os.Stderr, "build baton:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// binaryFor returns the binary that runs args: raceBin for crontab and
// run, batonBin for every other command.
func binaryFor(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if a == "crontab" || a == "run" {
			return raceBin
		}
		break
	}
	return batonBin
}

// process is a baton process started by a test.
type process struct {
	t      *testing.T
	cmd    *exec.Cmd
	out    *syncBuffer
	done   chan struct{}
	status int
}

// syncBuffer is a bytes.Buffer safe for a process writing while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startBaton starts baton with args and env added to a clean environment
// (PATH and HOME only, so the developer's BATON_* variables do not leak in).
// The process is killed when the test ends, if it still runs.
func startBaton(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(binaryFor(args), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	p := &process{t: t, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		p.status = exitCode(cmd.ProcessState, err)
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if strings.Contains(p.out.String(), "WARNING: DATA RACE") {
			t.Errorf("baton %s reported a data race", strings.Join(args, " "))
		}
		if t.Failed() {
			t.Logf("baton %s output:\n%s", strings.Join(args, " "), p.out.String())
		}
	})
	return p
}

// wait waits for the process to exit and returns its status.
func (p *process) wait(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.status
	case <-time.After(d):
		p.t.Fatalf("baton %v did not exit within %v; output:\n%s", p.cmd.Args[1:], d, p.out.String())
		return -1
	}
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitOutput waits until the process's output contains s.
func (p *process) waitOutput(s string, d time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(p.out.String(), s) {
		if time.Now().After(deadline) {
			p.t.Fatalf("baton %v: no %q in output within %v; output:\n%s", p.cmd.Args[1:], s, d, p.out.String())
		}
		select {
		case <-p.done:
			if !strings.Contains(p.out.String(), s) {
				p.t.Fatalf("baton %v exited (%d) without printing %q; output:\n%s", p.cmd.Args[1:], p.status, s, p.out.String())
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// runBaton runs baton to completion and returns its status and output.
func runBaton(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	p := startBaton(t, env, args...)
	code := p.wait(time.Minute)
	return code, p.out.String()
}

// until polls cond until it holds or d passes.
func until(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s", d, what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
