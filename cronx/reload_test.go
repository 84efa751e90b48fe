package cronx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// tickCounter counts the runs of each tick, whatever job ran it.
type tickCounter struct {
	mu   sync.Mutex
	runs map[time.Time][]string // tick → the jobs that ran it
	ch   chan time.Time
}

func newTickCounter() *tickCounter {
	return &tickCounter{runs: map[time.Time][]string{}, ch: make(chan time.Time, 1024)}
}

// job is one unnamed function, the same value in every replica, as a
// program's own function would be.
func (tc *tickCounter) job() ContextFunc {
	return func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		tc.mu.Lock()
		tc.runs[info.Tick] = append(tc.runs[info.Tick], info.Job+"@"+info.Instance)
		tc.mu.Unlock()
		tc.ch <- info.Tick
		return nil
	}
}

// names returns the job names of c's entries, sorted.
func entryNames(c *Cron) []string {
	var names []string
	for _, e := range c.Entries() {
		names = append(names, e.name)
	}
	slices.Sort(names)
	return names
}

// TestReloadKeepsOneNamePerJobAcrossReplicas: two replicas in claim mode
// both add one unnamed function twice on one spec (two jobs, as in
// robfig/cron). One replica reloads its jobs — removes every entry and adds
// them again — three times while running. The two replicas still name the
// jobs alike, so each tick runs at most twice (once per job) in the
// cluster, not once per job per replica.
func TestReloadKeepsOneNamePerJobAcrossReplicas(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	tc := newTickCounter()
	f := tc.job()
	var crons []*Cron
	for _, id := range []string{"a", "b"} {
		c := New(WithSeconds(), WithEtcd(srv.Client(t)), WithName("reload"), WithMode(ClaimMode),
			WithElection(election.WithIdentity(id), election.WithTTL(2*time.Second)))
		for range 2 {
			mustAdd(t, c, "* * * * * *", f)
		}
		c.Start()
		r := &replica{id: id, cron: c}
		t.Cleanup(func() { r.stop(t) })
		crons = append(crons, c)
	}
	a, b := crons[0], crons[1]
	receive(t, tc.ch, "a first run")
	for range 3 {
		for _, e := range a.Entries() {
			a.Remove(e.ID)
		}
		for range 2 {
			mustAdd(t, a, "* * * * * *", f)
		}
	}
	if na, nb := entryNames(a), entryNames(b); !slices.Equal(na, nb) {
		t.Fatalf("after reloads, a names its jobs %v and b %v: one job under two names runs twice a tick", na, nb)
	}
	reloaded := time.Now()
	// Four ticks wholly after the reloads.
	for seen := map[time.Time]bool{}; len(seen) < 5; {
		tick := receive(t, tc.ch, "a run after the reloads")
		if tick.After(reloaded) {
			seen[tick] = true
		}
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for tick, jobs := range tc.runs {
		slices.Sort(jobs)
		if len(jobs) > 2 || len(jobs) == 2 && strings.Split(jobs[0], "@")[0] == strings.Split(jobs[1], "@")[0] {
			t.Errorf("tick %v ran %d times: %v", tick.Format(time.TimeOnly), len(jobs), jobs)
		}
	}
}

// TestNameCollisionsAreErrors: a derived name is the copy's number among the
// copies of one function on one spec, so it never depends on what was
// removed; when that name is a Named job's, the unnamed job is refused rather
// than given another number, which another replica could give another job.
func TestNameCollisionsAreErrors(t *testing.T) {
	t.Parallel()
	var n jobNames
	take := func(name, base string) string {
		t.Helper()
		got, err := n.take(name, base)
		if err != nil {
			t.Fatalf("take(%q, %q): %v", name, base, err)
		}
		return got
	}
	if got := take("", "f-1"); got != "f-1" {
		t.Fatalf("first copy named %q", got)
	}
	if got := take("", "f-1"); got != "f-1-2" {
		t.Fatalf("second copy named %q", got)
	}
	for range 5 { // reloads: the first copy's name comes back, never a new number
		n.release("f-1")
		if got := take("", "f-1"); got != "f-1" {
			t.Fatalf("first copy re-added as %q", got)
		}
	}
	take("g-2-2", "") // a Named job that happens to have a copy's name
	take("", "g-2")
	if _, err := n.take("", "g-2"); !errors.Is(err, ErrDuplicateName) || !strings.Contains(err.Error(), `"g-2-2"`) {
		t.Errorf("a copy whose name a Named job holds: %v, want ErrDuplicateName naming \"g-2-2\"", err)
	}
	if _, err := n.take("f-1", ""); !errors.Is(err, ErrDuplicateName) || !strings.Contains(err.Error(), "unnamed") {
		t.Errorf("a Named job with a derived name: %v, want ErrDuplicateName saying the name is an unnamed job's", err)
	}
}

// TestRemoveThenAddSameNameAlwaysWorks: a change is in effect when Remove
// returns, so a job's name can be reused at once, every time.
func TestRemoveThenAddSameNameAlwaysWorks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		opts func(t *testing.T) []Option
	}{
		{"alone", func(t *testing.T) []Option { return nil }},
		{"coordinated", func(t *testing.T) []Option {
			return []Option{WithEtcd(etcdtest.Shared(t).Client(t)), WithName("reuse"), WithMode(ClaimMode)}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(tc.opts(t)...)
			c.Start()
			defer func() { <-c.Stop().Done() }()
			id, err := c.AddJob("0 0 1 1 *", Named("report", FuncJob(func() {})))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2000 {
				c.Remove(id)
				if id, err = c.AddJob("0 0 1 1 *", Named("report", FuncJob(func() {}))); err != nil {
					t.Fatalf("attempt %d: %v", i, err)
				}
			}
			if n := len(c.Entries()); n != 1 {
				t.Fatalf("%d entries, want 1", n)
			}
		})
	}
}

