package cronx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// opsReplica starts a coordinated Cron named name, with identity id and a
// 2 s TTL, whose "tick" job runs every second into l (a clock the test can
// wait on), and whose other jobs add registers before Start.
func opsReplica(t *testing.T, cli *clientv3.Client, name, id string, mode Mode, l *ledger, add func(c *Cron)) *replica {
	t.Helper()
	return opsReplicaTTL(t, cli, name, id, mode, 2*time.Second, l, add)
}

// opsReplicaTTL is opsReplica with a session TTL of ttl.
func opsReplicaTTL(t *testing.T, cli *clientv3.Client, name, id string, mode Mode, ttl time.Duration, l *ledger, add func(c *Cron)) *replica {
	t.Helper()
	c := New(WithSeconds(), WithEtcd(cli), WithName(name), WithMode(mode),
		WithElection(election.WithIdentity(id), election.WithTTL(ttl)))
	if _, err := c.AddJob("* * * * * *", Named("tick", l.job(id, nil))); err != nil {
		t.Fatal(err)
	}
	if add != nil {
		add(c)
	}
	c.Start()
	r := &replica{id: id, cron: c, cli: cli}
	t.Cleanup(func() { r.stop(t) })
	return r
}

// mustAdd adds job on spec or fails the test.
func mustAdd(t *testing.T, c *Cron, spec string, job Job) {
	t.Helper()
	if _, err := c.AddJob(spec, job); err != nil {
		t.Fatal(err)
	}
}

// runAfter waits for a run on ch whose tick is later than after.
func runAfter(t *testing.T, ch <-chan Info, after time.Time, d time.Duration, what string) Info {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case r := <-ch:
			if r.Tick.After(after) {
				return r
			}
		case <-deadline:
			t.Fatalf("no %s with a tick after %v within %v", what, after.Format(time.TimeOnly+".000"), d)
		}
	}
}

// ticksAfter waits until n runs on ch had ticks later than after.
func ticksAfter(t *testing.T, ch <-chan Info, after time.Time, n int, d time.Duration, what string) {
	t.Helper()
	deadline := time.After(d)
	for seen := 0; seen < n; {
		select {
		case r := <-ch:
			if r.Tick.After(after) {
				seen++
			}
		case <-deadline:
			t.Fatalf("saw %d %s ticks after %v within %v, want %d", seen, what, after.Format(time.TimeOnly+".000"), d, n)
		}
	}
}

