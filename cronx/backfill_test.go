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
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// backfillLedger records the backfilled runs of a job across replicas, and
// how many were in progress at once.
type backfillLedger struct {
	mu      sync.Mutex
	runs    []Info
	ch      chan Info
	now     atomic.Int32
	most    atomic.Int32
	holdFor func(Info) func(ctx context.Context) // nil: none
}

func newBackfillLedger() *backfillLedger {
	etcdtest.StartStallWatch()
	return &backfillLedger{ch: make(chan Info, 1024)}
}

// job is the job of replica id: it records each backfilled run, then holds
// it as holdFor says.
func (l *backfillLedger) job(id string, hold time.Duration) ContextFunc {
	return func(ctx context.Context) error {
		info, ok := InfoFrom(ctx)
		if !ok || info.Instance != id {
			return fmt.Errorf("run info %+v, %v on %s", info, ok, id)
		}
		if !info.Backfill {
			return nil // a tick of the schedule
		}
		n := l.now.Add(1)
		defer l.now.Add(-1)
		for m := l.most.Load(); n > m && !l.most.CompareAndSwap(m, n); m = l.most.Load() {
		}
		l.mu.Lock()
		l.runs = append(l.runs, info)
		holdFor := l.holdFor
		l.mu.Unlock()
		l.ch <- info
		if holdFor != nil {
			if h := holdFor(info); h != nil {
				h(ctx)
			}
		}
		if hold > 0 {
			select {
			case <-time.After(hold):
			case <-ctx.Done():
			}
		}
		return nil
	}
}

// wait waits until n backfilled runs were recorded.
func (l *backfillLedger) wait(t *testing.T, n int, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		l.mu.Lock()
		got := len(l.runs)
		l.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-l.ch:
		case <-deadline:
			t.Fatalf("%d backfilled runs within %v, want %d", got, d, n)
		}
	}
}

// check asserts that the runs are of ticks, each once, in order; it
// returns who ran each.
func (l *backfillLedger) check(t *testing.T, ticks []time.Time) []string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var by []string
	for i, r := range l.runs {
		by = append(by, r.Instance)
		if i < len(ticks) && !r.Tick.Equal(ticks[i]) {
			t.Errorf("backfilled run %d was of %v, want %v", i, r.Tick.Format(time.DateTime), ticks[i].Format(time.DateTime))
		}
		if r.Triggered {
			t.Errorf("backfilled run of %v has Triggered set", r.Tick)
		}
	}
	if len(l.runs) != len(ticks) {
		t.Errorf("%d backfilled runs, want %d, one per tick", len(l.runs), len(ticks))
	}
	if t.Failed() {
		for _, r := range l.runs {
			t.Logf("ran %v on %s", r.Tick.Format(time.DateTime), r.Instance)
		}
	}
	return by
}

// hourlyTicks returns n hourly ticks ending at the last full hour of
// time.Local, the Cron's zone: one whose offset is not whole hours has its
// own.
func hourlyTicks(n int) (from, to time.Time, ticks []time.Time) {
	now := time.Now()
	to = time.Date(now.Year(), now.Month(), now.Day(), now.Hour(), 0, 0, 0, time.Local)
	from = to.Add(-time.Duration(n) * time.Hour)
	for i := range n {
		ticks = append(ticks, from.Add(time.Duration(i)*time.Hour))
	}
	return from, to, ticks
}

