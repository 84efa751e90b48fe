package cronx

import (
	"context"
	"errors"
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
	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestNoLeaseHoldsManyKeys: with many jobs, and all of their runs going at
// once, no marker is put on a lease that holds markerLeaseKeys keys or
// more, nor a registration on one that holds any key before the
// transaction that puts it, since etcd with auth on checks every key of a
// lease at each put that carries it: the markers of one transaction of
// claims go on one lease, and the next transaction's on another, and a
// term's registrations go regBatch to a transaction on a lease that held
// none.
func TestNoLeaseHoldsManyKeys(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t) // lists every lease of the member
	cli := srv.Client(t)
	jobs := regBatch + 256
	_, fake, started, release := heldLeader(t, srv, "many", "10 * * * * *", jobs)
	defer close(release)
	// 4000 to a lease, each lease a keepalive every TTL/3.
	if _, most := leasedKeys(t, cli, "/by/"); most < 4000 {
		t.Errorf("the lease with most registrations holds %d, want 4000: a term's registrations take a lease per 4000 jobs", most)
	}
	tick := t0.Add(10 * time.Second)
	fireTick(t, fake, tick)
	allStarted(t, started, time.Minute, "the tick's runs")
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
	resp, err := cli.Get(ctx, jobkeys.New(election.DefaultPrefix, scheduler).Dir(), clientv3.WithPrefix())
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

// TestTriggeredAndBackfilledMarkersShareBoundedLeases: runs triggered or
// backfilled at once, each under a marker of its own, put their markers on
// leases as a tick's runs do: none holds more than markerLeaseKeys, and no
// marker's put finds that many on its lease (etcd with auth on checks each
// of them at the put).
func TestTriggeredAndBackfilledMarkersShareBoundedLeases(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t) // lists every lease of the member
	cli := srv.Client(t)
	const jobs = 3 * markerLeaseKeys
	c, _, started, release := heldLeader(t, srv, "manual", "0 0 * * * *", jobs)
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range jobs {
		job := fmt.Sprintf("job-%04d", i)
		var err error
		if i%2 == 0 {
			err = c.Trigger(ctx, job)
		} else {
			_, err = c.Backfill(ctx, job, t0.Add(-2*time.Hour), t0.Add(-2*time.Hour+time.Second), 1)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	allStarted(t, started, time.Minute, "the triggered and backfilled runs")
	n, most := leasedKeys(t, cli, "/running/")
	if n != jobs {
		t.Errorf("%d markers on leases, want one per run: %d", n, jobs)
	}
	if most > markerLeaseKeys {
		t.Errorf("a lease holds %d markers, want at most %d", most, markerLeaseKeys)
	}
	if most := checkedKeys(t, cli, "/running/"); most >= markerLeaseKeys {
		t.Errorf("a marker's put found %d keys on its lease, want fewer than %d", most, markerLeaseKeys)
	}
}

// TestEndedTriggeredAndBackfilledRunsLeaveTheirLeaseRoom: the marker of a
// triggered or backfilled run is uncounted once the run is recorded, as a
// tick's is, so that runs one after another keep to one lease rather than
// making a lease per markerLeaseKeys of them, each kept alive for as long
// as the replica lives.
func TestEndedTriggeredAndBackfilledRunsLeaveTheirLeaseRoom(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	ran, held, release := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	fake := clock.NewFake(t0)
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(cli), WithName("manual"), WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	mustAdd(t, c, "0 0 * * * *", Named("job", FuncJob(func() { ran <- struct{}{} })))
	// A run that holds its marker throughout: the count is exact, not
	// merely floored at 0, so a marker uncounted twice shows.
	mustAdd(t, c, "0 0 * * * *", Named("holder", FuncJob(func() {
		held <- struct{}{}
		<-release
	})))
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	waitRegistered(t, cli, "manual", "job", "holder")
	counted := func() (int, int) { return markersCounted(c) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Trigger(ctx, "holder"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the holding run did not start within a minute")
	}
	for i := range markerLeaseKeys + 2 {
		var err error
		if i%2 == 0 {
			err = c.Trigger(ctx, "job")
		} else {
			// A tick of its own each: an hour apart, in the day before.
			tick := t0.Add(-time.Duration(i) * time.Hour)
			_, err = c.Backfill(ctx, "job", tick, tick.Add(time.Second), 1)
		}
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-ran:
		case <-ctx.Done():
			t.Fatalf("run %d did not start within a minute", i)
		}
		eventually(t, 10*time.Second, func() (bool, string) {
			keys, _ := counted()
			return keys == 1, fmt.Sprintf("after run %d ended, %d markers counted on the replica's leases, want 1: the holding run's", i, keys)
		})
	}
	if _, leases := counted(); leases != 1 {
		t.Errorf("%d runs one after another took %d marker leases, want 1", markerLeaseKeys+2, leases)
	}
}

// heldLeader starts the leader "a" of scheduler, on srv, with jobs jobs on
// spec, named job-0000 on, each of whose runs is counted in started and
// holds until release is closed; it returns once every job is published
// and registered (a trigger or a backfill asks for a job's registration),
// srv being a member of the test's own, whose every lease it lists.
func heldLeader(t *testing.T, srv *etcdtest.Member, scheduler, spec string, jobs int) (*Cron, *clock.Fake, *sync.WaitGroup, chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	started := new(sync.WaitGroup)
	started.Add(jobs)
	fake := clock.NewFake(t0)
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(srv.Client(t)), WithName(scheduler), WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	for i := range jobs {
		mustAdd(t, c, spec, Named(fmt.Sprintf("job-%04d", i), FuncJob(func() {
			started.Done()
			<-release
		})))
	}
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	cli := srv.Client(t)
	waitPublished(t, cli, scheduler, fmt.Sprintf("job-%04d", jobs-1))
	eventually(t, 30*time.Second, func() (bool, string) {
		n, _ := leasedKeys(t, cli, "/by/")
		return n == jobs, fmt.Sprintf("%d of %d registrations", n, jobs)
	})
	return c, fake, started, release
}

// markersCounted is the markers c counts on its marker leases, and how
// many leases it has.
func markersCounted(c *Cron) (keys, leases int) {
	return c.coord.claims.sessions.Markers()
}

// heldRun is a run of a heldRuns job, which returns once release is
// closed.
type heldRun struct {
	tick    time.Time
	ctx     context.Context
	release chan struct{}
}

// heldRuns is a job whose runs each tell the test they started, and wait
// for it to release them, replaced or not.
type heldRuns chan heldRun

func newHeldRuns() heldRuns { return make(heldRuns, 4) }

func (h heldRuns) job() Job {
	return ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		r := heldRun{info.Tick, ctx, make(chan struct{})}
		h <- r
		<-r.release
		return ctx.Err()
	})
}