// returnsWithin fails the test unless f returns within d.
func returnsWithin(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// eventually polls cond until it holds, failing after d with cond's last
// explanation.
func eventually(t *testing.T, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// closedEndpoint returns the URL of a 127.0.0.1 port nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func jobStatus(st Status, name string) (JobStatus, bool) {
	for _, j := range st.Jobs {
		if j.Name == name {
			return j, true
		}
	}
	return JobStatus{}, false
}

// TestContextJobGetsRunInfoAndShutdownCancelsIt: a ContextJob learns which
// run it is — its job name, its nominal tick, the replica, and a fence its
// own etcd writes can be guarded with. Stop does not interrupt it (robfig's
// meaning, coordinated too): its context goes on, and so does Stop's, until
// Shutdown's context ends, which cancels the run with ErrShutdown; Shutdown
// returns once it has.
func TestContextJobGetsRunInfoAndShutdownCancelsIt(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	type started struct {
		info      Info
		ok        bool
		committed bool
		err       error
	}
	runs := make(chan started, 64)
	returned := make(chan error, 64)
	report := func(ctx context.Context) error {
		info, ok := InfoFrom(ctx)
		s := started{info: info, ok: ok}
		if ok {
			resp, err := cli.Txn(ctx).If(info.Fence.Cmp()).Then(clientv3.OpPut("/app/report", info.Tick.String())).Commit()
			s.err = err
			s.committed = err == nil && resp.Succeeded
		}
		runs <- s
		<-ctx.Done()
		returned <- context.Cause(ctx)
		return nil
	}
	c := New(WithSeconds(), WithEtcd(cli), WithName("ctxjobs"),
		WithElection(election.WithIdentity("web-1"), election.WithTTL(2*time.Second)))
	mustAdd(t, c, "* * * * * *", Named("report", ContextFunc(report)))
	c.Start()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			<-c.Stop().Done()
		}
	})

	var s started
	select {
	case s = <-runs:
	case <-time.After(8 * time.Second):
		t.Fatal("the job did not run within 8s")
	}
	if !s.ok {
		t.Fatal("InfoFrom found no run info in the job's context")
	}
	info := s.info
	if info.Job != "report" {
		t.Errorf("Info.Job = %q, want %q", info.Job, "report")
	}
	if info.Tick.IsZero() || info.Tick.Nanosecond() != 0 {
		t.Errorf("Info.Tick = %v, want a whole second (the nominal tick, not the start time)", info.Tick)
	}
	if info.Instance != "web-1" {
		t.Errorf("Info.Instance = %q, want %q", info.Instance, "web-1")
	}
	if info.Triggered {
		t.Error("Info.Triggered is true for a scheduled run")
	}
	if info.Fence.Revision <= 0 {
		t.Errorf("Info.Fence.Revision = %d, want > 0", info.Fence.Revision)
	}
	if s.err != nil || !s.committed {
		t.Errorf("a transaction guarded by Info.Fence.Cmp() did not commit while leading (err %v)", s.err)
	}
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The run's fence is its own, claimed during the term: a later token.
	if st.Leader.Identity != "web-1" || info.Fence.Revision <= st.Leader.Fence.Revision {
		t.Errorf("Status leader %q fence %v; the run had fence %v of web-1", st.Leader.Identity, st.Leader.Fence, info.Fence)
	}
	select {
	case cause := <-returned:
		t.Fatalf("the job's context ended while the Cron ran: %v", cause)
	default:
	}

	stopped = true
	done := c.Stop()
	// A second after Stop, nothing has interrupted the run, nor has another
	// started.
	stopSparesTheRun(t, done, returned, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace left: Shutdown cancels the runs at once
	shut := make(chan error, 1)
	go func() { shut <- c.Shutdown(ctx) }()
	select {
	case cause := <-returned:
		if !errors.Is(cause, ErrShutdown) {
			t.Errorf("the run's context ended with %v, want ErrShutdown", cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the job did not return within 5s of Shutdown's end: its context was not cancelled")
	}
	select {
	case err := <-shut:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown = %v, want its context's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return within 10s of its runs")
	}
	select {
	case <-done.Done():
	case <-time.After(time.Second):
		t.Fatal("Stop's context not done once Shutdown returned")
	}
	// Every run that started has returned by the time Stop's context is done.
	if len(runs) != len(returned) {
		t.Errorf("%d more runs started than returned before Stop's context was done", len(runs)-len(returned))
	}
	// The fence was the run's: once the run ended it guards nothing.
	resp, err := cli.Txn(context.Background()).If(info.Fence.Cmp()).Then(clientv3.OpPut("/app/report", "late")).Commit()
	if err != nil {
		t.Fatal(err)
	}
	if resp.Succeeded {
		t.Error("a transaction guarded by the fence committed after the Cron stopped")
	}
}

// TestOverlapPolicyAcrossReplicas: with Forbid, a run in progress on one
// replica makes every replica skip the job's ticks until it ends, and the
// skipped ticks are not queued; with Allow, runs overlap.
func TestOverlapPolicyAcrossReplicas(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	for _, overlap := range []Overlap{Forbid, Allow} {
		name := map[Overlap]string{Forbid: "forbid", Allow: "allow"}[overlap]
		t.Run(name, func(t *testing.T) {
			srv := etcdtest.Shared(t)
			l := newLedger()
			var inProgress, most atomic.Int32
			starts := make(chan Info, 64)
			release := make(chan struct{})
			slow := func(ctx context.Context) error {
				info, _ := InfoFrom(ctx)
				n := inProgress.Add(1)
				defer inProgress.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				starts <- info
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			}
			for _, id := range []string{"r0", "r1"} {
				opsReplica(t, srv.Client(t), "overlap", id, ClaimMode, l, func(c *Cron) {
					mustAdd(t, c, "* * * * * *", Named("slow", ContextFunc(slow), WithOverlap(overlap)))
				})
			}

			var first Info
			select {
			case first = <-starts:
			case <-time.After(8 * time.Second):
				t.Fatal("slow did not run within 8s")
			}
			if overlap == Allow {
				// The next tick starts a second run beside the first.
				runAfter(t, starts, first.Tick, 5*time.Second, "overlapping run of slow")
			}
			// Hold the first run over two more ticks of the clock job.
			runAfter(t, l.ch, first.Tick.Add(2*time.Second), 5*time.Second, "clock")
			close(release)

			if overlap == Allow {
				if most.Load() < 2 {
					t.Errorf("at most %d runs were in progress at once with Allow, want 2 or more", most.Load())
				}
				return
			}
			next := runAfter(t, starts, time.Time{}, 5*time.Second, "run of slow after the first ended")
			if next.Tick.Before(first.Tick.Add(3 * time.Second)) {
				t.Errorf("after the run of %v ended, the tick %v ran: a tick skipped while it ran was queued",
					first.Tick.Format(time.TimeOnly), next.Tick.Format(time.TimeOnly))
			}
			if m := most.Load(); m != 1 {
				t.Errorf("%d runs of a Forbid job were in progress at once across the replicas, want 1", m)
			}
		})
	}
}

// TestPauseResumeTriggerStatus operates a three-replica cluster the way
// `baton pause|resume|trigger|status` does, through any replica's Cron and
// through a Control of a separate client.
func TestPauseResumeTriggerStatus(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	clock, work, far := newLedger(), newLedger(), newLedger()
	replicas := map[string]*replica{}
	for i := range 3 {
		id := fmt.Sprintf("r%d", i)
		replicas[id] = opsReplica(t, srv.Client(t), "ops", id, LeaderMode, clock, func(c *Cron) {
			mustAdd(t, c, "* * * * * *", Named("work", work.job(id, nil)))
			mustAdd(t, c, "0 0 0 1 1 *", Named("far", far.job(id, nil))) // New Year's midnight only
		})
	}
	ctx := context.Background()
	firstWork := runAfter(t, work.ch, time.Time{}, 10*time.Second, "run of work")
	leader := firstWork.Instance
	var follower *replica
	for id, r := range replicas {
		if id != leader {
			follower = r
			break
		}
	}
	ctl, err := NewControl(srv.Client(t), "", "ops")
	if err != nil {
		t.Fatal(err)
	}
	// The leader publishes its jobs when elected; pausing needs them known.
	eventually(t, 5*time.Second, func() (bool, string) {
		st, err := ctl.Status(ctx)
		j, _ := jobStatus(st, "work")
		return err == nil && j.Spec == "* * * * * *", fmt.Sprintf("work not published: %+v, %v", j, err)
	})

	// Pause: no run starts over two ticks of the clock job.
	if err := follower.cron.Pause(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Now()
	ticksAfter(t, clock.ch, pausedAt, 2, 5*time.Second, "clock")
	work.mu.Lock()
	var lastWork Info
	for _, r := range work.runs {
		if r.Tick.After(pausedAt) {
			t.Errorf("work ran for tick %v while paused", r.Tick.Format(time.TimeOnly))
		}
		if r.Tick.After(lastWork.Tick) {
			lastWork = r
		}
	}
	work.mu.Unlock()

	// Status while paused: work is still, so what etcd says must match the
	// last run exactly.
	lc := replicas[leader].cron
	var st Status
	eventually(t, 5*time.Second, func() (bool, string) {
		st, err = lc.Status(ctx)
		j, _ := jobStatus(st, "work")
		return err == nil && len(j.History) > 0 && j.History[len(j.History)-1].Tick.Equal(lastWork.Tick),
			fmt.Sprintf("work's history does not end with its last run %v: %+v, %v", lastWork.Tick, j.History, err)
	})
	if st.Scheduler != "ops" || st.Leader.Identity != leader {
		t.Errorf("Status scheduler %q leader %q, want ops led by %s", st.Scheduler, st.Leader.Identity, leader)
	}
	j, _ := jobStatus(st, "work")
	if !j.Paused {
		t.Error("Status does not show work paused")
	}
	if !j.LastTick.Equal(lastWork.Tick) || j.LastBy != leader {
		t.Errorf("Status: work last ran %v by %q; the ledger says %v by %q", j.LastTick, j.LastBy, lastWork.Tick, leader)
	}
	for _, rec := range j.History {
		if rec.Instance == "" || rec.Start.IsZero() || rec.Duration <= 0 || rec.Error != "" {
			t.Errorf("history record %+v lacks an instance, a start or a duration", rec)
		}
	}
	if len(j.Running) != 0 {
		t.Errorf("Status: work running on %v while paused", j.Running)
	}
	if !j.Next.After(j.LastTick) {
		t.Errorf("Status from the leader's Cron: work's Next %v is not after its last tick %v", j.Next, j.LastTick)
	}
	// A follower's Cron does not schedule, but its Status still tells when
	// the job runs next.
	fst, err := follower.cron.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fj, _ := jobStatus(fst, "work"); !fj.Next.After(j.LastTick) {
		t.Errorf("Status from a follower's Cron: work's Next %v is not after its last tick %v", fj.Next, j.LastTick)
	}
	cst, err := ctl.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cj, _ := jobStatus(cst, "work")
	if cst.Leader.Identity != leader || !cj.Paused || !cj.LastTick.Equal(j.LastTick) || cj.LastBy != j.LastBy ||
		len(cj.History) != len(j.History) || !cj.Next.IsZero() {
		t.Errorf("a Control's Status differs from the Cron's:\n control: leader %q %+v\n cron:    leader %q %+v",
			cst.Leader.Identity, cj, st.Leader.Identity, j)
	}

	// Resume: it runs again.
	if err := follower.cron.Resume(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	resumedAt := time.Now()
	runAfter(t, work.ch, resumedAt, 5*time.Second, "run of work after Resume")
	st, err = ctl.Status(ctx)
	if j, _ := jobStatus(st, "work"); err != nil || j.Paused {
		t.Errorf("Status after Resume: work paused %v (err %v)", j.Paused, err)
	}

	// Trigger: a job whose schedule is far away runs once, now, on the leader.
	if err := follower.cron.Trigger(ctx, "far"); err != nil {
		t.Fatal(err)
	}
	triggeredAt := time.Now()
	var run Info
	select {
	case run = <-far.ch:
	case <-time.After(5 * time.Second):
		t.Fatal("the triggered job did not run within 5s")
	}
	if !run.Triggered || run.Job != "far" || run.Instance != leader {
		t.Errorf("triggered run %+v, want far with Triggered on the leader %s", run, leader)
	}
	eventually(t, 5*time.Second, func() (bool, string) {
		resp, err := srv.Client(t).Get(ctx, "/baton/jobs/ops/.trigger/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return false, err.Error()
		}
		return resp.Count == 0, fmt.Sprintf("%d trigger requests left", resp.Count)
	})
	ticksAfter(t, clock.ch, triggeredAt, 2, 5*time.Second, "clock")
	far.mu.Lock()
	if len(far.runs) != 1 {
		t.Errorf("one trigger ran far %d times: %+v", len(far.runs), far.runs)
	}
	far.mu.Unlock()

	for _, op := range []struct {
		name string
		do   func() error
	}{
		{"Trigger", func() error { return follower.cron.Trigger(ctx, "nope") }},
		{"Pause", func() error { return follower.cron.Pause(ctx, "nope") }},
		{"Control.Trigger", func() error { return ctl.Trigger(ctx, "nope", "test") }},
	} {
		if err := op.do(); !errors.Is(err, ErrUnknownJob) || !strings.Contains(fmt.Sprint(err), "nope") {
			t.Errorf("%s of an unknown job: %v, want ErrUnknownJob naming it", op.name, err)
		}
	}
}

// TestBadInputIsAnError: every misuse is an error that names what was wrong,
// never a panic and never a silently ignored job.
func TestBadInputIsAnError(t *testing.T) {
	t.Parallel()
	// Nothing here reaches etcd: input is checked before any I/O.
	cli := etcdtest.NewClient(t, closedEndpoint(t))
	elector, err := election.New(cli, "el")
	if err != nil {
		t.Fatal(err)
	}
	f := func() {}
	coordinated := func(name string, opts ...Option) *Cron {
		return New(append([]Option{WithSeconds(), WithEtcd(cli), WithName(name)}, opts...)...)
	}
	for _, tc := range []struct {
		name string
		add  func() error
		want string
	}{
		{"invalid spec", func() error {
			_, err := New().AddFunc("61 * * * *", f)
			return err
		}, "above maximum (59): 61"}, // robfig's words

		{"invalid spec, coordinated", func() error {
			_, err := coordinated("spec").AddFunc("* * *", f)
			return err
		}, "found 3: [* * *]"},
		{"two jobs with one name", func() error {
			c := coordinated("dup")
			if _, err := c.AddJob("@every 1m", Named("report", FuncJob(f))); err != nil {
				return fmt.Errorf("first job: %w", err)
			}
			_, err := c.AddJob("@every 1h", Named("report", FuncJob(f)))
			if n := len(c.Entries()); n != 1 {
				return fmt.Errorf("%d entries after the duplicate: %v", n, err)
			}
			return err
		}, `"report"`},
		{"nil job", func() error {
			_, err := coordinated("nil").AddJob("@every 1m", nil)
			return err
		}, "nil"},
		{"named nil job", func() error {
			_, err := coordinated("nilnamed").AddJob("@every 1m", Named("empty", nil))
			return err
		}, `"empty"`},
		{"elector in claim mode", func() error {
			_, err := New(WithElector(elector), WithMode(ClaimMode)).AddFunc("@every 1m", f)
			return err
		}, "WithElector"},
		{"nil etcd client", func() error {
			_, err := New(WithEtcd(nil)).AddFunc("@every 1m", f)
			return err
		}, "WithEtcd"},
		{"negative misfire grace", func() error {
			_, err := New(WithMisfire(Skip, -time.Second)).AddFunc("@every 1m", f)
			return err
		}, "WithMisfire"},
		{"scheduler name with a slash", func() error {
			_, err := coordinated("a/b").AddFunc("@every 1m", f)
			return err
		}, `"a/b"`},
		{"job name with a slash", func() error {
			_, err := coordinated("slash").AddJob("@every 1m", Named("a/b", FuncJob(f)))
			return err
		}, `"a/b"`},
		{"empty job name", func() error {
			_, err := coordinated("empty").AddJob("@every 1m", Named("", FuncJob(f)))
			return err
		}, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panic: %v", p)
					}
				}()
				err = tc.add()
			}()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %s", err, tc.want)
			}
		})
	}
}