// TestBackfillRunsEachTickOnceInOrder: a backfill asked of any replica,
// and of a Control, at once, is one backfill; the leader runs each of its
// ticks once, in order, with Info.Backfill set; a range of more ticks than
// the cap is refused with their count, whoever asks.
func TestBackfillRunsEachTickOnceInOrder(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	clock, bf := newLedger(), newBackfillLedger()
	var crons []*Cron
	for i := range 3 {
		id := fmt.Sprintf("r%d", i)
		crons = append(crons, opsReplica(t, srv.Client(t), "bf", id, LeaderMode, clock, func(c *Cron) {
			mustAdd(t, c, "0 0 * * * *", Named("hourly", bf.job(id, 0), WithOverlap(Forbid)))
		}).cron)
	}
	ctx := context.Background()
	leader := runAfter(t, clock.ch, time.Time{}, 10*time.Second, "run of tick").Instance
	ctl, err := NewControl(srv.Client(t), "", "bf")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() (bool, string) {
		st, err := ctl.Status(ctx)
		_, ok := jobStatus(st, "hourly")
		return err == nil && ok, fmt.Sprintf("hourly not registered: %v", err)
	})
	from, to, ticks := hourlyTicks(10)

	// Over the cap: refused, with the count, and nothing asked.
	if _, err := crons[1].Backfill(ctx, "hourly", from, to, 5); err == nil || !strings.Contains(err.Error(), "10 ticks, more than the cap of 5") {
		t.Errorf("Backfill of 10 ticks with a cap of 5: %v, want an error counting them", err)
	}
	if bs, err := ctl.Backfills(ctx, "hourly"); err != nil || len(bs) != 0 {
		t.Errorf("a refused Backfill left requests %+v (%v)", bs, err)
	}

	// Asked of two replicas and a Control at once: one backfill.
	var wg sync.WaitGroup
	results := make([]Backfill, 3)
	errs := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 2 {
				results[i], errs[i] = ctl.Backfill(ctx, "hourly", from, to, 0, "test")
				return
			}
			results[i], errs[i] = crons[i].Backfill(ctx, "hourly", from, to, 0)
		}()
	}
	wg.Wait()
	fresh := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Backfill %d: %v", i, err)
		}
		if !results[i].Existing {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d of three identical Backfills made a new request, want 1: %+v", fresh, results)
	}
	bf.wait(t, len(ticks), 20*time.Second)
	for _, by := range bf.check(t, ticks) {
		if by != leader {
			t.Errorf("a backfilled run on %s, want the leader %s", by, leader)
		}
	}
	eventually(t, 5*time.Second, func() (bool, string) {
		st, err := ctl.Status(ctx)
		j, _ := jobStatus(st, "hourly")
		return err == nil && len(j.Backfills) == 1 && j.Backfills[0].Finished && j.Backfills[0].Done == 10 && j.Backfills[0].Ticks == 10,
			fmt.Sprintf("status backfills %+v (%v), want one finished of 10/10", j.Backfills, err)
	})
	eventually(t, 5*time.Second, func() (bool, string) {
		st, err := ctl.Status(ctx)
		j, _ := jobStatus(st, "hourly")
		n := 0
		for _, rec := range j.History {
			if rec.Backfill {
				n++
			}
		}
		return err == nil && n == 10, fmt.Sprintf("%d backfilled records in the history %+v (%v), want 10", n, j.History, err)
	})

	// Asked again once finished: the same backfill, which runs nothing.
	again, err := crons[0].Backfill(ctx, "hourly", from, to, 0)
	if err != nil || !again.Existing || !again.Finished || again.Done != 10 {
		t.Errorf("Backfill of a finished range: %+v, %v; want it existing, finished, 10 done", again, err)
	}

	// A Control's request over the cap: the leader counts and refuses it.
	from2, to2 := from.Add(-20*time.Hour), from.Add(-15*time.Hour)
	if b, err := ctl.Backfill(ctx, "hourly", from2, to2, 3, "test"); err != nil || b.Ticks != 0 || b.Existing {
		t.Fatalf("Control.Backfill: %+v, %v; want a new request not yet counted", b, err)
	}
	eventually(t, 5*time.Second, func() (bool, string) {
		bs, err := ctl.Backfills(ctx, "hourly")
		for _, b := range bs {
			if b.From.Equal(from2) {
				return strings.Contains(b.Refused, "5 ticks, more than the cap of 3") && b.Done == 0,
					fmt.Sprintf("request over the cap %+v, want it refused with its count", b)
			}
		}
		return false, fmt.Sprintf("no request of %v in %+v (%v)", from2, bs, err)
	})
	ticksAfter(t, clock.ch, time.Now(), 2, 5*time.Second, "tick")
	bf.check(t, ticks) // and no run more
}

// TestBackfillInClaimModeRunsEachTickOnceAndAlone: every replica of a
// claim-mode Cron drives the backfill; each tick runs once, in order, and
// no two backfilled runs overlap though the job is Allow.
func TestBackfillInClaimModeRunsEachTickOnceAndAlone(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	clock, bf := newLedger(), newBackfillLedger()
	var crons []*Cron
	for i := range 3 {
		id := fmt.Sprintf("r%d", i)
		crons = append(crons, opsReplica(t, srv.Client(t), "bfclaim", id, ClaimMode, clock, func(c *Cron) {
			mustAdd(t, c, "0 0 * * * *", Named("hourly", bf.job(id, 100*time.Millisecond)))
		}).cron)
	}
	ctx := context.Background()
	runAfter(t, clock.ch, time.Time{}, 10*time.Second, "run of tick")
	from, to, ticks := hourlyTicks(8)
	eventually(t, 5*time.Second, func() (bool, string) {
		_, err := crons[0].Backfill(ctx, "hourly", from, to, 0)
		return err == nil, fmt.Sprintf("Backfill: %v", err)
	})
	bf.wait(t, len(ticks), 20*time.Second)
	ticksAfter(t, clock.ch, time.Now(), 1, 5*time.Second, "tick")
	bf.check(t, ticks)
	if m := bf.most.Load(); m != 1 {
		t.Errorf("%d backfilled runs were in progress at once, want 1", m)
	}
}

