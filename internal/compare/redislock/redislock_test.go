package redislock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/redis/go-redis/v9"
)

// startRedis runs a throwaway redis-server on a loopback port. A missing
// redis-server fails the test rather than skip it, so a run without one
// cannot pass as a run of these tests (.ci/run installs it).
func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found on PATH (%v): install it, e.g. apt-get install -y redis-server", err)
	}
	port := freePort(t)
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	t.Cleanup(func() { rdb.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for rdb.Ping(context.Background()).Err() != nil {
		select {
		case <-exited:
			t.Fatalf("redis-server exited:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not answer within 30s")
		}
	}
	return rdb
}

func TestTryEXAndRelease(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	if ok, err := TryEX(ctx, rdb, "k", "a", 5*time.Second); !ok || err != nil {
		t.Fatalf("first TryEX = %v, %v; want it taken", ok, err)
	}
	if ok, err := TryEX(ctx, rdb, "k", "b", 5*time.Second); ok || err != nil {
		t.Fatalf("second TryEX = %v, %v; want it refused", ok, err)
	}
	if ttl := rdb.TTL(ctx, "k").Val(); ttl <= 0 || ttl > 5*time.Second {
		t.Errorf("TTL = %v, want the 5s expiry", ttl)
	}
	if err := Release(ctx, rdb, "k"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := TryEX(ctx, rdb, "k", "b", 5*time.Second); !ok {
		t.Error("TryEX after Release refused")
	}
	if _, err := TryEX(ctx, rdb, "k2", "a", 500*time.Millisecond); err == nil {
		t.Error("TryEX with a sub-second expiry: no error")
	}
}

func TestLockerExcludesAndUnlocks(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	a, err := NewLocker(rdb, "p:", "a", 5*time.Second, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewLocker(rdb, "p:", "b", 5*time.Second, slog.Default())
	locking := time.Now()
	l, err := a.Lock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	// The key was set after locking began: what is left of 5s then, at
	// least, however long the test was paused since.
	if ttl := rdb.PTTL(ctx, "p:job").Val(); ttl > 5*time.Second || ttl < 5*time.Second-time.Since(locking)-time.Millisecond {
		t.Errorf("PTTL = %v %v after locking began, want what is left of 5s", ttl, time.Since(locking))
	}
	if _, err := b.Lock(ctx, "job"); !errors.Is(err, ErrHeld) {
		t.Fatalf("second Lock = %v, want ErrHeld", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx, "job"); err != nil {
		t.Fatalf("Lock after Unlock = %v", err)
	}
	// gocron's Shutdown cancels the job's context before Unlock: the DEL
	// fails and the key stays until it expires.
	l2, _ := a.Lock(ctx, "job2")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := l2.Unlock(cancelled); err == nil {
		t.Error("Unlock with a cancelled context: no error")
	}
	if rdb.Exists(ctx, "p:job2").Val() != 1 {
		t.Error("the key went away although the DEL was never sent")
	}
}

// freePort returns a free 127.0.0.1 port for redis-server to bind
// (etcdtest.FreePorts).
func freePort(t *testing.T) int {
	t.Helper()
	ports, err := etcdtest.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}
