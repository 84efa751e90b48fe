package cronx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/claims"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// leadingJobs starts a Cron of scheduler on fake's time with a job each
// second for each of names (job makes it), and waits until it leads.
func leadingJobs(t *testing.T, cli *clientv3.Client, fake *clock.Fake, scheduler string, names []string, job func(i int) Job) *Cron {
	t.Helper()
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(cli), WithName(scheduler), WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	for i, n := range names {
		mustAdd(t, c, "* * * * * *", Named(n, job(i)))
	}
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	eventually(t, wait, func() (bool, string) { return c.coord.scheduling(), "a does not lead" })
	return c
}

// fireTick moves fake to tick once the loop has armed its timer: moved
// past it before, a loop told late that it leads schedules the next one.
func fireTick(t *testing.T, fake *clock.Fake, tick time.Time) {
	t.Helper()
	if !fake.WaitDueBy(tick, wait) {
		t.Fatalf("no timer armed for the tick %s", tick)
	}
	fake.Set(tick)
}

// ranTicks says whether each of names ran n ticks, the last at tick.
func ranTicks(l *tickLedger, names []string, n int, tick time.Time) (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, j := range names {
		if len(l.ran[j]) != n || !l.ran[j][n-1].Equal(tick) {
			return false, fmt.Sprintf("%s ran %v, want %d ticks, the last at %s", j, l.ran[j], n, tick)
		}
	}
	return true, ""
}

// TestACrowdedTickIsClaimedByAFewRecords: a leader claims a tick of 600
// plain jobs, their first and their next, mostly by ticks' records, a few
// transactions a tick where a marker a job would take one per 256 jobs:
// every job runs each tick once, its fence holds in a transaction of its
// own while it runs, and once every run is recorded each job's claim key
// holds the tick and no record or record's marker is left.
func TestACrowdedTickIsClaimedByAFewRecords(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	var mu sync.Mutex
	records, markers := map[string]int{}, map[string]int{} // by tick
	cli := sp.TxnSeeingClient(t, func(txn *etcdserverpb.TxnRequest) {
		mu.Lock()
		defer mu.Unlock()
		etcdtest.EachPut(txn, func(p *etcdserverpb.PutRequest) {
			k := string(p.Key)
			if i := strings.Index(k, "/.ticks/"); i >= 0 {
				records[k[i+len("/.ticks/"):][:20]]++
			}
			if i := strings.Index(k, "/running/"); i >= 0 {
				markers[k[i+len("/running/"):]]++
			}
		})
	})
	const jobs = 600
	first := t0.Add(time.Minute)
	fake := clock.NewFake(first.Add(-time.Second))
	var l tickLedger
	var fenced sync.Map // job → its fence held in a transaction of its own
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%04d", i)
	}
	leadingJobs(t, cli, fake, "records", names, func(i int) Job {
		ledger := l.job(names[i])
		return ContextFunc(func(ctx context.Context) error {
			if i%100 == 0 {
				info, _ := InfoFrom(ctx)
				resp, err := cli.Txn(ctx).If(info.Fence.Cmp()).Commit()
				fenced.Store(fmt.Sprint(names[i], info.Tick), err == nil && resp.Succeeded && info.Fence.Key != "")
			}
			return ledger.(ContextJob).RunContext(ctx)
		})
	})
	for n, tick := range []time.Time{first, first.Add(time.Second)} {
		fireTick(t, fake, tick)
		eventually(t, time.Minute, func() (bool, string) { return ranTicks(&l, names, n+1, tick) })
		seq := fmt.Sprintf("%020d", tick.UnixNano())
		mu.Lock()
		r, m := records[seq], markers[seq]
		mu.Unlock()
		// Each flusher takes the tick's runs that have come: on a loaded
		// machine they come slowly, and a flusher may take a few twice.
		if r == 0 || r > jobs/claims.MaxTickJobs+2*maxFlushers || m > jobs/2 {
			t.Errorf("tick %d: %d records and %d markers of a job put; want the tick's jobs mostly in a few records", n+1, r, m)
		}
		for i := 0; i < jobs; i += 100 {
			if held, _ := fenced.Load(fmt.Sprint(names[i], tick)); held != true {
				t.Errorf("tick %d: %s's fence did not hold in its own transaction while it ran", n+1, names[i])
			}
		}
		eventually(t, wait, func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			left, err := cli.Get(ctx, jobkeys.New(election.DefaultPrefix, "records").Dir()+".tick", clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return false, err.Error()
			}
			moved := claimedAt(t, cli, "records", tick)
			return left.Count == 0 && moved == jobs, fmt.Sprintf("%d records and their markers left, %d of %d claim keys at the tick", left.Count, moved, jobs)
		})
	}
}

