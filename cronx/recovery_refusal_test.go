package cronx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// lostTickState writes what a leader "a" that claimed tick of job and died
// mid-run leaves in etcd: the job's claim of tick and, when lease is not
// 0, the tick's marker on lease (nobody keeps it alive).
func lostTickState(t *testing.T, cli *clientv3.Client, keys layout, job, spec string, tick time.Time, lease clientv3.LeaseID) {
	t.Helper()
	seq := tick.UnixNano()
	ops := []clientv3.Op{
		clientv3.OpPut(keys.Last(job), claimcond.Value(seq, "a")),
		clientv3.OpPut(keys.Spec(job), spec),
	}
	if lease != 0 {
		ops = append(ops, clientv3.OpPut(keys.TickMarker(job, seq), claimcond.Value(seq, "a"), clientv3.WithLease(lease)))
	}
	if _, err := cli.Txn(context.Background()).Then(ops...).Commit(); err != nil {
		t.Fatal(err)
	}
}

// grant is a lease of ttl seconds that the test revokes as it ends.
func grant(t *testing.T, cli *clientv3.Client, ttl int64) clientv3.LeaseID {
	t.Helper()
	l, err := cli.Grant(context.Background(), ttl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Revoke(context.Background(), l.ID) })
	return l.ID
}

// noRecoveredRun fails the test if l holds a start of a run again.
func noRecoveredRun(t *testing.T, l *eventLog) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.all {
		if e, ok := ev.(RunStarted); ok && e.Recovered > 0 {
			t.Errorf("the tick ran again: %+v", e)
		}
	}
}

// TestRecoveryWaitsForNoOtherRun: the next leader does not run again a
// tick whose runner was lost while another run of a job that is not Allow
// is in progress (a trigger's, on another replica): a BufferOne or
// BufferAll job's runs never overlap, nor does an older tick replace a
// newer run. It reports the tick not run, as overlap, as it does for a
// Forbid job.
func TestRecoveryWaitsForNoOtherRun(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	T := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	for name, o := range map[string]Overlap{"forbid": Forbid, "replace": Replace, "bufferone": BufferOne, "bufferall": BufferAll} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			scheduler := "recover-busy-" + name
			keys := jobkeys.New(election.DefaultPrefix, scheduler)
			lostTickState(t, cli, keys, "hourly", "0 0 * * * *", T, 0)
			other := keys.TriggerMarker("hourly", 1)
			if _, err := cli.Put(context.Background(), other, claimcond.Value(0, "c"), clientv3.WithLease(grant(t, cli, 60))); err != nil {
				t.Fatal(err)
			}
			l := newEventLog()
			var ran tickLedger
			b := New(append(observed(l), WithSeconds(), WithEtcd(cli), WithName(scheduler), WithMisfire(RunOnce, time.Minute),
				withClock(clock.NewFake(T.Add(20*time.Second))), WithLocation(time.UTC), WithLogger(testLogger{t, "b"}),
				WithElection(election.WithIdentity("b"), election.WithTTL(2*time.Second)))...)
			mustAdd(t, b, "0 0 * * * *", Named("hourly", ran.job("hourly"), WithOverlap(o), WithRecovery(1)))
			b.Start()
			t.Cleanup(func() { shutdown(t, b, "b") })
			e := waitNotRun(t, l, "hourly", ReasonOverlap, 20*time.Second)
			if !e.Tick.Equal(T) || !errors.Is(e.Err, errRecoveryOverlap) {
				t.Errorf("not run: %v (%v), want %v, another run in progress", e.Tick, e.Err, T)
			}
			idleWithin(t, b, 20*time.Second, "b")
			noRecoveredRun(t, l)
		})
	}
}

// TestRecoveryLeavesATickOvertaken: a tick whose runner was lost is not
// run again once a later tick of the job was claimed (here run, beside it,
// by an Allow job) before its marker lapsed: it is reported not run, as
// overtaken, rather than run after its successor.
func TestRecoveryLeavesATickOvertaken(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	T := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	keys := jobkeys.New(election.DefaultPrefix, "recover-overtaken")
	lease := grant(t, cli, 60)
	lostTickState(t, cli, keys, "tens", "*/10 * * * * *", T, lease)
	// b's catch-up finds T claimed by a term before, and then reads T's
	// marker until it lapses: only then may the next tick come, or the
	// catch-up's claim would find that tick's rather than T's.
	cfg := srv.ClientConfig()
	polled := make(chan struct{}, 1)
	marker := keys.TickMarker("tens", T.UnixNano())
	etcdtest.ObserveCalls(&cfg, func(_ string, req, _ any) {
		txn, _ := req.(*etcdserverpb.TxnRequest)
		for _, op := range txn.GetSuccess() {
			if r := op.GetRequestRange(); r != nil && r.CountOnly && strings.HasSuffix(string(r.Key), marker) {
				select {
				case polled <- struct{}{}:
				default:
				}
			}
		}
	})
	raw, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	l := newEventLog()
	var ran tickLedger
	fake := clock.NewFake(T.Add(time.Second))
	b := New(append(observed(l), WithSeconds(), WithEtcd(srv.Within(raw)), WithName("recover-overtaken"), WithMisfire(RunOnce, time.Minute),
		withClock(fake), WithLocation(time.UTC), WithLogger(testLogger{t, "b"}),
		WithElection(election.WithIdentity("b"), election.WithTTL(2*time.Second)))...)
	mustAdd(t, b, "*/10 * * * * *", Named("tens", ran.job("tens"), WithRecovery(1)))
	b.Start()
	t.Cleanup(func() { shutdown(t, b, "b") })
	select {
	case <-polled:
	case <-time.After(20 * time.Second):
		t.Fatal("b did not look at the lost runner's marker within 20s")
	}
	next := T.Add(10 * time.Second)
	if !fake.WaitDueBy(next, 20*time.Second) {
		t.Fatal("b armed no timer for the next tick")
	}
	fake.Set(next)
	waitFor(t, l, 20*time.Second, fmt.Sprintf("a run of %v", next), func(e RunStarted) bool { return e.Tick.Equal(next) })
	if _, err := cli.Revoke(context.Background(), lease); err != nil { // the lost runner's lease lapses
		t.Fatal(err)
	}
	e := waitNotRun(t, l, "tens", ReasonOvertaken, 40*time.Second)
	if !e.Tick.Equal(T) || !errors.Is(e.Err, errRecoveryOvertaken) {
		t.Errorf("not run: %v (%v), want %v, overtaken", e.Tick, e.Err, T)
	}
	idleWithin(t, b, 20*time.Second, "b")
	noRecoveredRun(t, l)
}

// TestRecoveringJobsListOverlap: a job that recovers its runs and is not
// Allow can have a tick counted as overlap (its run again refused), in
// leader mode, whatever its policy; others only under Forbid.
func TestRecoveringJobsListOverlap(t *testing.T) {
	for _, tc := range []struct {
		mode     Mode
		overlap  Overlap
		recovers bool
		want     bool
	}{
		{LeaderMode, Forbid, false, true},
		{LeaderMode, BufferOne, false, false},
		{LeaderMode, BufferOne, true, true},
		{LeaderMode, Replace, true, true},
		{LeaderMode, Allow, true, false},
		{ClaimMode, BufferAll, true, false},
	} {
		if got := slices.Contains(reasonsOf(true, tc.mode, tc.overlap, tc.recovers), ReasonOverlap); got != tc.want {
			t.Errorf("mode %v, overlap %v, recovers %v: overlap listed %v, want %v", tc.mode, tc.overlap, tc.recovers, got, tc.want)
		}
	}
}
