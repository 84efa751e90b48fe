package cronx

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/claims"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestNoLeaseHoldsManyKeys: with many jobs, and all of their runs going at
// once, no marker is put on a lease that holds markerLeaseKeys keys or
// more, nor a registration on one that holds any key before the
// transaction that puts it, since etcd with auth on checks every key of a
// lease at each put that carries it: the markers of one transaction of
// claims go on one lease, and the next transaction's on another, and a
// term's registrations go publishBatch to a transaction on a lease that
// held none.
func TestNoLeaseHoldsManyKeys(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t) // lists every lease of the member
	cli := srv.Client(t)
	jobs := publishBatch + 256
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
	fireTick(t, fake, tick)
	allStarted(t, &started, time.Minute, "the tick's runs")
	// The tick's runs are under a marker each, or, claimed by a tick's
	// record, under the record's (tickrecord.go); the records are settled
	// by the time the last run starts, each job's claim key moved.
	n, most := leasedKeys(t, cli, "/running/")
	records, _ := leasedKeys(t, cli, "/.tickruns/")
	if records == 0 || n+records*claims.MaxTickJobs < jobs {
		t.Errorf("%d markers of runs and %d of ticks' records on leases, want the %d runs under them, most by records", n, records, jobs)
	}
	if most > markerLeaseKeys-1+claims.MaxEach {
		t.Errorf("a lease holds %d markers, want at most %d", most, markerLeaseKeys-1+claims.MaxEach)
	}
	for _, part := range []string{"/running/", "/.tickruns/"} {
		if most := checkedKeys(t, cli, part); most >= markerLeaseKeys {
			t.Errorf("a marker's put found %d keys on its lease, want fewer than %d", most, markerLeaseKeys)
		}
	}
	eventually(t, 10*time.Second, func() (bool, string) {
		moved := claimedAt(t, cli, "many", tick)
		return moved == jobs, fmt.Sprintf("%d of %d claim keys at the tick", moved, jobs)
	})
	if most := checkedKeys(t, cli, "/by/"); most > 0 {
		t.Errorf("a registration's put found %d keys on its lease, want none: a term's registrations go on a lease in one transaction", most)
	}
}

// checkedKeys is the most keys with part in their name that a put of one
// of them found on its lease before it (those of earlier revisions), of
// the keys there now.
func checkedKeys(t *testing.T, cli *clientv3.Client, part string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	revs := map[int64][]int64{} // lease → create revisions of its keys
	for _, kv := range resp.Kvs {
		if kv.Lease != 0 && strings.Contains(string(kv.Key), part) {
			revs[kv.Lease] = append(revs[kv.Lease], kv.CreateRevision)
		}
	}
	most := 0
	for _, rs := range revs {
		for _, r := range rs {
			before := 0
			for _, q := range rs {
				if q < r {
					before++
				}
			}
			most = max(most, before)
		}
	}
	return most
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

// TestClaimModeMarkersShareLeases: claim mode claims each tick in a
// transaction of its own, so its markers gain nothing from a lease per few
// runs; they share leases of up to claimMarkerLeaseKeys, and a crowded
// tick leaves the replica a few leases to keep alive, not one per
// markerLeaseKeys runs.
func TestClaimModeMarkersShareLeases(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	const jobs = 300
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(jobs)
	fake := clock.NewFake(t0)
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger), WithMode(ClaimMode),
		WithEtcd(srv.Client(t)), WithName("claims"), WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	for i := range jobs {
		mustAdd(t, c, "10 * * * * *", Named(fmt.Sprintf("job-%04d", i), FuncJob(func() {
			started.Done()
			<-release
		})))
	}
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	defer close(release)
	waitPublished(t, cli, "claims", fmt.Sprintf("job-%04d", jobs-1))
	tick := t0.Add(10 * time.Second)
	fireTick(t, fake, tick)
	allStarted(t, &started, time.Minute, "the tick's runs")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	leases := map[int64]int{}
	for _, kv := range resp.Kvs {
		if kv.Lease != 0 && strings.Contains(string(kv.Key), "/running/") {
			leases[kv.Lease]++
		}
	}
	want := (jobs + claimMarkerLeaseKeys - 1) / claimMarkerLeaseKeys
	if len(leases) > want {
		t.Errorf("%d markers on %d leases (%v), want at most %d leases", jobs, len(leases), leases, want)
	}
}

// claimedAt counts the jobs of scheduler whose claim key holds tick.
func claimedAt(t *testing.T, cli *clientv3.Client, scheduler string, tick time.Time) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, newLayout(election.DefaultPrefix, scheduler).jobs, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, kv := range resp.Kvs {
		if !strings.HasSuffix(string(kv.Key), "/last") {
			continue
		}
		if seq, _, err := claimcond.Parse(string(kv.Value)); err == nil && seq == tick.UnixNano() {
			n++
		}
	}
	return n
}

// allStarted waits until every run counted in started has started, for up
// to d.
func allStarted(t *testing.T, started *sync.WaitGroup, d time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { started.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("not all of %s started within %v", what, d)
	}
}