// TestATicksRecordLeftByADeadLeaderIsSettledByItsSuccessor: a leader that
// died after its record of a tick committed, before settling it, leaves
// the tick's jobs' claim keys unmoved. Its successor settles the record
// before its catch-up: the jobs in the record are not run again (their
// runs may have started; each is reported runner_lost once the record's
// marker is gone and no run is recorded), and a job the record does not
// hold, whose tick nobody claimed, is caught up and runs.
func TestATicksRecordLeftByADeadLeaderIsSettledByItsSuccessor(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	cli := sp.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := t0.Add(time.Minute)
	names := []string{"job-0", "job-1", "job-2", "job-3", "given-back"}
	leaveRecord(ctx, t, cli, "left-record", tick, names, names[:4])

	l := newEventLog()
	var ran tickLedger
	fake := clock.NewFake(tick.Add(500 * time.Millisecond))
	b := New(append(observed(l), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(cli), WithName("left-record"), WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))...)
	for _, n := range names {
		mustAdd(t, b, "* * * * * *", Named(n, ran.job(n)))
	}
	b.Start()
	t.Cleanup(func() { shutdown(t, b, "b") })
	eventually(t, time.Minute, func() (bool, string) {
		ran.mu.Lock()
		defer ran.mu.Unlock()
		for _, n := range names[:4] {
			if len(l.notRun(n, ReasonRunnerLost)) != 1 {
				return false, fmt.Sprintf("%s: not reported runner_lost; ran %v", n, ran.ran[n])
			}
		}
		return len(ran.ran["given-back"]) == 1, fmt.Sprintf("given-back ran %v, want the tick", ran.ran["given-back"])
	})
	idleWithin(t, b, 20*time.Second, "b's catch-up")
	ran.mu.Lock()
	defer ran.mu.Unlock()
	for _, n := range names[:4] {
		if len(ran.ran[n]) != 0 {
			t.Errorf("%s ran %v, the tick its dead leader's record claimed", n, ran.ran[n])
		}
	}
	if got := ran.ran["given-back"]; len(got) != 1 || !got[0].Equal(tick) {
		t.Errorf("given-back ran %v, want %s", got, tick)
	}
}

// leaveRecord leaves in scheduler name's keys what a leader that died
// after it claimed tick by its record for the jobs recorded does: each of
// jobs ran the tick before, and the record is unsettled, its marker's lease
// lapsed.
func leaveRecord(ctx context.Context, t *testing.T, cli *clientv3.Client, name string, tick time.Time, jobs, recorded []string) {
	t.Helper()
	keys := jobkeys.New(election.DefaultPrefix, name)
	w := writes{sc: &scope{keys: keys}}
	for _, n := range jobs {
		// Each ran the tick before: its catch-up claims by the key's value.
		if _, err := cli.Put(ctx, keys.Last(n), fmt.Sprintf("%020d dead", tick.Add(-time.Second).UnixNano())); err != nil {
			t.Fatal(err)
		}
	}
	term, err := cli.Put(ctx, "/dead-leader", "dead")
	if err != nil {
		t.Fatal(err)
	}
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	rec := claims.Tick{Record: keys.TickRecord(tick.UnixNano(), "dead"), Marker: keys.TickRuns(tick.UnixNano(), "dead"),
		Lease: lease.ID, Seq: tick.UnixNano(), Holder: "dead"}
	for _, n := range recorded {
		rec.Jobs = append(rec.Jobs, w.tickJob(n))
	}
	if _, err := claims.ClaimTick(ctx, cli, election.Fence{Key: "/dead-leader", Revision: term.Header.Revision}, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, lease.ID); err != nil { // the dead leader's lease lapsed
		t.Fatal(err)
	}
}

