package election_test

import (
	"context"
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

	other, _ := election.NewMutex(cli, "migrations", election.WithTTL(5*time.Second))
	fmt.Println("second holder:", other.TryLock(ctx))

	if err := m.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("second holder after unlock:", other.TryLock(ctx))
	other.Unlock(ctx)
	// Output:
	// holding the lock; fencing token > 0: true
	// second holder: lock "migrations": election: lock is held by another holder
	// second holder after unlock: <nil>
}

func ExampleClaimSeq() {
	cli := connect()
	defer cli.Close()
	ctx := context.Background()

	tick := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC).UnixNano()
	for _, replica := range []string{"web-1", "web-2", "web-3"} {
		_, err := election.ClaimSeq(ctx, cli, "/baton/example/nightly", tick, election.ClaimedBy(replica))
		fmt.Println(replica, err == nil)
	}
	_, by, _, _ := election.LastClaim(ctx, cli, "/baton/example/nightly")
	fmt.Println("ran on", by)
	// Output:
	// web-1 true
	// web-2 false
	// web-3 false
	// ran on web-1
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
	// Output:
	// /baton/billing web-1
	// job name "nightly report": use letters, digits, '.', '_' and '-', starting with a letter or digit
}
