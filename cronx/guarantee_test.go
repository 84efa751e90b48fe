package cronx

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCrashedLeadersMissedTickRunsOnceLate is G4 as a user sees it: the
// leader is cut off from etcd just before a tick, as by a crash, so it
// cannot run it; its lease lapses after the TTL and the successor runs that
// tick once, late (misfire RunOnce), or not at all (Skip). The replicas'
// clocks are fake and set alike, so that the leader is cut off before its
// clock reaches the tick however late the test process is scheduled.
func TestCrashedLeadersMissedTickRunsOnceLate(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	for _, policy := range []Misfire{RunOnce, Skip} {
		name := map[Misfire]string{RunOnce: "run-once", Skip: "skip"}[policy]
		t.Run(name, func(t *testing.T) {
			srv := etcdtest.Shared(t)
			proxy := etcdtest.NewProxy(t, srv.Addr())
			ch := make(chan Info, 64)
			job := func(ctx context.Context) error {
				info, _ := InfoFrom(ctx)
				ch <- info
				return nil
			}
			pc := &policyCluster{t: t, cli: srv.Client(t), name: "g4"}
			events := newEventLog()
			events.logOnFailure(t)
			replica := func(id string, endpoint string) {
				cli := srv.Client(t)
				if endpoint != "" {
					cli = srv.NewClient(t, endpoint)
				}
				fake := clock.NewFake(t0)
				// A TTL of 5 s: with 2 s, a process stalled for a second
				// beside busy loops lost a's session before its cut-off,
				// and b led before the crash the test makes.
				c := New(append(observed(events), WithSeconds(), WithEtcd(cli), WithName("g4"), WithMisfire(policy, time.Minute),
					withClock(fake), WithLocation(time.UTC),
					WithElection(election.WithIdentity(id), election.WithTTL(5*time.Second)))...)
				mustAdd(t, c, "*/5 * * * * *", Named("report", ContextFunc(job)))
				c.Start()
				t.Cleanup(func() {
					select {
					case <-c.Stop().Done():
					case <-time.After(15 * time.Second):
						t.Errorf("%s: Stop's context not done within 15s", id)
					}
				})
				pc.ids, pc.fakes, pc.crons = append(pc.ids, id), append(pc.fakes, fake), append(pc.crons, c)
			}
			// a leads, through a proxy that will cut it off; b follows.
			replica("a", proxy.Endpoint())
			first := firstRun(t, pc, ch, events, "report", t0.Add(5*time.Second), 5*time.Second)
			if first.Instance != "a" {
				t.Fatalf("the first run was of %v on %s, want a (the first replica leads)", first.Tick, first.Instance)
			}
			replica("b", "")
			waitCandidates(t, srv.Client(t), "g4", 2)

			// Cut a off before its next tick, a crash as etcd sees it; then
			// the tick comes.
			proxy.Blackhole()
			missed := first.Tick.Add(5 * time.Second)
			pc.set(missed)

			// b leads once a's lease lapses; the tick after the missed one
			// runs on b either way.
			deadline := time.Now().Add(15 * time.Second)
			for !pc.crons[1].coord.scheduling() {
				if time.Now().After(deadline) {
					t.Fatal("b did not lead within 15s of a's cut-off")
				}
				time.Sleep(10 * time.Millisecond)
			}
			next := missed.Add(5 * time.Second)
			if !pc.fakes[1].WaitDueBy(next, 15*time.Second) {
				t.Fatalf("b leads but armed no timer due by %v within 15s", next.Format(time.TimeOnly))
			}
			var got []Info
			if policy == RunOnce {
				// The catch-up is claimed as b takes over, the next tick
				// later: the clock moves on once it has run, so that a
				// loaded machine cannot put the next tick's claim first.
				got = append(got, runAfter(t, ch, time.Time{}, 15*time.Second, "run of the missed tick (misfire RunOnce)"))
			} else {
				// b's decision on the missed tick, before the next one can
				// overtake it: the gap it reports (the tick not run), and
				// every run its takeover fired (a catch-up, were one fired,
				// is in flight by now) ended.
				if e := waitNotRun(t, events, "report", ReasonNoLeader, 30*time.Second); !e.Tick.Equal(missed) || e.Instance != "b" {
					t.Errorf("not run for no_leader: the tick %v on %s, want %v on b", e.Tick.Format(time.TimeOnly), e.Instance, missed.Format(time.TimeOnly))
				}
				idleWithin(t, pc.crons[1], 15*time.Second, "b's takeover")
			}
			pc.set(next)
			for done := len(got) > 0 && !got[len(got)-1].Tick.Before(next); !done; {
				select {
				case r := <-ch:
					got = append(got, r)
					done = !r.Tick.Before(next)
				case <-time.After(15 * time.Second):
					t.Fatalf("no run of the tick %v within 15s; runs: %v", next.Format(time.TimeOnly), got)
				}
			}
			// A catch-up fired at the takeover may end after the next tick's
			// run: wait until b has nothing in flight, and take every run.
			idleWithin(t, pc.crons[1], 15*time.Second, "b after the next tick")
			for drained := false; !drained; {
				select {
				case r := <-ch:
					got = append(got, r)
				default:
					drained = true
				}
			}
			var ofMissed []Info
			for _, r := range got {
				if r.Instance != "b" {
					t.Errorf("tick %v ran on %s after a was cut off, want b", r.Tick.Format(time.TimeOnly), r.Instance)
				}
				if r.Tick.Equal(missed) {
					ofMissed = append(ofMissed, r)
				}
			}
			switch {
			case policy == Skip && len(ofMissed) > 0:
				t.Errorf("misfire Skip: the tick %v, missed while no replica led, ran on %s",
					missed.Format(time.TimeOnly), ofMissed[0].Instance)
			case policy == RunOnce && len(ofMissed) != 1:
				t.Errorf("misfire RunOnce: the tick %v, missed while no replica led, ran %d times, want once (runs: %v)",
					missed.Format(time.TimeOnly), len(ofMissed), got)
			}
		})
	}
}