// TestDuplicateNamedJobIsAnErrorAlone: without etcd too, two Named jobs
// with one name are an error, as documented; unnamed jobs stay free to
// repeat, as in robfig/cron.
func TestDuplicateNamedJobIsAnErrorAlone(t *testing.T) {
	t.Parallel()
	c := New()
	f := func() {}
	mustAdd(t, c, "@every 1m", Named("report", FuncJob(f)))
	if _, err := c.AddJob("@every 1h", Named("report", FuncJob(f))); !errors.Is(err, ErrDuplicateName) {
		t.Errorf("second job named report: %v, want ErrDuplicateName", err)
	}
	for range 2 {
		if _, err := c.AddFunc("@every 1m", f); err != nil {
			t.Errorf("an unnamed func added twice: %v", err)
		}
	}
	if n := len(c.Entries()); n != 3 {
		t.Errorf("%d entries, want 3", n)
	}
}

// TestRemovedJobsLeaveNoSpec: the spec of a removed job is deleted, so add
// and remove cycles leave etcd and Status with the jobs the Cron has.
func TestRemovedJobsLeaveNoSpec(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := etcdtest.Shared(t)
			l := newLedger()
			r := opsReplica(t, srv.Client(t), "cycles", "r0", mode, l, nil)
			runAfter(t, l.ch, time.Time{}, 8*time.Second, "tick") // publishing: leading, in leader mode
			for i := range 2000 {
				id, err := r.cron.AddJob("0 0 0 1 1 *", Named(fmt.Sprintf("job-%d", i), FuncJob(func() {})))
				if err != nil {
					t.Fatal(err)
				}
				r.cron.Remove(id)
			}
			mustAdd(t, r.cron, "0 0 0 1 1 *", Named("kept", FuncJob(func() {})))
			ctx := context.Background()
			eventually(t, 10*time.Second, func() (bool, string) {
				resp, err := srv.Client(t).Get(ctx, election.DefaultPrefix+"/jobs/cycles/", clientv3.WithPrefix())
				if err != nil {
					return false, err.Error()
				}
				var specs []string
				for _, kv := range resp.Kvs {
					if strings.HasSuffix(string(kv.Key), "/spec") {
						specs = append(specs, string(kv.Key))
					}
				}
				slices.Sort(specs)
				want := []string{election.DefaultPrefix + "/jobs/cycles/kept/spec", election.DefaultPrefix + "/jobs/cycles/tick/spec"}
				return slices.Equal(specs, want), fmt.Sprintf("%d spec keys in etcd, want the 2 of %v", len(specs), want)
			})
			st, err := r.cron.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var jobs []string
			for _, j := range st.Jobs {
				jobs = append(jobs, j.Name)
			}
			if !slices.Equal(jobs, []string{"kept", "tick"}) {
				t.Errorf("Status lists %d jobs, want kept and tick: %.10v", len(jobs), jobs)
			}
		})
	}
}

