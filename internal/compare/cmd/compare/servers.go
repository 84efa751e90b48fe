package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// servers are the coordination services every contender shares: one
// redis-server and one etcd member, both on loopback ports, both without
// persistence worth the name.
type servers struct {
	redisAddr string
	etcdURL   string
	procs     []*exec.Cmd
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ensureRedis installs Debian's redis-server when it is missing.
func ensureRedis(logf func(string, ...any)) error {
	if _, err := exec.LookPath("redis-server"); err == nil {
		return nil
	}
	logf("redis-server not found: apt-get update && apt-get install -y redis-server")
	for _, args := range [][]string{{"update"}, {"install", "-y", "redis-server"}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	_, err := exec.LookPath("redis-server")
	return err
}

// startServers starts redis-server and `baton etcd` under dir and waits until
// both answer.
func startServers(ctx context.Context, dir, baton string) (*servers, error) {
	s := &servers{}
	rport, err := freePort()
	if err != nil {
		return nil, err
	}
	s.redisAddr = fmt.Sprintf("127.0.0.1:%d", rport)
	// No RDB snapshots, no AOF: a lock server that forgets on restart, as
	// most cache-and-lock Redis deployments are.
	redisCmd := exec.Command("redis-server", "--port", strconv.Itoa(rport), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning")
	if err := s.start(redisCmd, filepath.Join(dir, "redis.log")); err != nil {
		return nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: s.redisAddr})
	defer rdb.Close()
	if err := waitFor(ctx, 10*time.Second, func() error { return rdb.Ping(ctx).Err() }); err != nil {
		s.stop()
		return nil, fmt.Errorf("redis-server on %s: %w", s.redisAddr, err)
	}

	cport, err := freePort()
	if err != nil {
		s.stop()
		return nil, err
	}
	pport, err := freePort()
	if err != nil {
		s.stop()
		return nil, err
	}
	s.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", cport)
	etcdCmd := exec.Command(baton, "etcd", "--name", "compare", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", s.etcdURL, "--advertise-client-urls", s.etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", pport))
	if err := s.start(etcdCmd, filepath.Join(dir, "etcd.log")); err != nil {
		s.stop()
		return nil, err
	}
	if err := waitFor(ctx, 30*time.Second, func() error { return etcdHealthy(s.etcdURL) }); err != nil {
		s.stop()
		return nil, fmt.Errorf("baton etcd on %s (log %s): %w", s.etcdURL, filepath.Join(dir, "etcd.log"), err)
	}
	return s, nil
}

func (s *servers) start(cmd *exec.Cmd, logPath string) error {
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	f.Close() // the child has its own descriptor
	s.procs = append(s.procs, cmd)
	return nil
}

// stop ends the servers, etcd first, and waits for them.
func (s *servers) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
	s.procs = nil
}

// etcdHealthy asks the member's /health, as Convox's health check does.
func etcdHealthy(url string) error {
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintf(conn, "GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n")
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"health":"true"`) {
			return nil
		}
	}
	return errors.New("not healthy yet")
}

func waitFor(ctx context.Context, limit time.Duration, try func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := try()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