// TestUnreachableEtcdBlocksNothingAndRunsNothing is G6: with etcd down, New,
// AddFunc, Start, Stop and the cluster operations return at once, no job
// runs without a claim, and Stop's context is done soon.
func TestUnreachableEtcdBlocksNothingAndRunsNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	if !inOwnProcess(t) {
		return
	}
	cases := []struct {
		name string
		opts func(t *testing.T, ep string) []Option
	}{
		{"leader", func(t *testing.T, ep string) []Option {
			return []Option{WithEtcd(etcdtest.NewClient(t, ep)), WithName("down"),
				WithElection(election.WithTTL(2 * time.Second))}
		}},
		{"claim", func(t *testing.T, ep string) []Option {
			return []Option{WithEtcd(etcdtest.NewClient(t, ep)), WithName("down"), WithMode(ClaimMode),
				WithElection(election.WithTTL(2 * time.Second))}
		}},
		{"env", func(t *testing.T, ep string) []Option {
			t.Setenv("BATON_ETCD_ENDPOINTS", ep)
			return nil // a plain New, as after an import swap
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]Option{WithSeconds()}, tc.opts(t, closedEndpoint(t))...)
			ran := make(chan struct{}, 16)
			job := func() { ran <- struct{}{} }
			var c *Cron
			returnsWithin(t, time.Second, "New", func() { c = New(opts...) })
			if c.Name() == "" {
				t.Fatal("the Cron is not coordinated")
			}
			returnsWithin(t, time.Second, "AddFunc", func() {
				if _, err := c.AddFunc("* * * * * *", job); err != nil {
					t.Error(err)
				}
			})
			returnsWithin(t, time.Second, "Start", c.Start)
			stopped := false
			t.Cleanup(func() {
				if !stopped {
					<-c.Stop().Done()
				}
			})
			// Nothing to wait for but the absence of runs.
			select {
			case <-ran:
				t.Fatal("a job ran without a claim")
			case <-time.After(3 * time.Second):
			}
			// By now ticks are being claimed in vain; the Cron still answers.
			returnsWithin(t, time.Second, "AddFunc on the running Cron", func() {
				if _, err := c.AddFunc("*/2 * * * * *", job); err != nil {
					t.Error(err)
				}
			})
			returnsWithin(t, 2*time.Second, "Pause with a 500ms context", func() {
				ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
				defer cancel()
				if err := c.Pause(ctx, "x"); err == nil {
					t.Error("Pause succeeded with etcd down")
				}
			})
			stopped = true
			var done context.Context
			returnsWithin(t, time.Second, "Stop", func() { done = c.Stop() })
			select {
			case <-done.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("Stop's context not done within 10s")
			}
			if len(ran) > 0 {
				t.Fatal("a job ran without a claim")
			}
		})
	}
}