// TestJobsAddedInBulkWhileLeadingArePublished: a hundred and fifty jobs
// added at once to a Cron that publishes are written, each with its spec,
// its publication mark and this replica's registration, many to a
// transaction within etcd's limit on operations; removed at once, their
// specs and marks go.
func TestJobsAddedInBulkWhileLeadingArePublished(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	l := newLedger()
	r := opsReplica(t, cli, "bulk", "r0", LeaderMode, l, nil)
	runAfter(t, l.ch, time.Time{}, 8*time.Second, "tick") // leading: publishing
	var ids []EntryID
	for i := range 150 {
		id, err := r.cron.AddJob("0 0 0 1 1 *", Named(fmt.Sprintf("job-%03d", i), FuncJob(func() {})))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	count := func(suffix string) (int, error) {
		resp, err := cli.Get(context.Background(), election.DefaultPrefix+"/jobs/bulk/job-", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			return 0, err
		}
		n := 0
		for _, kv := range resp.Kvs {
			if strings.Contains(string(kv.Key), suffix) {
				n++
			}
		}
		return n, nil
	}
	keysAre := func(want int) func() (bool, string) {
		return func() (bool, string) {
			var got []int
			for _, suffix := range []string{"/spec", "/since", "/by/"} {
				n, err := count(suffix)
				if err != nil {
					return false, err.Error()
				}
				got = append(got, n)
			}
			return slices.Equal(got, []int{want, want, want}), fmt.Sprintf("specs, marks, registrations: %v, want %d each", got, want)
		}
	}
	eventually(t, 10*time.Second, keysAre(150))
	for _, id := range ids {
		r.cron.Remove(id)
	}
	eventually(t, 10*time.Second, keysAre(0))
}

// specsWritten reports whether c has no spec change left to write.
func specsWritten(c *Cron) bool {
	q := c.coord.specs
	q.mu.Lock()
	defer q.mu.Unlock()
	return !q.writing && !q.all && len(q.pending) == 0
}

// TestRemovedThenAddedJobKeepsItsSpec: a Remove and an Add of one name, in
// quick succession, end with the job's spec in etcd, whatever order their
// writes could take.
func TestRemovedThenAddedJobKeepsItsSpec(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	l := newLedger()
	r := opsReplica(t, srv.Client(t), "readd", "r0", ClaimMode, l, nil)
	runAfter(t, l.ch, time.Time{}, 8*time.Second, "tick")
	key := election.DefaultPrefix + "/jobs/readd/report/spec"
	id, err := r.cron.AddJob("0 0 0 1 1 *", Named("report", FuncJob(func() {})))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		r.cron.Remove(id)
		if i%2 == 1 {
			// Let the deletion through now and then, so that the next Add
			// follows a written Remove as well as a queued one.
			eventually(t, 5*time.Second, func() (bool, string) { return specsWritten(r.cron), "spec writes pending" })
		}
		if id, err = r.cron.AddJob("0 0 0 1 1 *", Named("report", FuncJob(func() {}))); err != nil {
			t.Fatal(err)
		}
		eventually(t, 5*time.Second, func() (bool, string) { return specsWritten(r.cron), "spec writes pending" })
		resp, err := srv.Client(t).Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("round %d: the job is in the Cron but its spec is not in etcd", i)
		}
	}
}