// TestForbidAcrossLeaders is the overlap policy Forbid in leader mode, the
// default: a leader does not start a tick while its own run goes on, and
// when it resigns (a deploy) with the run still going, its successor skips
// the job's ticks until that run ends. The replicas that do not lead run
// nothing.
func TestForbidAcrossLeaders(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	l := newLedger()
	var inProgress, most atomic.Int32
	starts := make(chan Info, 64)
	release := make(chan struct{})
	// The job ignores its context: it finishes its work, as G3 lets a job
	// of a resigning leader do.
	slow := func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		n := inProgress.Add(1)
		defer inProgress.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		starts <- info
		<-release
		return nil
	}
	replicas := map[string]*replica{}
	for _, id := range []string{"r0", "r1"} {
		// A TTL that a loaded machine's late keepalives do not outlast: the
		// run's marker must hold through the handover, which a resignation
		// makes at once.
		replicas[id] = opsReplicaTTL(t, srv.Client(t), "forbid", id, LeaderMode, stallTTL, l, func(c *Cron) {
			mustAdd(t, c, "* * * * * *", Named("slow", ContextFunc(slow), WithOverlap(Forbid)))
		})
	}
	var first Info
	select {
	case first = <-starts:
	case <-time.After(10 * time.Second):
		t.Fatal("slow did not run within 10s")
	}
	leader, other := first.Instance, map[string]string{"r0": "r1", "r1": "r0"}[first.Instance]
	// Two ticks pass on the leader while the run goes on.
	runAfter(t, l.ch, first.Tick.Add(2*time.Second), 5*time.Second, "tick")

	// The leader stops; its run goes on. The successor runs the clock job
	// for two ticks, and must not start slow meanwhile.
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		replicas[leader].stop(t)
	}()
	handedOver := false
	deadline := time.After(15 * time.Second)
	for seen := 0; seen < 2; {
		select {
		case info := <-l.ch:
			if info.Instance == other {
				handedOver = true
				seen++
			}
		case <-deadline:
			t.Fatalf("%s ran no two ticks within 15s of %s stopping", other, leader)
		}
	}
	if !handedOver {
		t.Fatal("no handover")
	}
	select {
	case info := <-starts:
		t.Errorf("slow started for the tick %v on %s while the run of %v on %s went on",
			info.Tick.Format(time.TimeOnly), info.Instance, first.Tick.Format(time.TimeOnly), leader)
	default:
	}
	ended := time.Now()
	close(release)
	<-stopped
	next := runAfter(t, starts, first.Tick, 5*time.Second, "run of slow after the first ended")
	if next.Instance != other {
		t.Errorf("after the handover slow ran on %s, want %s", next.Instance, other)
	}
	if next.Tick.Before(ended.Truncate(time.Second)) {
		t.Errorf("the tick %v ran after the run ended at %v: a tick skipped while it ran was queued",
			next.Tick.Format(time.TimeOnly), ended.Format(time.TimeOnly+".000"))
	}
	if m := most.Load(); m != 1 {
		t.Errorf("%d runs of a Forbid job were in progress at once, want 1", m)
	}
	// Every run was the leader's of its time.
	l.mu.Lock()
	defer l.mu.Unlock()
	var last string
	changes := 0
	for _, r := range l.runs {
		if r.Instance != last {
			changes++
			last = r.Instance
		}
	}
	if changes > 2 {
		var by []string
		for _, r := range l.runs {
			by = append(by, fmt.Sprintf("%s:%s", r.Tick.Format(time.TimeOnly), r.Instance))
		}
		t.Errorf("runs went back and forth between the replicas, though only one led at a time: %v", by)
	}
}

