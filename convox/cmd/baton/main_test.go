package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// batonBin is the baton binary, built once for the package's tests, which
// run it as real processes.
var batonBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "baton-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	batonBin = filepath.Join(dir, "baton")
	build := exec.Command("go", "build", "-race", "-o", batonBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build baton:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
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
	cmd := exec.Command(batonBin, args...)
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
