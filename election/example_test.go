package election_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestMain runs an embedded etcd for the examples and points
// BATON_ETCD_ENDPOINTS at it, as a deployment would.
func TestMain(m *testing.M) {
	srv, stop, err := etcdtest.StartMain()
	if err != nil {
		log.Fatal(err)
	}
	os.Setenv("BATON_ETCD_ENDPOINTS", srv.Endpoint())
	code := m.Run()
	stop()
	os.Exit(code)
}

// connect builds a client from the BATON_ETCD_* environment.
func connect() *clientv3.Client {
	cfg, err := election.ConnectionFromEnv().ClientConfig()
	if err != nil {
		log.Fatal(err)
	}
	cfg.Logger = zap.NewNop()
	cli, err := clientv3.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	return cli
}

func ExampleElector_Run() {
	cli := connect()
	defer cli.Close()

	e, err := election.New(cli, "reports", election.WithIdentity("web-1"), election.WithTTL(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	err = e.Run(ctx, func(ctx context.Context, term election.Term) {
		fmt.Println("leading as", term.Identity)
		// Work goes here; it stops when ctx is done. Writes to etcd that
		// must not outlive the term are guarded by it:
		cli.Txn(ctx).If(term.Cmp()).Then(clientv3.OpPut("/reports/last", "sent")).Commit()
		stop() // a program would return on SIGTERM instead
	})
	fmt.Println("Run returned:", err)
	// Output:
	// leading as web-1
	// Run returned: context canceled
}

func ExampleMutex() {
	cli := connect()
	defer cli.Close()

	m, err := election.NewMutex(cli, "migrations", election.WithTTL(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := m.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding the lock; fencing token > 0:", m.Fence().Revision > 0)

	other, _ := election.NewMutex(cli, "migrations", election.WithIdentity("web-2"), election.WithTTL(5*time.Second))
	fmt.Println("second holder:", other.TryLock(ctx))

	if err := m.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("second holder after unlock:", other.TryLock(ctx))
	// Anyone can ask who holds it, without taking part.
	h, err := election.Holder(ctx, cli, election.DefaultPrefix, "migrations")
	fmt.Println("held by", h.Identity, err)
	other.Unlock(ctx)
	_, err = election.Holder(ctx, cli, election.DefaultPrefix, "migrations")
	fmt.Println("held by nobody:", errors.Is(err, election.ErrNoLeader))
	// Output:
	// holding the lock; fencing token > 0: true
	// second holder: lock "migrations": election: lock is held by another holder
	// second holder after unlock: <nil>
	// held by web-2 <nil>
	// held by nobody: true
}

// Settings are resolved once, the same way everywhere: options win over
// BATON_PREFIX, BATON_ID and BATON_TTL, which win over the defaults.
func ExampleResolve() {
	s, err := election.Resolve(election.WithPrefix("/baton/billing"), election.WithIdentity("web-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Prefix, s.Identity)
	fmt.Println(election.CheckName("job", "nightly report"))
	ttl, err := election.ParseTTL("15") // as BATON_TTL is read
	fmt.Println(ttl, err, ttl <= election.MaxTTL, election.DefaultTTL)
	// Output:
	// /baton/billing web-1
	// job name "nightly report": use letters, digits, '.', '_' and '-', starting with a letter or digit
	// 15s <nil> true 10s
}

// Work that must stop before another instance can take over what a lease
// holds runs under a session's context: it ends at the safe local deadline,
// with the reason as its cause.
func ExampleNewSession() {
	cli := connect()
	defer cli.Close()
	ctx := context.Background()

	s, err := election.NewSession(ctx, cli, election.WithTTL(5*time.Second), election.WithMargin(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("deadline within the TTL:", time.Until(s.Deadline()) <= 5*time.Second)
	// Keys put with clientv3.WithLease(s.Lease()) go when the session ends.
	if err := s.Close(ctx); err != nil {
		log.Fatal(err)
	}
	<-s.Done()
	fmt.Println(context.Cause(s.Context()))
	// Output:
	// deadline within the TTL: true
	// election: session closed
}

// Observe follows an election without campaigning: no leader first, then
// each leader as it changes.
func ExampleObserve() {
	cli := connect()
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	leaders, err := election.Observe(ctx, cli, election.DefaultPrefix, "indexer")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("no leader:", (<-leaders).None())

	e, err := election.New(cli, "indexer", election.WithIdentity("web-2"), election.WithTTL(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx, func(ctx context.Context, _ election.Term) { <-ctx.Done() }) }()
	fmt.Println("leader:", (<-leaders).Identity)
	stop()
	<-done
	// The leader may come once more, with the time it was elected, before
	// its resignation does.
	for l := range leaders {
		if l.None() {
			fmt.Println("no leader again")
			break
		}
	}
	// Output:
	// no leader: true
	// leader: web-2
	// no leader again
}