// TestDeposedLeadersClaimIsRefused is G1's term compare as a user sees it:
// a leader whose term ends while its claim of a tick is in flight (its key
// deleted, as by an operator or an expired lease, while the network holds
// the claim) does not run that tick, although nobody else claimed it.
func TestDeposedLeadersClaimIsRefused(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	runs := make(chan Info, 256)
	job := func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		runs <- info
		return nil
	}
	replica := func(id string, endpoint string, opts ...Option) {
		rcli := cli
		if endpoint != "" {
			rcli = srv.NewClient(t, endpoint)
		}
		c := New(append([]Option{WithSeconds(), WithEtcd(rcli), WithName("deposed"),
			WithElection(election.WithIdentity(id), election.WithTTL(5*time.Second))}, opts...)...)
		mustAdd(t, c, "* * * * * *", Named("report", ContextFunc(job)))
		c.Start()
		t.Cleanup(func() { <-c.Stop().Done() })
	}
	replica("a", proxy.Endpoint())
	if first := runAfter(t, runs, time.Time{}, 10*time.Second, "run"); first.Instance != "a" {
		t.Fatalf("the first run was on %s, want a", first.Instance)
	}
	// b runs no missed tick when it takes over, so the tick a claims late
	// is claimed by nobody else.
	replica("b", "", WithMisfire(Skip, 0))
	runAfter(t, runs, time.Now(), 5*time.Second, "run after b joined")

	// The network holds a's claim of the next tick, T; meanwhile a's term
	// ends and b is elected. The claim reaches etcd before T+1.
	tick := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(tick.Add(-300 * time.Millisecond)))
	proxy.Blackhole()
	time.Sleep(time.Until(tick.Add(150 * time.Millisecond)))
	resp, err := cli.Get(context.Background(), "/baton/election/deposed/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("no leader key: %v", err)
	}
	del, err := cli.Txn(context.Background()).If(clientv3.Compare(clientv3.CreateRevision(string(resp.Kvs[0].Key)), "=", resp.Kvs[0].CreateRevision)).
		Then(clientv3.OpDelete(string(resp.Kvs[0].Key))).Commit()
	if err != nil || !del.Succeeded {
		t.Fatalf("delete a's key: %v", err)
	}
	deposed := del.Header.Revision
	time.Sleep(time.Until(tick.Add(300 * time.Millisecond)))
	proxy.Pass()

	// b leads; a's claim, sent before a learned, must have failed.
	for seen := 0; seen < 3; {
		select {
		case info := <-runs:
			if info.Instance == "b" {
				seen++
			}
			if info.Instance == "a" && info.Fence.Revision > deposed {
				t.Errorf("a, deposed at revision %d, ran the tick %v on a claim made at revision %d",
					deposed, info.Tick.Format(time.TimeOnly), info.Fence.Revision)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("b ran %d ticks within 15s of a's deposition, want 3", seen)
		}
	}
	// etcd itself refused the claim: the job's claim key took no write of
	// a's after the deposition, not even one that a gave back at once.
	key := "/baton/jobs/deposed/report/last"
	latest, err := cli.Get(context.Background(), key)
	if err != nil || len(latest.Kvs) == 0 {
		t.Fatalf("read %s: %v", key, err)
	}
	upto := latest.Kvs[0].ModRevision
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for wr := range cli.Watch(wctx, key, clientv3.WithRev(deposed+1)) {
		for _, ev := range wr.Events {
			if _, by, _ := jobkeys.ParseLast(string(ev.Kv.Value)); by == "a" {
				t.Errorf("a, deposed at revision %d, wrote the claim %q at revision %d", deposed, ev.Kv.Value, ev.Kv.ModRevision)
			}
			if ev.Kv.ModRevision >= upto {
				return
			}
		}
	}
	t.Fatalf("the writes of %s up to revision %d not seen within 5s", key, upto)
}