// TestEnvironmentTurnsCoordinationOn: BATON_ETCD_ENDPOINTS alone makes
// replicas built with a plain New share each tick. Their clocks are fake,
// moved a tick at a time, so that a loaded machine cannot make a tick
// missed.
func TestEnvironmentTurnsCoordinationOn(t *testing.T) {
	srv := etcdtest.Shared(t)
	srv.Setenv(t)
	l := newLedger()
	pc := &policyCluster{t: t, name: "same"}
	var crons []*Cron
	for _, id := range []string{"web-1", "web-2"} {
		fake := clock.NewFake(t0)
		c := New(WithSeconds(), WithName("same"), withClock(fake), WithLocation(time.UTC),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		mustAdd(t, c, "* * * * * *", Named("tick", l.job(id, nil)))
		c.Start()
		r := &replica{id: id, cron: c}
		t.Cleanup(func() { r.stop(t) })
		crons = append(crons, c)
		pc.ids, pc.fakes, pc.crons = append(pc.ids, id), append(pc.fakes, fake), append(pc.crons, c)
	}
	for n := 1; n <= 4; n++ {
		pc.tick(l, n, n)
	}
	for _, c := range crons {
		returnsWithin(t, 10*time.Second, "Stop's context", func() { <-c.Stop().Done() })
	}
	l.check(t, time.Second)
	// The claims are in the etcd the environment named.
	resp, err := srv.Client(t).Get(context.Background(), "/baton/jobs/same/tick/last")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Error("no claim of tick in etcd")
	}
}