// next returns the next run that starts, or fails t after 15s.
func (h heldRuns) next(t *testing.T, what string) heldRun {
	t.Helper()
	select {
	case r := <-h:
		return r
	case <-time.After(15 * time.Second):
		t.Fatalf("%s did not start within 15s", what)
		return heldRun{}
	}
}

// replaced fires first, waits for its run, then fires second, and returns
// the first run once the second tick's claim has replaced it: the second
// tick's run, claimed, waits for the first to return.
func (h heldRuns) replaced(t *testing.T, fake *clock.Fake, first, second time.Time) heldRun {
	t.Helper()
	fireTick(t, fake, first)
	a := h.next(t, "the first tick's run")
	fireTick(t, fake, second)
	select {
	case <-a.ctx.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the second tick did not replace the first tick's run within 15s")
	}
	return a
}

// TestAReplacedRunThatNeverStartedGivesItsPlaceBack: a Replace job's run
// that waits for the run it replaces to return, and is itself replaced by
// the next tick before it starts, gives its marker's place on the lease
// back with the marker: once every run has ended, none is counted.
func TestAReplacedRunThatNeverStartedGivesItsPlaceBack(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	runs := newHeldRuns()
	events := newEventLog()
	fake := clock.NewFake(t0)
	c := New(append(observed(events), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(cli), WithName("replace"), WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))...)
	mustAdd(t, c, "*/10 * * * * *", Named("long", runs.job(), WithOverlap(Replace)))
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	waitPublished(t, cli, "replace", "long")
	first, second, third := t0.Add(10*time.Second), t0.Add(20*time.Second), t0.Add(30*time.Second)
	a := runs.replaced(t, fake, first, second)
	eventually(t, 15*time.Second, func() (bool, string) {
		keys, _ := markersCounted(c)
		return keys == 2, fmt.Sprintf("%d markers counted, want 2: the first run's and the second tick's, claimed and waiting", keys)
	})
	fireTick(t, fake, third)
	if e := waitNotRun(t, events, "long", ReasonOvertaken, 15*time.Second); !e.Tick.Equal(second) {
		t.Fatalf("the tick %v was overtaken, want %v", e.Tick, second)
	}
	close(a.release)
	c3 := runs.next(t, "the third tick's run")
	if !c3.tick.Equal(third) {
		t.Fatalf("the run of %v started, want %v", c3.tick, third)
	}
	close(c3.release)
	eventually(t, 15*time.Second, func() (bool, string) {
		keys, _ := markersCounted(c)
		return keys == 0, fmt.Sprintf("%d markers counted once every run ended, want 0", keys)
	})
}