// TestReloadWhileAReplaceRunWaitsRunsItsTick: a reload (Remove, then Add
// under the same name and spec) while a Replace job's run of a tick holds
// its claim and waits for the run it replaces to end gives that run up and
// its claim back; the job added fires the tick again, and it runs once.
func TestReloadWhileAReplaceRunWaitsRunsItsTick(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	fake := clock.NewFake(time.Now().Truncate(time.Second).Add(500 * time.Millisecond))
	fc := newFakeCron(t, fake, fake, WithSeconds(), WithEtcd(srv.Client(t)), WithName("reload-replace"), WithMode(ClaimMode))
	release := make(chan struct{})
	var mu sync.Mutex
	var ran []time.Time
	add := func() EntryID {
		t.Helper()
		id, err := fc.AddJob("* * * * * *", Named("report", ContextFunc(func(ctx context.Context) error {
			info, _ := InfoFrom(ctx)
			mu.Lock()
			ran = append(ran, info.Tick)
			first := len(ran) == 1
			mu.Unlock()
			if first {
				<-ctx.Done() // replaced, it takes its time to end
				<-release
			}
			return nil
		}), WithOverlap(Replace)))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	id := add()
	fc.Start()
	first := fc.step(t)
	fc.nextFiring(t)
	eventually(t, 10*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == 1, "the first tick's run has not started"
	})
	second := fc.step(t)
	fc.nextFiring(t)
	eventually(t, 10*time.Second, func() (bool, string) {
		stages := runsIn(fc.Cron)
		return slices.Contains(stages, stageClaimed), fmt.Sprintf("no run waits for the one it replaces: %v", stages)
	})
	fc.Remove(id)
	add()
	if f := fc.nextFiring(t); !f.tick.Equal(second) {
		t.Fatalf("after the reload, fired %v, want the tick whose run it gave up, %v", f.tick, second)
	}
	close(release)
	eventually(t, 10*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == 2, fmt.Sprintf("ran %v, want %v and %v", ran, first, second)
	})
	idleWithin(t, fc.Cron, 10*time.Second, "the runs")
	mu.Lock()
	defer mu.Unlock()
	if !slices.EqualFunc(ran, []time.Time{first, second}, time.Time.Equal) {
		t.Errorf("ran %v, want %v and %v, once each", ran, first, second)
	}
}

// TestReloadAcrossATickMissesNoTick: a job removed just before a tick and
// added again just after it (a reload that straddles the tick) still fires
// that tick, once, and goes on from there; so does an @every job, in step
// with the interval it had.
func TestReloadAcrossATickMissesNoTick(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	for _, tc := range []struct{ spec, name string }{{"* * * * * *", "cron"}, {"@every 2s", "every"}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := clock.NewFake(time.Now().Truncate(time.Second).Add(500 * time.Millisecond))
			fc := newFakeCron(t, fake, fake, WithSeconds(), WithEtcd(srv.Client(t)), WithName("reloadtick-"+tc.name),
				WithMode(ClaimMode), WithMisfire(Skip, 0))
			add := func() EntryID {
				t.Helper()
				id, err := fc.AddJob(tc.spec, Named("report", FuncJob(func() {})))
				if err != nil {
					t.Fatal(err)
				}
				return id
			}
			id := add()
			fc.Start()
			// Claim mode fires once etcd is reached; under Skip a tick
			// that came before is not caught up.
			eventually(t, 15*time.Second, func() (bool, string) { return fc.coord.scheduling(), "not connected to etcd" })
			first := fc.step(t)
			if f := fc.nextFiring(t); !f.tick.Equal(first) {
				t.Fatalf("fired %v, want %v", f.tick, first)
			}
			period := fc.settle(t)[0].Next.Sub(first)
			// Its run ends before the reload, which would fire it again
			// had the removal given it up (TestReloadWhileAReplaceRunWaitsRunsItsTick).
			idleWithin(t, fc.Cron, 10*time.Second, "the first tick's run")
			fake.Set(first.Add(period / 2))
			fc.Remove(id)
			fake.Set(first.Add(period + 300*time.Millisecond)) // the next tick came while the job was out
			add()
			if f := fc.nextFiring(t); !f.tick.Equal(first.Add(period)) {
				t.Fatalf("after the reload, fired %v, want the tick it straddled, %v", f.tick, first.Add(period))
			}
			if next := fc.step(t); !next.Equal(first.Add(2 * period)) {
				t.Fatalf("then due at %v, want %v", next, first.Add(2*period))
			}
			if f := fc.nextFiring(t); !f.tick.Equal(first.Add(2 * period)) {
				t.Fatalf("then fired %v, want %v", f.tick, first.Add(2*period))
			}
		})
	}
}