// TestSameFuncAddedTwiceIsTwoJobs: as in robfig/cron, adding one func twice
// on one spec makes two entries; under coordination each runs once per tick
// cluster-wide, so two replicas run it twice per tick, not once or four times.
func TestSameFuncAddedTwiceIsTwoJobs(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	l := newLedger()
	var calls atomic.Int32
	f := func() { calls.Add(1) }
	var crons []*Cron
	for _, id := range []string{"r0", "r1"} {
		r := opsReplica(t, srv.Client(t), "twice", id, ClaimMode, l, func(c *Cron) {
			for range 2 {
				if _, err := c.AddFunc("* * * * * *", f); err != nil {
					t.Fatal(err)
				}
			}
		})
		crons = append(crons, r.cron)
	}
	var names [2][]string
	for i, c := range crons {
		for _, e := range c.Entries() {
			if e.name != "tick" {
				names[i] = append(names[i], e.name)
			}
		}
		slices.Sort(names[i])
	}
	if len(names[0]) != 2 || names[0][0] == names[0][1] || !slices.Equal(names[0], names[1]) {
		t.Fatalf("derived names %v and %v: want two distinct names, the same in both replicas", names[0], names[1])
	}

	first := runAfter(t, l.ch, time.Time{}, 8*time.Second, "clock")
	last := runAfter(t, l.ch, first.Tick.Add(4*time.Second), 8*time.Second, "clock")
	var wg sync.WaitGroup
	for _, c := range crons {
		wg.Go(func() { <-c.Stop().Done() })
	}
	returnsWithin(t, 10*time.Second, "Stop's contexts", wg.Wait)

	// Every job's state, registered or not.
	ctl, err := NewControl(srv.Client(t), "", "twice")
	if err != nil {
		t.Fatal(err)
	}
	st, err := ctl.status(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	// Every job the cluster knows ran each tick at most once; the two
	// entries are two jobs, so the func ran twice per tick in all.
	var jobs []string
	records := 0
	perTick := map[int64]int{} // by Unix second: the history's times are in UTC
	for _, j := range st.Jobs {
		jobs = append(jobs, j.Name)
		if j.Name == "tick" {
			continue
		}
		records += len(j.History)
		ran := map[int64]bool{}
		for _, rec := range j.History {
			if ran[rec.Tick.Unix()] {
				t.Errorf("%s ran twice for tick %v", j.Name, rec.Tick.Format(time.TimeOnly))
			}
			ran[rec.Tick.Unix()] = true
			perTick[rec.Tick.Unix()]++
		}
	}
	want := append([]string{"tick"}, names[0]...)
	slices.Sort(want)
	if !slices.Equal(jobs, want) { // Status sorts its jobs by name
		t.Errorf("the cluster knows jobs %v, want %v", jobs, want)
	}
	// Ticks well inside the window, clear of the start and the stop.
	for tick := first.Tick.Add(time.Second); tick.Before(last.Tick); tick = tick.Add(time.Second) {
		if n := perTick[tick.Unix()]; n != 2 {
			t.Errorf("the func ran %d times for tick %v across the replicas, want 2", n, tick.Format(time.TimeOnly))
		}
	}
	if n := calls.Load(); n != int32(records) {
		t.Errorf("the func was called %d times, but %d runs were claimed", n, records)
	}
}

// TestJobAddedWhileRunningCanBeOperated: a job added to a running Cron can be
// triggered and paused like one added before Start.
func TestJobAddedWhileRunningCanBeOperated(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := etcdtest.Shared(t)
			clock, late := newLedger(), newLedger()
			r := opsReplica(t, srv.Client(t), "late", "r0", mode, clock, nil)
			runAfter(t, clock.ch, time.Time{}, 8*time.Second, "clock") // scheduling: leading, in leader mode
			mustAdd(t, r.cron, "0 0 0 1 1 *", Named("late", late.job("r0", nil)))
			ctx := context.Background()
			eventually(t, 3*time.Second, func() (bool, string) {
				err := r.cron.Trigger(ctx, "late")
				return err == nil, fmt.Sprintf("Trigger of a job added while running: %v", err)
			})
			if run := runAfter(t, late.ch, time.Time{}, 5*time.Second, "triggered run of late"); !run.Triggered {
				t.Errorf("run %+v not marked as triggered", run)
			}
			if err := r.cron.Pause(ctx, "late"); err != nil {
				t.Errorf("Pause of a job added while running: %v", err)
			}
		})
	}
}