// TestATickADeadLeadersRecordClaimedIsNotInItsSuccessorsGap: the
// successor of a leader that died with a tick's record unsettled reports
// the gap from each job's claim key as the term began, where the record's
// jobs' keys do not hold its tick yet: the record's tick is not reported
// as fallen while nobody led (a leader claimed it), but a job's beside it,
// not in the record, is.
func TestATickADeadLeadersRecordClaimedIsNotInItsSuccessorsGap(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	cli := sp.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := t0.Add(time.Minute)
	names := []string{"job-0", "job-1", "unrecorded"}
	leaveRecord(ctx, t, cli, "gap-record", tick, names, names[:2])

	l := newEventLog()
	// The term starts past the tick after the record's, which it catches
	// up: the record's tick is the one a gap would report.
	fake := clock.NewFake(tick.Add(1500 * time.Millisecond))
	b := New(append(observed(l), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(cli), WithName("gap-record"), WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))...)
	for _, n := range names {
		mustAdd(t, b, "* * * * * *", Named(n, FuncJob(func() {})))
	}
	b.Start()
	t.Cleanup(func() { shutdown(t, b, "b") })
	// Added last, and last in the gap's one read: the others' reports
	// come before its own, in order, to the observers.
	gap := waitNotRun(t, l, "unrecorded", ReasonNoLeader, 20*time.Second)
	if !gap.Tick.Equal(tick) {
		t.Errorf("the gap of unrecorded reported %v, want %v", gap.Tick, tick)
	}
	idleWithin(t, b, 20*time.Second, "b's catch-up")
	for _, n := range names[:2] {
		for _, e := range l.notRun(n, ReasonNoLeader) {
			t.Errorf("%s: tick %v reported fallen while nobody led; the dead leader's record claimed it", n, e.Tick)
		}
	}
}

// TestACrowdedTicksRecordWhoseReplyWasLostRuns: etcd commits a tick's
// record and its reply is lost. The leader finds the record it sent and
// its runs start under it, each job once; none is claimed again beside it.
func TestACrowdedTicksRecordWhoseReplyWasLostRuns(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	var lost atomic.Int32
	cli := losingClient(t, sp, func(txn *etcdserverpb.TxnRequest, reply any) bool {
		tr, ok := reply.(*etcdserverpb.TxnResponse)
		if !ok || !tr.Succeeded {
			return false
		}
		puts := 0
		etcdtest.EachPut(txn, func(p *etcdserverpb.PutRequest) {
			if strings.Contains(string(p.Key), "/.ticks/") {
				puts++
			}
		})
		return puts > 0 && lost.Add(1) == 1
	})
	const jobs = 300
	tick := t0.Add(time.Minute)
	fake := clock.NewFake(tick.Add(-time.Second))
	var l tickLedger
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%03d", i)
	}
	c := leadingJobs(t, cli, fake, "record-lost", names, func(i int) Job { return l.job(names[i]) })
	fireTick(t, fake, tick)
	eventually(t, time.Minute, func() (bool, string) {
		if ok, why := ranTicks(&l, names, 1, tick); !ok {
			return false, fmt.Sprintf("%s (%d records' replies lost)", why, lost.Load())
		}
		return lost.Load() > 0, "no record's reply lost"
	})
	idleWithin(t, c, 20*time.Second, "the tick's runs")
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, j := range names {
		if len(l.ran[j]) != 1 {
			t.Errorf("%s ran %v, want the tick once", j, l.ran[j])
		}
	}
}