// backfillReplica starts a leader-mode Cron of scheduler name on cli, with
// sessions of ttl, whose Forbid job "hourly" runs into l.
func backfillReplica(t *testing.T, cli *clientv3.Client, name, id string, ttl time.Duration, l *backfillLedger) *replica {
	t.Helper()
	c := New(WithSeconds(), WithEtcd(cli), WithName(name),
		WithElection(election.WithIdentity(id), election.WithTTL(ttl)))
	mustAdd(t, c, "0 0 * * * *", Named("hourly", l.job(id, 0), WithOverlap(Forbid)))
	c.Start()
	r := &replica{id: id, cron: c, cli: cli}
	t.Cleanup(func() { r.stop(t) })
	return r
}

// TestBackfillResumesOnASuccessor: a leader stopped or cut off (a crash,
// as etcd sees it) while a backfilled run is in progress hands the
// backfill over; the successor runs the ticks after it, each once.
func TestBackfillResumesOnASuccessor(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"stopped", "crashed"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			if fault == "crashed" && testing.Short() {
				t.Skip("waits on the wall clock for a lease to lapse; the full tier runs it")
			}
			srv := etcdtest.Shared(t)
			proxy := etcdtest.NewProxy(t, srv.Addr())
			name := "bfresume-" + fault
			from, to, ticks := hourlyTicks(5)
			bf := newBackfillLedger()
			holding, release := make(chan struct{}), make(chan struct{})
			bf.holdFor = func(i Info) func(context.Context) {
				if i.Instance != "a" || !i.Tick.Equal(ticks[1]) {
					return nil
				}
				return func(ctx context.Context) {
					close(holding)
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
			}
			a := backfillReplica(t, srv.NewClient(t, proxy.Endpoint()), name, "a", 2*time.Second, bf)
			eventually(t, 10*time.Second, func() (bool, string) { return a.cron.coord.scheduling(), "a does not lead" })
			backfillReplica(t, srv.Client(t), name, "b", 2*time.Second, bf)
			waitCandidates(t, srv.Client(t), name, 2)
			if _, err := a.cron.Backfill(context.Background(), "hourly", from, to, 0); err != nil {
				t.Fatal(err)
			}
			select {
			case <-holding:
			case <-time.After(15 * time.Second):
				t.Fatal("the second backfilled tick did not start on a within 15s")
			}
			switch fault {
			case "stopped":
				// Stop lets the run finish; b waits for it (Forbid).
				stopped := a.cron.Stop()
				close(release)
				select {
				case <-stopped.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("a's Stop context not done within 10s")
				}
			case "crashed":
				proxy.Blackhole()
				defer close(release)
			}
			bf.wait(t, len(ticks), 20*time.Second)
			by := bf.check(t, ticks)
			for i, who := range by {
				want := "a"
				if i >= 2 {
					want = "b"
				}
				if who != want {
					t.Errorf("backfilled tick %d ran on %s, want %s", i, who, want)
				}
			}
		})
	}
}

// slowCommits delays the answer to a transaction that puts the key slow,
// once it committed: a claim that etcd took, on its way back.
type slowCommits struct {
	clientv3.KV
	slow  atomic.Value // string: the key
	delay time.Duration
}

func (s *slowCommits) Txn(ctx context.Context) clientv3.Txn {
	return &slowTxn{Txn: s.KV.Txn(ctx), s: s}
}

type slowTxn struct {
	clientv3.Txn
	s    *slowCommits
	then []clientv3.Op
}

func (t *slowTxn) If(cs ...clientv3.Cmp) clientv3.Txn   { t.Txn = t.Txn.If(cs...); return t }
func (t *slowTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }
func (t *slowTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.then = ops
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *slowTxn) Commit() (*clientv3.TxnResponse, error) {
	resp, err := t.Txn.Commit()
	slow, _ := t.s.slow.Load().(string)
	for _, op := range t.then {
		if err == nil && resp.Succeeded && op.IsPut() && slow != "" && string(op.KeyBytes()) == slow {
			time.Sleep(t.s.delay)
		}
	}
	return resp, err
}