// TestStopThenStartFromTheEnvironmentKeepsWorking: a Cron whose client comes
// from BATON_ETCD_ENDPOINTS can be stopped and started again at once.
func TestStopThenStartFromTheEnvironmentKeepsWorking(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	srv := etcdtest.Shared(t)
	srv.Setenv(t)
	l := newLedger()
	c := New(WithSeconds(), WithName("restart"), WithElection(election.WithIdentity("r"), election.WithTTL(2*time.Second)))
	if _, err := c.AddJob("* * * * * *", Named("tick", l.job("r", nil))); err != nil {
		t.Fatal(err)
	}
	c.Start()
	l.waitTicks(t, 1, 10*time.Second)
	c.Stop()
	c.Start()
	defer func() { <-c.Stop().Done() }()
	n := len(l.snapshot())
	l.waitTicks(t, n+2, 15*time.Second)
	l.check(t, 0)
}

// TestNewLeaderPublishesEverySpec: a leader publishes the specs of all its
// jobs, many to a transaction; a new term writes a publication mark that
// is missing, and rewrites a spec that etcd holds differently (as a replica
// of another version left them).
func TestNewLeaderPublishesEverySpec(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	const jobs = 2*specBatch + 7 // three transactions, the last one short
	spec := func(i int) string { return fmt.Sprintf("%d 0 0 1 1 *", i%60) }
	add := func(c *Cron) {
		for i := range jobs {
			mustAdd(t, c, spec(i), Named(fmt.Sprintf("job-%03d", i), FuncJob(func() {})))
		}
	}
	ctl, err := NewControl(cli, "", "specs")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	published := func() (bool, string) {
		st, err := ctl.Status(ctx)
		if err != nil {
			return false, err.Error()
		}
		for i := range jobs {
			name := fmt.Sprintf("job-%03d", i)
			if j, _ := jobStatus(st, name); j.Spec != spec(i) {
				return false, fmt.Sprintf("%s: spec %q in etcd, want %q", name, j.Spec, spec(i))
			}
		}
		return true, ""
	}
	a := opsReplica(t, cli, "specs", "a", LeaderMode, newLedger(), add)
	eventually(t, 10*time.Second, published)

	// One job has no publication mark (as a replica of an older version
	// leaves it), its spec unchanged: the next leader mends it.
	mark := election.DefaultPrefix + "/jobs/specs/job-050/since"
	if _, err := cli.Delete(ctx, mark); err != nil {
		t.Fatal(err)
	}
	b := opsReplica(t, cli, "specs", "b", LeaderMode, newLedger(), add)
	waitCandidates(t, cli, "specs", 2)
	a.stop(t)
	eventually(t, 10*time.Second, func() (bool, string) {
		resp, err := cli.Get(ctx, mark, clientv3.WithCountOnly())
		return err == nil && resp.Count == 1, fmt.Sprintf("job-050 has no publication mark (%v)", err)
	})
	// One spec in the middle changes behind the leader's back: the next
	// leader rewrites it.
	changed := fmt.Sprintf("%s/jobs/specs/job-%03d/spec", election.DefaultPrefix, specBatch+specBatch/2)
	if _, err := cli.Put(ctx, changed, "@hourly"); err != nil {
		t.Fatal(err)
	}
	opsReplica(t, cli, "specs", "c", LeaderMode, newLedger(), add)
	waitCandidates(t, cli, "specs", 2)
	b.stop(t)
	eventually(t, 10*time.Second, published)
}