// TestRunsOfARecordGivenBackAtStopRunOnTheSuccessor is G3 for a tick's
// record: a record whose answer comes only after Stop has stopped waiting
// for it commits, but none of its runs starts: they are given back, the
// record is settled without them, and the leader's successor runs each
// of their ticks, once. Every job runs the tick once, on the leader or on
// its successor.
func TestRunsOfARecordGivenBackAtStopRunOnTheSuccessor(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	// The answers of the records' claims come late, as over a slow link.
	cfg := srv.ClientConfig()
	var late atomic.Bool
	var delayed atomic.Int32
	etcdtest.ObserveCalls(&cfg, func(_ string, req, _ any) {
		txn, ok := req.(*etcdserverpb.TxnRequest)
		if !ok || !late.Load() {
			return
		}
		record := false
		etcdtest.EachPut(txn, func(p *etcdserverpb.PutRequest) { record = record || strings.Contains(string(p.Key), "/.ticks/") })
		if record {
			delayed.Add(1)
			time.Sleep(stopClaimWait * 3 / 2) // the fault's timing, not a wait for a result
		}
	})
	raw, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	const jobs = 400
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%04d", i)
	}
	var onA, onB tickLedger
	// replica starts a Cron of the jobs named id, on cli and fake, whose
	// runs go to ran.
	replica := func(id string, cli *clientv3.Client, fake *clock.Fake, ran *tickLedger) *Cron {
		c := New(withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger), WithSeconds(),
			WithEtcd(cli), WithName("late-record"),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		t.Cleanup(func() { shutdown(t, c, id) })
		for _, n := range names {
			mustAdd(t, c, "* * * * * *", Named(n, ran.job(n)))
		}
		c.Start()
		return c
	}
	fakeA := clock.NewFake(t0)
	a := replica("a", srv.Within(raw), fakeA, &onA)
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	// A first tick runs on a, so that the jobs have run before: a
	// successor catches up the tick of a job that has.
	first := t0.Add(time.Second)
	if !fakeA.WaitDueBy(first, wait) {
		t.Fatal("a armed no timer for the first tick")
	}
	fakeA.Set(first)
	eventually(t, time.Minute, func() (bool, string) {
		onA.mu.Lock()
		defer onA.mu.Unlock()
		return len(onA.ran) == jobs, fmt.Sprintf("%d of %d jobs ran the first tick on a", len(onA.ran), jobs)
	})
	idleWithin(t, a, 10*time.Second, "a after the first tick")
	tick := first.Add(time.Second)
	if !fakeA.WaitDueBy(tick, wait) {
		t.Fatal("a armed no timer for the tick")
	}
	late.Store(true)
	fakeA.Set(tick)
	eventually(t, wait, func() (bool, string) {
		return delayed.Load() > 0, fmt.Sprintf("no record's answer held up: stages %v", runsIn(a))
	})
	returnsWithin(t, 10*time.Second, "Stop", func() { a.Stop() })
	idleWithin(t, a, 10*time.Second, "a after Stop")

	fakeB := clock.NewFake(tick.Add(500 * time.Millisecond))
	b := replica("b", srv.Client(t), fakeB, &onB)
	// Each job's tick, once: on a before Stop, or on b.
	count := func() (once, twice, none []string) {
		onA.mu.Lock()
		defer onA.mu.Unlock()
		onB.mu.Lock()
		defer onB.mu.Unlock()
		for _, n := range names {
			k := 0
			for _, tk := range append(slices.Clone(onA.ran[n]), onB.ran[n]...) {
				if tk.Equal(tick) {
					k++
				}
			}
			switch k {
			case 0:
				none = append(none, n)
			case 1:
				once = append(once, n)
			default:
				twice = append(twice, n)
			}
		}
		return once, twice, none
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		_, twice, none := count()
		return len(none) == 0 || len(twice) > 0, fmt.Sprintf("%d jobs did not run the tick, e.g. %v (b leads: %v)", len(none), none[:min(3, len(none))], b.coord.scheduling())
	})
	idleWithin(t, b, 10*time.Second, "b's catch-up")
	if _, twice, none := count(); len(twice) > 0 || len(none) > 0 {
		t.Fatalf("the tick ran twice for %d jobs (e.g. %v) and not at all for %d (e.g. %v)", len(twice), twice[:min(3, len(twice))], len(none), none[:min(3, len(none))])
	}
	onB.mu.Lock()
	defer onB.mu.Unlock()
	if len(onB.ran) == 0 {
		t.Fatalf("the successor ran no tick: no record's run was given back (%d records' answers held up)", delayed.Load())
	}
}

