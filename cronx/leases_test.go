package cronx

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestNoLeaseHoldsManyKeys: with more jobs than a lease may hold, and all
// of their runs going at once, the registrations and the markers spread
// over leases of a bounded number of keys each, since etcd with auth on
// checks every key of a lease at each put that carries it.
func TestNoLeaseHoldsManyKeys(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t) // lists every lease of the member
	cli := srv.Client(t)
	jobs := regLeaseKeys + markerLeaseKeys
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(jobs)
	fake := clock.NewFake(t0)
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(srv.Client(t)), WithName("many"), WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	for i := range jobs {
		mustAdd(t, c, "10 * * * * *", Named(fmt.Sprintf("job-%04d", i), FuncJob(func() {
			started.Done()
			<-release
		})))
	}
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	defer close(release)
	waitPublished(t, cli, "many", fmt.Sprintf("job-%04d", jobs-1))
	eventually(t, 30*time.Second, func() (bool, string) {
		n, _ := leasedKeys(t, cli, "/by/")
		return n == jobs, fmt.Sprintf("%d of %d registrations", n, jobs)
	})
	tick := t0.Add(10 * time.Second)
	if !fake.WaitDueBy(tick, wait) {
		t.Fatal("no timer for the tick")
	}
	fake.Set(tick)
	done := make(chan struct{})
	go func() { started.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("not every run started within a minute")
	}
	n, most := leasedKeys(t, cli, "/running/")
	if n != jobs {
		t.Errorf("%d markers on leases, want %d", n, jobs)
	}
	if most > markerLeaseKeys {
		t.Errorf("a lease holds %d markers, want at most %d", most, markerLeaseKeys)
	}
	if _, most := leasedKeys(t, cli, "/by/"); most > regLeaseKeys {
		t.Errorf("a lease holds %d registrations, want at most %d", most, regLeaseKeys)
	}
}

// leasedKeys counts the keys with part in their name that are on a lease,
// in all and on the lease that holds most of them.
func leasedKeys(t *testing.T, cli *clientv3.Client, part string) (n, most int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leases, err := cli.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases.Leases {
		ttl, err := cli.TimeToLive(ctx, l.ID, clientv3.WithAttachedKeys())
		if err != nil {
			continue // expired meanwhile
		}
		k := 0
		for _, key := range ttl.Keys {
			if strings.Contains(string(key), part) {
				k++
			}
		}
		n += k
		most = max(most, k)
	}
	return n, most
}