// TestBackfillClaimGivenBackAtStopRunsOnTheSuccessor: a backfilled tick
// whose claim comes back to a stopping leader after Stop stopped waiting
// for it is given back: the successor runs it, rather than resume after it.
func TestBackfillClaimGivenBackAtStopRunsOnTheSuccessor(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	from, to, ticks := hourlyTicks(4)
	bf := newBackfillLedger()
	holding, release := make(chan struct{}), make(chan struct{})
	bf.holdFor = func(i Info) func(context.Context) {
		if i.Instance != "a" || !i.Tick.Equal(ticks[0]) {
			return nil
		}
		return func(context.Context) {
			close(holding)
			<-release
		}
	}
	cli := srv.NewClient(t, srv.Endpoint())
	slow := &slowCommits{KV: cli.KV, delay: 3 * stopClaimWait}
	cli.KV = slow
	// Leadership changes hands by Stop: a loaded machine must not lapse
	// a's term under a short TTL, or b claims the tick the test waits on
	// a for (stallTTL).
	a := backfillReplica(t, cli, "bfgiveback", "a", stallTTL, bf)
	eventually(t, 10*time.Second, func() (bool, string) { return a.cron.coord.scheduling(), "a does not lead" })
	backfillReplica(t, srv.Client(t), "bfgiveback", "b", stallTTL, bf)
	waitCandidates(t, srv.Client(t), "bfgiveback", 2)
	if _, err := a.cron.Backfill(context.Background(), "hourly", from, to, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-holding:
	case <-time.After(15 * time.Second):
		t.Fatal("the first backfilled tick did not start on a within 15s")
	}
	// The claim of the second tick commits, and comes back to a well after
	// Stop, called at once, stopped waiting for it.
	marker := a.cron.coord.keys.BackfillMarker("hourly", ticks[1].UnixNano())
	slow.slow.Store(marker)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := srv.Client(t).Watch(ctx, marker, clientv3.WithFilterDelete())
	close(release)
	for claimed := false; !claimed; {
		select {
		case wr := <-w:
			for _, ev := range wr.Events {
				claimed = claimed || jobkeys.MarkerHolder(string(ev.Kv.Value)) == "a"
			}
		case <-time.After(15 * time.Second):
			t.Fatal("a did not claim the second backfilled tick within 15s")
		}
	}
	stopped := a.cron.Stop()
	select {
	case <-stopped.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a's Stop context not done within 10s")
	}
	bf.wait(t, len(ticks), 20*time.Second)
	by := bf.check(t, ticks)
	if len(by) > 1 && by[1] != "b" {
		t.Errorf("the second tick ran on %s: its claim came back within Stop's wait, and was not given back", by[1])
	}
}

// TestBackfillOfAPausedJobWaitsForResume: no backfilled tick runs while
// its job is paused; once resumed, each runs.
func TestBackfillOfAPausedJobWaitsForResume(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	clock, bf := newLedger(), newBackfillLedger()
	c := opsReplica(t, srv.Client(t), "bfpause", "r0", LeaderMode, clock, func(c *Cron) {
		mustAdd(t, c, "0 0 * * * *", Named("hourly", bf.job("r0", 0)))
	}).cron
	ctx := context.Background()
	runAfter(t, clock.ch, time.Time{}, 10*time.Second, "run of tick")
	// The leader publishes its jobs when elected; pausing needs them known.
	waitPublished(t, srv.Client(t), "bfpause", "hourly")
	if err := c.Pause(ctx, "hourly"); err != nil {
		t.Fatal(err)
	}
	from, to, ticks := hourlyTicks(2)
	if _, err := c.Backfill(ctx, "hourly", from, to, 0); err != nil {
		t.Fatal(err)
	}
	ticksAfter(t, clock.ch, time.Now(), 2, 5*time.Second, "tick")
	bf.check(t, nil)
	if err := c.Resume(ctx, "hourly"); err != nil {
		t.Fatal(err)
	}
	bf.wait(t, len(ticks), 10*time.Second)
	bf.check(t, ticks)
}

