package etcdtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// memberProcess is one run of a member's program.
type memberProcess struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser // held open: the member exits when it closes
	ready chan struct{}  // closed when the member printed "ready"
	exit  chan struct{}  // closed when the process has exited

	mu     sync.Mutex
	stderr strings.Builder
}

// stopWait bounds a graceful stop; past it the member is killed.
const stopWait = 10 * time.Second

func startProcess(name, bin string, args []string) (*memberProcess, error) {
	p := &memberProcess{name: name, ready: make(chan struct{}), exit: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stderr = writerFunc(func(b []byte) (int, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stderr.Len() < 64<<10 {
			p.stderr.Write(b)
		}
		if os.Getenv("BATON_ETCDTEST_LOG") != "" {
			os.Stderr.Write(b)
		}
		return len(b), nil
	})
	p.stdin = stdin
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start member %s: %w", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				close(p.ready)
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		p.cmd.Wait()
		close(p.exit)
	}()
	return p, nil
}

// waitReady waits until the member serves clients, or fails.
func (p *memberProcess) waitReady(d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.ready:
		return nil
	case <-p.exit:
		return fmt.Errorf("member %s exited (%v) before it was ready: %s", p.name, p.cmd.ProcessState, p.errors())
	case <-t.C:
		return fmt.Errorf("member %s not ready within %v: %s", p.name, d, p.errors())
	}
}

func (p *memberProcess) errors() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.TrimSpace(p.stderr.String())
}

// stop ends the member gracefully, and kills it if that takes too long.
func (p *memberProcess) stop() {
	p.cmd.Process.Signal(syscall.SIGCONT) // a paused member cannot stop
	p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(stopWait)
	defer t.Stop()
	select {
	case <-p.exit:
		p.stdin.Close()
	case <-t.C:
		p.kill()
	}
}

// kill ends the member at once.
func (p *memberProcess) kill() {
	p.cmd.Process.Kill()
	<-p.exit
	p.stdin.Close()
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