// TestALeaderOfLongNamedJobsPublishesEverySpec: publishBatch jobs whose
// names, and their scheduler's, are as long as a name may be, whose specs
// one read could not check within etcd's --max-request-bytes, each have
// their spec, publication mark and registration written by their leader.
func TestALeaderOfLongNamedJobsPublishesEverySpec(t *testing.T) {
	t.Parallel()
	cli := etcdtest.Shared(t).Client(t)
	scheduler := strings.Repeat("s", 200)
	add := func(c *Cron) {
		for i := range publishBatch {
			mustAdd(t, c, "0 0 0 1 1 *", Named(fmt.Sprintf("job-%04d-%s", i, strings.Repeat("x", 191)), FuncJob(func() {})))
		}
	}
	opsReplica(t, cli, scheduler, "a", LeaderMode, newLedger(), add)
	dir := jobkeys.New(election.DefaultPrefix, scheduler).Dir()
	// The publication takes a few seconds, under the race detector beside
	// the package's other tests; a leader whose reads etcd refuses never
	// ends it, and waits out the whole deadline.
	eventually(t, 30*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return false, err.Error()
		}
		var specs, marks, regs int
		for _, kv := range resp.Kvs {
			k := string(kv.Key)
			switch {
			case !strings.HasPrefix(k, dir+"job-"):
			case strings.HasSuffix(k, "/spec"):
				specs++
			case strings.HasSuffix(k, "/since"):
				marks++
			case strings.Contains(k, "/by/"):
				regs++
			}
		}
		return specs == publishBatch && marks == publishBatch && regs == publishBatch,
			fmt.Sprintf("%d specs, %d marks and %d registrations in etcd, want %d each", specs, marks, regs, publishBatch)
	})
}