// TestBackfillBadInput: each bad input is an error that names it.
func TestBackfillBadInput(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	c := New(WithSeconds(), WithEtcd(srv.Client(t)), WithName("bfbad"))
	mustAdd(t, c, "0 0 * * * *", Named("hourly", FuncJob(func() {})))
	ctx := context.Background()
	now := time.Now()
	for _, tc := range []struct {
		name     string
		job      string
		from, to time.Time
		max      int
		want     string
	}{
		{"unknown job", "nope", now.Add(-time.Hour), now, 0, "no such job"},
		{"to before from", "hourly", now, now.Add(-time.Hour), 0, "is not before to"},
		{"to in the future", "hourly", now.Add(-time.Hour), now.Add(time.Hour), 0, "later than now"},
		{"negative max", "hourly", now.Add(-time.Hour), now, -1, "max -1 is not within"},
		{"max too large", "hourly", now.Add(-time.Hour), now, MaxBackfillTicks + 1, fmt.Sprintf("max %d is not within", MaxBackfillTicks+1)},
		{"too many ticks", "hourly", now.Add(-20 * 365 * 24 * time.Hour), now, MaxBackfillTicks, fmt.Sprintf("more than %d ticks", MaxBackfillTicks)},
	} {
		if _, err := c.Backfill(ctx, tc.job, tc.from, tc.to, tc.max); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	local := New(WithSeconds())
	if _, err := local.Backfill(ctx, "hourly", now.Add(-time.Hour), now, 0); !errors.Is(err, ErrNotCoordinated) {
		t.Errorf("Backfill of a Cron without etcd: %v, want ErrNotCoordinated", err)
	}
}

// TestBackfillGoesOnAcrossAnEtcdRestart: etcd restarts while a backfilled
// run is in progress; the backfill goes on from where it was, each tick
// once, whoever leads afterwards.
func TestBackfillGoesOnAcrossAnEtcdRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for etcd to come back; the full tier runs it")
	}
	m := etcdtest.Start(t)
	from, to, ticks := hourlyTicks(5)
	bf := newBackfillLedger()
	holding, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	bf.holdFor = func(i Info) func(context.Context) {
		if !i.Tick.Equal(ticks[1]) {
			return nil
		}
		return func(ctx context.Context) {
			once.Do(func() { close(holding) })
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}
	a := backfillReplica(t, m.Client(t), "bfrestart", "a", 2*time.Second, bf)
	eventually(t, 10*time.Second, func() (bool, string) { return a.cron.coord.scheduling(), "a does not lead" })
	backfillReplica(t, m.Client(t), "bfrestart", "b", 2*time.Second, bf)
	waitCandidates(t, m.Client(t), "bfrestart", 2)
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(release) }) }) // before the replicas stop
	if _, err := a.cron.Backfill(context.Background(), "hourly", from, to, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case <-holding:
	case <-time.After(15 * time.Second):
		t.Fatal("the second backfilled tick did not start within 15s")
	}
	m.Kill()
	m.Restart(t)
	released.Do(func() { close(release) })
	bf.wait(t, len(ticks), 30*time.Second)
	bf.check(t, ticks)
}

// TestBackfillTicksOfARange: a range holds the ticks at or after its start
// and before its end; the resume point is the tick after the last claimed.
func TestBackfillTicksOfARange(t *testing.T) {
	t.Parallel()
	hourly, err := ParseStandard("0 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	never, err := ParseStandard("0 0 30 2 *") // February 30th
	if err != nil {
		t.Fatal(err)
	}
	h := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		sched    Schedule
		from, to time.Time
		want     int
	}{
		{"from on a tick", hourly, h, h.Add(3 * time.Hour), 3},
		{"from just past a tick", hourly, h.Add(time.Nanosecond), h.Add(3 * time.Hour), 2},
		{"to on a tick, not included", hourly, h, h.Add(time.Hour), 1},
		{"no tick", never, h, h.Add(24 * time.Hour), 0},
	} {
		if n, over := countTicks(tc.sched, tc.from, tc.to, 10); n != tc.want || over {
			t.Errorf("%s: %d ticks (over %v), want %d", tc.name, n, over, tc.want)
		}
	}
	if n, over := countTicks(hourly, h, h.Add(24*time.Hour), 10); !over || n != 10 {
		t.Errorf("a day of an hourly job counted up to 10: %d, over %v", n, over)
	}
	v := jobkeys.Backfill{From: h.UnixNano(), To: h.Add(3 * time.Hour).UnixNano()}
	var got []time.Time
	for {
		tick, _ := nextBackfillTick(hourly, v, time.UTC)
		if tick.IsZero() {
			break
		}
		got = append(got, tick)
		v.Last = tick.UnixNano()
	}
	if want := []time.Time{h, h.Add(time.Hour), h.Add(2 * time.Hour)}; !slices.Equal(got, want) {
		t.Errorf("the ticks claimed one after another: %v, want %v", got, want)
	}
}
