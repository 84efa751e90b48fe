package cronx

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// crowdedNames are the names of a child replica's jobs.
func crowdedNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = childJobName(i)
	}
	return names
}

// successor is the replica that takes over from a child: in this process,
// on its own fake clock, its runs in ran and its events in l.
func successor(t *testing.T, srv *etcdtest.Space, spec childSpec, now time.Time, l *eventLog, ran *tickLedger, opts ...JobOption) (*Cron, *clock.Fake) {
	t.Helper()
	fake := clock.NewFake(now)
	b := New(append(observed(l), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(srv.Client(t)), WithName(spec.scheduler),
		WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))...)
	for _, name := range crowdedNames(spec.jobs) {
		mustAdd(t, b, spec.spec, Named(name, ran.job(name), opts...))
	}
	b.Start()
	t.Cleanup(func() { shutdown(t, b, "b") })
	waitCandidates(t, srv.Client(t), spec.scheduler, 2)
	return b, fake
}

// leadingChild starts a child replica of spec and waits until it leads
// with every job published and a timer armed for tick.
func leadingChild(t *testing.T, srv *etcdtest.Space, spec childSpec, tick time.Time) *child {
	t.Helper()
	a := startChild(t, srv, spec, tick.Add(-time.Second))
	a.await(60*time.Second, "leadership", func() bool { return a.leading })
	waitPublished(t, srv.Client(t), spec.scheduler, crowdedNames(spec.jobs)...)
	return a
}

// unaccounted returns the jobs whose tick neither ran (on the child or in
// ran) nor was reported not run in l, and those whose tick ran twice.
func unaccounted(names []string, tick time.Time, a *child, ran *tickLedger, l *eventLog) (missing, twice []string) {
	onChild := a.runs()
	notRun := map[string]bool{}
	l.mu.Lock()
	for _, ev := range l.all {
		if e, ok := ev.(TickNotRun); ok && e.Tick.Equal(tick) {
			notRun[e.Job] = true
		}
	}
	l.mu.Unlock()
	ran.mu.Lock()
	defer ran.mu.Unlock()
	for _, name := range names {
		n := 0
		for _, r := range onChild[name] {
			if r.tick.Equal(tick) {
				n++
			}
		}
		for _, tk := range ran.ran[name] {
			if tk.Equal(tick) {
				n++
			}
		}
		switch {
		case n > 1:
			twice = append(twice, name)
		case n == 0 && !notRun[name]:
			missing = append(missing, name)
		}
	}
	return missing, twice
}

// firstClaim waits for the first put of a job's last claimed tick.
func firstClaim(t *testing.T, w clientv3.WatchChan) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case wr := <-w:
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.PUT && strings.HasSuffix(string(ev.Kv.Key), "/last") {
					return
				}
			}
			if wr.Err() != nil {
				t.Fatalf("watch: %v", wr.Err())
			}
		case <-deadline:
			t.Fatal("no claim of the tick within 30s")
		}
	}
}