// firstRun moves the replicas' clocks to tick, and on by every until a
// tick of job runs, and returns that run. A tick reported not run (a
// session of a 2 s TTL lapsed on a loaded machine, and the new term's
// catch-up skipped the tick) is logged and the next one tried, three at
// most; a tick neither run nor reported within 15 s fails the test with
// every event seen.
func firstRun(t *testing.T, pc *policyCluster, ch <-chan Info, events *eventLog, job string, tick time.Time, every time.Duration) Info {
	t.Helper()
	// A tick that comes due before any replica has published the job is
	// not the cluster's: a term that ends before the job's spec is written
	// leaves it neither run nor counted, by design (gap.go). The run this
	// waits for is of a published job.
	waitPublished(t, pc.cli, pc.name, job)
	for try := 0; try < 3; try, tick = try+1, tick.Add(every) {
		pc.ready(tick)
		pc.set(tick)
		deadline := time.After(15 * time.Second)
	waiting:
		for {
			select {
			case r := <-ch:
				if r.Tick.Equal(tick) {
					return r
				}
				t.Fatalf("a run of %v when the clocks were set to %v", r.Tick.Format(time.TimeOnly), tick.Format(time.TimeOnly))
			case ev := <-events.ch:
				if e, ok := ev.(TickNotRun); ok && e.Job == job && e.Tick.Equal(tick) {
					t.Logf("the tick %v was not run (%s on %s: %v); trying the next", tick.Format(time.TimeOnly), e.Reason, e.Instance, e.Err)
					break waiting
				}
			case <-deadline:
				events.mu.Lock()
				seen := fmt.Sprintf("%+v", events.all)
				events.mu.Unlock()
				t.Fatalf("the tick %v neither ran nor was reported not run within 15s; events: %s", tick.Format(time.TimeOnly), seen)
			}
		}
	}
	t.Fatalf("none of three ticks from %v ran", tick.Format(time.TimeOnly))
	return Info{}
}