// TestAHandoversCatchUpReadsTheTicksItsPredecessorRan: a leader runs a
// tick of 300 jobs and steps down. Its successor catches up each job's
// latest tick, which the leader claimed: it learns so from one read of
// the claim keys, and sends no claim of them, where claiming each would
// cost two write transactions for every 256. No job runs the tick twice.
func TestAHandoversCatchUpReadsTheTicksItsPredecessorRan(t *testing.T) {
	t.Parallel()
	const n = 300
	sp := etcdtest.Shared(t)
	var ran tickLedger
	fake := clock.NewFake(t0.Add(500 * time.Millisecond))
	tc := newTermCalls(n)
	gained := make(chan struct{}, 1)
	replica := func(id string, opts ...Option) *Cron {
		cfg := sp.ClientConfig()
		if id == "b" {
			etcdtest.ObserveCalls(&cfg, tc.seen)
		}
		raw, err := clientv3.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { raw.Close() })
		c := New(append([]Option{withClock(fake), WithLocation(time.UTC), WithSeconds(), WithLogger(DiscardLogger), WithName("handover-catchup"),
			WithEtcd(sp.Within(raw)), WithMisfire(RunOnce, time.Minute), WithElection(election.WithIdentity(id), election.WithTTL(stallTTL))}, opts...)...)
		for i := range n {
			mustAdd(t, c, "* * * * * *", Named(fmt.Sprintf("job-%d", i), ran.job(fmt.Sprintf("job-%d", i))))
		}
		return c
	}
	a := replica("a")
	a.Start()
	awaitLeading(t, a)
	tick := t0.Add(time.Second)
	fake.WaitDueBy(tick, 10*time.Second)
	fake.Set(tick)
	eventually(t, 20*time.Second, func() (bool, string) {
		ran.mu.Lock()
		defer ran.mu.Unlock()
		return len(ran.ran) == n, fmt.Sprintf("%d of %d jobs ran the tick on a", len(ran.ran), n)
	})
	<-a.runs.idle().Done()

	b := replica("b", WithObserver(Observer{OnLeadershipGained: func(Leadership) {
		tc.began()
		gained <- struct{}{}
	}}))
	b.Start()
	t.Cleanup(func() { <-b.Stop().Done() })
	awaitCandidates(t, sp.Client(t), election.DefaultPrefix, "handover-catchup", 2)
	<-a.Stop().Done()
	select {
	case <-gained:
	case <-time.After(20 * time.Second):
		t.Fatal("b did not lead within 20s of a's Stop")
	}
	select {
	case <-tc.lastsDone:
	case <-time.After(20 * time.Second):
		t.Fatal("b did not catch up every job's tick within 20s")
	}
	idleWithin(t, b, 20*time.Second, "b's catch-up")
	tc.mu.Lock()
	claimed := len(tc.claimed)
	tc.mu.Unlock()
	if claimed != 0 {
		t.Errorf("b sent claims of %d jobs' ticks that a had run; its read of their claim keys tells it", claimed)
	}
	ran.mu.Lock()
	defer ran.mu.Unlock()
	for job, ticks := range ran.ran {
		if len(ticks) != 1 || !ticks[0].Equal(tick) {
			t.Errorf("%s ran %v, want %v once", job, ticks, tick)
		}
	}
}