// TestLeaderKilledAfterACrowdedTickLosesNoTick is G4 at a crowded tick: a
// leader process is killed with SIGKILL 20 to 80 ms after a tick of 1,000
// jobs fired (after its first claim reached etcd), with claims sent, answered or not, and runs started or not.
// Every job's tick is then run once, by the leader before it died or by its
// successor, or reported not run with its reason (a tick the dead leader
// claimed and did not record is runner_lost: its run may have started), to
// the observers and in the NotRun count; none runs twice.
func TestLeaderKilledAfterACrowdedTickLosesNoTick(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a replica of 1,000 jobs in a process of its own and waits for its lease to lapse; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	spec := childSpec{scheduler: "killed-crowded", jobs: 1000, spec: "*/10 * * * * *", ttl: 3 * time.Second}
	names := crowdedNames(spec.jobs)
	// Near the wall clock: Status counts the last day's ticks by it.
	tick := time.Now().UTC().Truncate(10 * time.Second).Add(10 * time.Second)
	a := leadingChild(t, srv, spec, tick)
	l := newEventLog()
	var ran tickLedger
	b, fakeB := successor(t, srv, spec, tick.Add(-time.Second), l, &ran)
	a.waitDue(tick)
	// The first claim of the tick in etcd starts the 20 to 80 ms: a process
	// built with the race detector takes longer to fire a thousand runs.
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cli := srv.Client(t)
	now, err := cli.Get(wctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	// From the revision before the tick, so no claim comes before the watch.
	claimed := cli.Watch(wctx, jobkeys.New(election.DefaultPrefix, spec.scheduler).Dir(), clientv3.WithPrefix(),
		clientv3.WithRev(now.Header.Revision+1))
	after := 20*time.Millisecond + rand.N(60*time.Millisecond)
	a.set(tick)
	fakeB.Set(tick)
	firstClaim(t, claimed)
	time.Sleep(after) // the fault's timing, not a wait for a result
	a.kill()
	cancel()
	<-a.exited
	t.Logf("killed %v after the tick's first claim, with %d runs started", after, len(a.runs()))
	eventually(t, 60*time.Second, func() (bool, string) {
		missing, twice := unaccounted(names, tick, a, &ran, l)
		if len(twice) > 0 {
			return true, ""
		}
		return len(missing) == 0, fmt.Sprintf("%d ticks neither run nor reported not run, e.g. %v", len(missing), missing[:min(5, len(missing))])
	})
	idleWithin(t, b, 20*time.Second, "b's catch-up")
	if _, twice := unaccounted(names, tick, a, &ran, l); len(twice) > 0 {
		t.Fatalf("%d ticks ran twice, e.g. %v", len(twice), twice[:min(5, len(twice))])
	}
	// Each tick reported not run is counted, once, where Status reads it.
	want := map[string]Reason{}
	l.mu.Lock()
	for _, ev := range l.all {
		if e, ok := ev.(TickNotRun); ok && e.Tick.Equal(tick) {
			want[e.Job] = e.Reason
		}
	}
	l.mu.Unlock()
	byReason := map[Reason]int{}
	for _, r := range want {
		byReason[r]++
	}
	t.Logf("ticks reported not run: %v", byReason)
	eventually(t, 20*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := b.Status(ctx)
		if err != nil {
			return false, err.Error()
		}
		for job, reason := range want {
			j, _ := jobStatus(st, job)
			if j.NotRun[reason] != 1 {
				return false, fmt.Sprintf("%s's NotRun: %v, want 1 %s", job, j.NotRun, reason)
			}
		}
		return true, ""
	})
}

// TestStopAfterACrowdedFirstTickLosesNone is G3 at a crowded tick of jobs
// that never ran: a leader process stops gracefully 15 ms after a tick of
// 600 such jobs, with claims unsent, on the wire and answered, and every
// job runs the tick once, on the leader or on its successor.
func TestStopAfterACrowdedFirstTickLosesNone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a replica of 600 jobs in a process of its own; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	spec := childSpec{scheduler: "stopped-crowded", jobs: 600, spec: "*/10 * * * * *", ttl: stallTTL}
	names := crowdedNames(spec.jobs)
	tick := time.Now().UTC().Truncate(10 * time.Second).Add(10 * time.Second)
	a := leadingChild(t, srv, spec, tick)
	l := newEventLog()
	var ran tickLedger
	b, fakeB := successor(t, srv, spec, tick.Add(-time.Second), l, &ran)
	a.waitDue(tick)
	a.set(tick)
	fakeB.Set(tick)
	time.Sleep(15 * time.Millisecond) // the fault's timing, not a wait for a result
	a.stop()
	a.await(30*time.Second, "the end of Stop", func() bool { return a.stopped })
	t.Logf("stopped with %d runs started", len(a.runs()))
	eventually(t, 30*time.Second, func() (bool, string) {
		missing, twice := unaccounted(names, tick, a, &ran, l)
		if len(twice) > 0 {
			return true, ""
		}
		return len(missing) == 0, fmt.Sprintf("%d ticks neither run nor reported not run, e.g. %v", len(missing), missing[:min(5, len(missing))])
	})
	idleWithin(t, b, 20*time.Second, "b's catch-up")
	missing, twice := unaccounted(names, tick, a, &ran, l)
	if len(twice) > 0 {
		t.Fatalf("%d ticks ran twice, e.g. %v", len(twice), twice[:min(5, len(twice))])
	}
	if len(missing) > 0 {
		t.Fatalf("%d ticks lost", len(missing))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.all {
		if e, ok := ev.(TickNotRun); ok && e.Tick.Equal(tick) {
			t.Errorf("%s's tick not run (%s): a graceful Stop loses none", e.Job, e.Reason)
		}
	}
}