// TestARunReplacedInItsRetryBackoffGivesItsPlaceBack: a Replace job's run
// that failed and waits to retry is replaced by the next tick: its marker
// goes, and its place on the lease with it, so that only the new run's is
// counted.
func TestARunReplacedInItsRetryBackoffGivesItsPlaceBack(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	runs := make(chan Info, 4)
	fake := clock.NewFake(t0)
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(cli), WithName("retry"), WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	mustAdd(t, c, "*/10 * * * * *", Named("flaky", ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		runs <- info
		return errors.New("failed")
	}), WithOverlap(Replace), WithRetries(3, time.Hour)))
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	waitPublished(t, cli, "retry", "flaky")
	for _, tick := range []time.Time{t0.Add(10 * time.Second), t0.Add(20 * time.Second)} {
		fireTick(t, fake, tick)
		select {
		case info := <-runs:
			if !info.Tick.Equal(tick) || info.Attempt != 1 {
				t.Fatalf("ran attempt %d of %v, want the first of %v", info.Attempt, info.Tick, tick)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("the tick %v did not run within 15s", tick)
		}
	}
	eventually(t, 15*time.Second, func() (bool, string) {
		keys, _ := markersCounted(c)
		return keys == 1, fmt.Sprintf("%d markers counted, want 1: the second tick's run's, in its backoff", keys)
	})
}

// TestALeaderHasAMarkerLeaseBeforeItsFirstTick: a replica that starts to
// lead grants a lease for its runs' markers at once, so that its first
// crowded tick's claims do not wait for one; it counts no marker on it,
// and a follower grants none.
func TestALeaderHasAMarkerLeaseBeforeItsFirstTick(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	fake := clock.NewFake(t0)
	start := func(id string) *Cron {
		c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(sp.Client(t)), WithName("warm"), WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		mustAdd(t, c, "0 0 0 1 1 *", Named("yearly", FuncJob(func() {})))
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	a := start("a")
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	b := start("b")
	waitRegistered(t, sp.Client(t), "warm", "yearly")
	eventually(t, wait, func() (bool, string) {
		keys, leases := markersCounted(a)
		return keys == 0 && leases == 1, fmt.Sprintf("the leader counts %d markers on %d marker leases, want none on 1", keys, leases)
	})
	if keys, leases := markersCounted(b); b.coord.scheduling() || keys != 0 || leases != 0 {
		t.Errorf("the follower counts %d markers on %d marker leases, want none on none", keys, leases)
	}
}