// TestARecordsRunsGoingAtAHandoverAreNotReportedLost: a leader steps down
// (Stop) while the runs of a tick it claimed by a record go on, under the
// record's marker. Its successor finds the tick claimed by a term before
// and checks whether its runner was lost: the runs' marker is the
// record's, which lives while they do, so it waits for them, and reports
// none of them runner_lost once they end and are recorded.
func TestARecordsRunsGoingAtAHandoverAreNotReportedLost(t *testing.T) {
	t.Parallel()
	const n = 600 // many more than recordMin: most go in records, whatever the load
	sp := etcdtest.Shared(t)
	fake := clock.NewFake(t0.Add(500 * time.Millisecond))
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	var lost atomic.Int32
	// b's reads of the markers of runs that a term before it claimed.
	seen := readsOfRecordMarkers(t, sp)
	replica := func(id string, job func(string) Job) *Cron {
		cli := sp.Client(t)
		if id == "b" {
			cli = seen.cli
		}
		c := New(withClock(fake), WithLocation(time.UTC), WithSeconds(), WithLogger(lostCounter{&lost}), WithName("record-going"),
			WithEtcd(cli), WithMisfire(RunOnce, time.Minute), WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		for i := range n {
			name := fmt.Sprintf("job-%d", i)
			mustAdd(t, c, "* * * * * *", Named(name, job(name)))
		}
		return c
	}
	a := replica("a", func(string) Job {
		return FuncJob(func() {
			started.Done()
			<-release // a long job, which the Stop does not end
		})
	})
	a.Start()
	awaitLeading(t, a)
	tick := t0.Add(time.Second)
	fireTick(t, fake, tick)
	allStarted(t, &started, time.Minute, "the tick's runs on a")
	if records, _ := leasedKeys(t, sp.Client(t), "/.tickruns/"); records == 0 {
		// leasedKeys lists every lease of the shared member: a's are among them.
		t.Fatal("no run of the tick is under a record's marker")
	}

	var ran tickLedger
	b := replica("b", ran.job)
	b.Start()
	t.Cleanup(func() { <-b.Stop().Done() })
	awaitCandidates(t, sp.Client(t), election.DefaultPrefix, "record-going", 2)
	stopped := a.Stop()
	eventually(t, 20*time.Second, func() (bool, string) { return b.coord.scheduling(), "b does not lead" })
	// b's catch-up finds each job's tick claimed, and reads whether its
	// runner was lost, lostBatch ticks to a read, while the runs go on.
	reads := int32((n + lostBatch - 1) / lostBatch)
	eventually(t, 20*time.Second, func() (bool, string) {
		return seen.reads.Load() >= reads, fmt.Sprintf("%d of %d reads of the runs' markers", seen.reads.Load(), reads)
	})
	close(release)
	select {
	case <-stopped.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("a's runs were not recorded within 20s of their end")
	}
	eventually(t, 20*time.Second, func() (bool, string) {
		b.coord.lost.mu.Lock()
		defer b.coord.lost.mu.Unlock()
		return !b.coord.lost.checking, fmt.Sprintf("%d ticks still checked for a lost runner", len(b.coord.lost.queued))
	})
	if k := lost.Load(); k > 0 {
		t.Errorf("%d ticks whose runs went on were reported runner_lost", k)
	}
	ran.mu.Lock()
	defer ran.mu.Unlock()
	if len(ran.ran) > 0 {
		t.Errorf("b ran %d jobs' ticks that a's record claimed", len(ran.ran))
	}
}

// lostCounter counts the ticks a Cron reports runner_lost.
type lostCounter struct{ n *atomic.Int32 }

func (l lostCounter) Info(string, ...any) {}
func (l lostCounter) Error(err error, _ string, _ ...any) {
	if errors.Is(err, errRunnerLost) {
		l.n.Add(1)
	}
}

// TestATickWithoutItsMarkerWaitsForItsClaimersRecordsOfTheTick: a tick
// claimed on its own by a leader whose runs of the same tick under a
// record go on, and whose own marker is gone (its run was given up), is
// not taken for running however long those runs take: once the record's
// marker goes, the tick, not in the job's history, is reported
// runner_lost.
func TestATickWithoutItsMarkerWaitsForItsClaimersRecordsOfTheTick(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second // the wait for a marker of a run's own ends ttl+lostExpiry after it is found
	sp := etcdtest.Shared(t)
	cli := sp.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := t0.Add(time.Minute)
	keys := jobkeys.New(election.DefaultPrefix, "record-outlives")
	if _, err := cli.Put(ctx, keys.Last("k"), claimcond.Value(tick.UnixNano(), "x")); err != nil {
		t.Fatal(err)
	}
	lease := grant(t, cli, 60)
	if _, err := cli.Put(ctx, keys.TickRuns(tick.UnixNano(), "x-1"), claimcond.Value(tick.UnixNano(), "x"), clientv3.WithLease(lease)); err != nil {
		t.Fatal(err)
	}
	seen := readsOfRecordMarkers(t, sp)
	reads, first := &seen.reads, &seen.first
	var lost atomic.Int32
	var ran tickLedger
	b := New(withClock(clock.NewFake(tick.Add(500*time.Millisecond))), WithLocation(time.UTC), WithSeconds(), WithLogger(lostCounter{&lost}),
		WithName("record-outlives"), WithEtcd(seen.cli), WithMisfire(RunOnce, time.Minute),
		WithElection(election.WithIdentity("b"), election.WithTTL(ttl)))
	mustAdd(t, b, "* * * * * *", Named("k", ran.job("k")))
	b.Start()
	t.Cleanup(func() { <-b.Stop().Done() })
	// Waiting past the bound of a marker of the run's own, and read again.
	past := ttl + lostExpiry + lostRecheck
	var after int32
	eventually(t, 30*time.Second, func() (bool, string) {
		f := first.Load()
		if f == 0 {
			return false, "no read of the tick's records' markers"
		}
		if after == 0 && time.Since(time.Unix(0, f)) > past {
			after = reads.Load()
		}
		b.coord.lost.mu.Lock()
		checking := b.coord.lost.checking
		b.coord.lost.mu.Unlock()
		return after > 0 && (reads.Load() > after || !checking), // read again, or given up
			fmt.Sprintf("%d reads, the first %v ago", reads.Load(), time.Since(time.Unix(0, f)).Round(time.Millisecond))
	})
	if n := lost.Load(); n != 0 {
		t.Fatalf("the tick was reported runner_lost %d times while its claimer's record's marker was there", n)
	}
	if _, err := cli.Revoke(ctx, lease); err != nil { // the record's runs end
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() (bool, string) {
		return lost.Load() == 1, fmt.Sprintf("reported runner_lost %d times once the record's marker went, want once", lost.Load())
	})
	ran.mu.Lock()
	defer ran.mu.Unlock()
	if len(ran.ran["k"]) != 0 {
		t.Errorf("k ran %v, a tick its claimer may have run", ran.ran["k"])
	}
}

// recordMarkerReads is a client of a shared member that counts its reads
// of ticks' records' markers (lost.go), and when the first returned.
type recordMarkerReads struct {
	cli   *clientv3.Client
	reads atomic.Int32
	first atomic.Int64
}

func readsOfRecordMarkers(t *testing.T, sp *etcdtest.Space) *recordMarkerReads {
	t.Helper()
	r := &recordMarkerReads{}
	cfg := sp.ClientConfig()
	etcdtest.ObserveCalls(&cfg, func(_ string, req, reply any) {
		if txn, ok := req.(*etcdserverpb.TxnRequest); ok && reply != nil {
			for _, op := range txn.Success {
				if strings.Contains(string(op.GetRequestRange().GetKey()), "/.tickruns/") {
					r.first.CompareAndSwap(0, time.Now().UnixNano())
					r.reads.Add(1)
					return
				}
			}
		}
	})
	raw, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	r.cli = sp.Within(raw)
	return r
}

// TestJobsOfTheLongestNamesAreClaimedWithinEtcdsLimits: a leader of 1000
// jobs whose names, and their scheduler's, are as long as a name may be
// tries its term's catch-up of them and claims a crowded tick of them with
// no request etcd refuses for its size: every job runs the tick once, and
// no refusal is logged.
func TestJobsOfTheLongestNamesAreClaimedWithinEtcdsLimits(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	const jobs = 1000
	tick := t0.Add(time.Minute)
	fake := clock.NewFake(tick.Add(-time.Second))
	var l tickLedger
	var refused atomic.Value
	c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(refusalLog{&refused}),
		WithEtcd(cli), WithName(strings.Repeat("s", 200)), WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	names := make([]string, jobs)
	for i := range names {
		names[i] = fmt.Sprintf("job-%04d-%s", i, strings.Repeat("x", 191))
		mustAdd(t, c, "* * * * * *", Named(names[i], l.job(names[i])))
	}
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	eventually(t, wait, func() (bool, string) { return c.coord.scheduling(), "a does not lead" })
	fireTick(t, fake, tick)
	eventually(t, time.Minute, func() (bool, string) { return ranTicks(&l, names, 1, tick) })
	if err := refused.Load(); err != nil {
		t.Errorf("logged %.200v; want no request refused for its size", err)
	}
}

// refusalLog keeps the last error a Cron logs for a request etcd, or its
// client, refused for its size.
type refusalLog struct{ last *atomic.Value }

func (l refusalLog) Info(string, ...any) {}
func (l refusalLog) Error(err error, _ string, _ ...any) {
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || strings.Contains(err.Error(), "larger than max") {
		l.last.Store(err)
	}
}

// TestAClaimOfAKeyARecordHoldsWaitsUntilItIsSettled: a tick's record
// claims its jobs without comparing their claim keys, which it moves only
// when settled; until then a claim of one of those keys (a catch-up, or
// the tick fired again) would find the key unmoved and claim the tick a
// second time. The batcher holds such a claim back until the record is
// settled. Here, once both jobs have run a tick and no claim is in
// flight, one job's key is held as an unsettled record holds it: the next
// tick's claim of that job waits while the other job runs, and goes once
// the key is freed, each job running the tick once.
func TestAClaimOfAKeyARecordHoldsWaitsUntilItIsSettled(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	first := t0.Add(time.Minute)
	fake := clock.NewFake(first.Add(-time.Second))
	var l tickLedger
	names := []string{"free", "held"}
	c := leadingJobs(t, cli, fake, "busy-key", names, func(i int) Job { return l.job(names[i]) })
	bt := c.coord.claims.batch
	fireTick(t, fake, first)
	eventually(t, wait, func() (bool, string) { return ranTicks(&l, names, 1, first) })
	eventually(t, wait, func() (bool, string) {
		bt.mu.Lock()
		defer bt.mu.Unlock()
		return len(bt.busy) == 0 && bt.flushers == 0, fmt.Sprintf("keys in flight: %v; flushers going: %d", bt.busy, bt.flushers)
	})
	heldKey := c.coord.keys.Last("held")
	bt.mu.Lock()
	bt.busy[heldKey] = true // a record of "held" not yet settled
	bt.mu.Unlock()

	next := first.Add(time.Second)
	fireTick(t, fake, next)
	eventually(t, wait, func() (bool, string) { return ranTicks(&l, names[:1], 2, next) })
	eventually(t, wait, func() (bool, string) {
		bt.mu.Lock()
		defer bt.mu.Unlock()
		waiting := slices.ContainsFunc(bt.pending, func(r *claimReq) bool { return r.key == heldKey })
		return waiting && bt.flushers == 0, fmt.Sprintf("the claim of held's key waits: %v; flushers going: %d", waiting, bt.flushers)
	})
	if n := claimedAt(t, cli, "busy-key", next); n != 1 {
		t.Fatalf("%d claim keys hold the tick while a record holds held's; want free's alone", n)
	}
	bt.done([]*claimReq{{key: heldKey}}) // the record is settled
	eventually(t, wait, func() (bool, string) { return ranTicks(&l, names, 2, next) })
}