// TestManyRunsOnOneTickAreAllRecorded: runs that end together are recorded
// many to a transaction; each job's history must still hold each of its
// runs once and in order, and every in-progress marker must be released.
func TestManyRunsOnOneTickAreAllRecorded(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	// More runs a second than two of a write's nested groups, on a
	// machine that runs the whole suite at once.
	const jobs = 2*recordWriteGroup + 5
	type ran struct {
		job  string
		tick time.Time
	}
	runs := make(chan ran, 100*jobs)
	c := New(WithSeconds(), WithEtcd(cli), WithName("many"),
		WithElection(election.WithIdentity("a"), election.WithTTL(2*time.Second)))
	for i := range jobs {
		name := fmt.Sprintf("job-%02d", i)
		var opts []JobOption
		if i%2 == 0 {
			opts = append(opts, WithOverlap(Forbid))
		}
		job := ContextFunc(func(ctx context.Context) error {
			info, _ := InfoFrom(ctx)
			runs <- ran{name, info.Tick}
			return nil
		})
		if _, err := c.AddJob("* * * * * *", Named(name, job, opts...)); err != nil {
			t.Fatal(err)
		}
	}
	c.Start()
	ticks := map[string][]time.Time{}
	deadline := time.After(15 * time.Second)
	for done := 0; done < jobs; {
		select {
		case r := <-runs:
			ticks[r.job] = append(ticks[r.job], r.tick)
			if len(ticks[r.job]) == 3 {
				done++
			}
		case <-deadline:
			t.Fatalf("%d of %d jobs ran three ticks within 15s", done, jobs)
		}
	}
	select {
	case <-c.Stop().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Stop's context not done within 10s")
	}
	for len(runs) > 0 {
		r := <-runs
		ticks[r.job] = append(ticks[r.job], r.tick)
	}

	// Read from the keys: once the Cron has stopped, no live replica
	// registers the jobs, and Status no longer lists them.
	keys := jobkeys.New(election.DefaultPrefix, "many")
	for i := range jobs {
		name := fmt.Sprintf("job-%02d", i)
		resp, err := cli.Get(context.Background(), keys.History(name))
		if err != nil {
			t.Fatal(err)
		}
		var got []time.Time
		if len(resp.Kvs) > 0 {
			for _, h := range parseHistory(resp.Kvs[0].Value) {
				got = append(got, h.Tick)
			}
		}
		want := ticks[name]
		if len(want) > historyLen {
			want = want[len(want)-historyLen:]
		}
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%s: history ticks %v, want the ticks it ran, %v", name, got, want)
		}
	}
	resp, err := cli.Get(context.Background(), election.DefaultPrefix+"/jobs/many/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if strings.Contains(string(kv.Key), "/running/") {
			t.Errorf("marker %s left after Stop", kv.Key)
		}
	}
}
