package cronx

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// startCluster runs the replicas of a job that runs at start, each started
// with a release, in one scheduler.
type startCluster struct {
	t    *testing.T
	cli  *clientv3.Client
	name string
	mode Mode
	runs chan started
	up   map[string]*Cron
	// asked counts the StartAsked events of every replica.
	asked atomic.Int64
}

// start starts replica id of release.
func (sc *startCluster) start(id, release string) {
	sc.t.Helper()
	c := New(withClock(clock.NewFake(t0)), WithLocation(time.UTC), WithLogger(testLogger{sc.t, id}), WithEtcd(sc.cli),
		WithName(sc.name), WithMode(sc.mode), WithRelease(release),
		WithObserver(Observer{OnStartAsked: func(e StartAsked) {
			if e.Job == "migrate" && e.Release == release && e.Instance == id {
				sc.asked.Add(1)
			}
		}}),
		WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
	job := ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		sc.runs <- started{info, ctx}
		return nil
	})
	// A yearly schedule, far from its next tick: only the start runs it.
	mustAdd(sc.t, c, "0 0 1 1 *", Named("migrate", job, WithRunAtStart()))
	c.Start()
	sc.up[id] = c
	sc.t.Cleanup(func() { shutdown(sc.t, c, id) })
	if sc.mode == LeaderMode {
		// Candidates in the order they start, so that the test knows who
		// leads next.
		waitCandidates(sc.t, sc.cli, sc.name, int64(len(sc.up)))
	}
}

// stop stops replica id, which resigns if it leads.
func (sc *startCluster) stop(id string) {
	sc.t.Helper()
	shutdown(sc.t, sc.up[id], id)
	delete(sc.up, id)
}

// settled waits until replica id publishes (leads, in leader mode) and its
// publisher is done with its first round, the one that asks for the run at
// start: its registration of the job is in etcd and nothing is left to
// write.
func (sc *startCluster) settled(id string) {
	sc.t.Helper()
	c := sc.up[id]
	pb := c.coord.specs
	deadline := time.Now().Add(15 * time.Second)
	for {
		if _, ok := c.coord.publishing(); ok {
			resp, err := sc.cli.Get(context.Background(), c.coord.keys.ByDir("migrate"), clientv3.WithPrefix())
			if err != nil {
				sc.t.Fatal(err)
			}
			registered := slices.ContainsFunc(resp.Kvs, func(kv *mvccpb.KeyValue) bool { return string(kv.Value) == id })
			pb.mu.Lock()
			idle := !pb.writing && !pb.all && len(pb.pending) == 0
			pb.mu.Unlock()
			if registered && idle {
				return
			}
		}
		if time.Now().After(deadline) {
			sc.t.Fatalf("%s does not publish, or its publisher is not done, within 15s", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// releases returns the job's started releases and the key's revision.
func (sc *startCluster) releases() ([]string, int64) {
	sc.t.Helper()
	c := sc.anyUp()
	resp, err := sc.cli.Get(context.Background(), c.coord.keys.Started("migrate"))
	if err != nil {
		sc.t.Fatal(err)
	}
	return jobkeys.DecodeStarted(resp.Kvs)
}

func (sc *startCluster) anyUp() *Cron {
	for _, c := range sc.up {
		return c
	}
	sc.t.Fatal("no replica up")
	return nil
}

// ran waits for the run at start of release, by a replica of it.
func (sc *startCluster) ran(release string, of ...string) {
	sc.t.Helper()
	s := waitStart(sc.t, sc.runs, "run at the start of "+release)
	if !s.info.Triggered || !slices.Contains(of, s.info.Instance) {
		sc.t.Fatalf("the run at the start of %s: %+v, want a triggered run on one of %v", release, s.info, of)
	}
}

// none checks that the replica id, once settled, asked for no run: the
// started key is as it was (rev) and no run came.
func (sc *startCluster) none(id string, rev int64, what string) {
	sc.t.Helper()
	sc.settled(id)
	if got, now := sc.releases(); now != rev {
		sc.t.Fatalf("%s: the started key was written again (%v, revision %d, was %d)", what, got, now, rev)
	}
	noStart(sc.t, sc.runs, 100*time.Millisecond, what)
}

// TestRunAtStartOncePerRelease: three replicas of release r1 run the job
// once; one that restarts runs it not again; while r2 rolls out, an r1
// replica that leads does not run it, the first r2 replica to lead does,
// once, and an r1 replica still running that leads after it does not run it
// again; nor do the other r2 replicas.
func TestRunAtStartOncePerRelease(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			srv := etcdtest.Shared(t)
			sc := &startCluster{t: t, cli: srv.Client(t), name: "atstart", mode: mode, runs: make(chan started, 16), up: map[string]*Cron{}}
			claim := mode == ClaimMode
			sc.start("p", "r1")
			sc.settled("p") // p leads: the first to campaign
			sc.start("q", "r1")
			sc.start("r", "r1")
			sc.ran("r1", "p", "q", "r")
			if claim {
				sc.settled("q")
				sc.settled("r")
			}
			got, rev := sc.releases()
			if !slices.Equal(got, []string{"r1"}) {
				t.Fatalf("started %v, want [r1]", got)
			}
			noStart(t, sc.runs, 100*time.Millisecond, "three replicas of r1")
			r2ran := func() {
				t.Helper()
				sc.ran("r2", "s")
				sc.settled("s")
				got, rev = sc.releases()
				if !slices.Equal(got, []string{"r1", "r2"}) {
					t.Fatalf("started %v, want [r1 r2]", got)
				}
			}

			// r2 rolls out: s starts (in claim mode it runs the job at
			// once); p restarts, with r1 still, its candidacy now after
			// s's; q leads, then r, both of r1.
			sc.start("s", "r2")
			if claim {
				r2ran()
			}
			sc.stop("p")
			sc.start("p2", "r1")
			if claim {
				sc.none("p2", rev, "p restarted with r1")
			} else {
				sc.none("q", rev, "the r1 replica that leads once p restarted")
			}
			sc.stop("q")
			if !claim {
				sc.none("r", rev, "the r1 replica that leads during the roll-out")
			}
			sc.stop("r")
			if !claim {
				r2ran() // s leads, before p2, whose candidacy is younger
			}
			// s restarts; p2, of r1 and still running, leads.
			sc.stop("s")
			sc.none("p2", rev, "an r1 replica after r2 ran")
			sc.start("s2", "r2")
			sc.start("u", "r2")
			if claim {
				sc.none("u", rev, "an r2 replica after r2 ran")
			}
			sc.stop("p2")
			sc.none("s2", rev, "an r2 replica after r2 ran")
			until := time.Now().Add(5 * time.Second)
			for sc.asked.Load() < 2 && time.Now().Before(until) {
				time.Sleep(5 * time.Millisecond)
			}
			if n := sc.asked.Load(); n != 2 {
				t.Errorf("%d runs at start told to the observers, want 2", n)
			}
		})
	}
}

// TestRunAtStartRacingReplicasAskOnce: two replicas of a release that read
// the started key alike, before either writes, ask for one run between
// them.
func TestRunAtStartRacingReplicasAskOnce(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	var pbs []*publisher
	for _, id := range []string{"a", "b"} {
		c := New(WithLogger(testLogger{t, id}), WithEtcd(cli), WithName("racing"), WithMode(ClaimMode), WithRelease("r7"),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		mustAdd(t, c, "0 0 1 1 *", Named("migrate", FuncJob(func() {}), WithRunAtStart()))
		c.coord.conn.client = cli
		pbs = append(pbs, c.coord.specs)
	}
	ctx := context.Background()
	var plans [][]startAsk
	for _, pb := range pbs {
		ops, err := pb.planStarts(ctx, []string{"migrate"})
		if err != nil || len(ops) != 1 {
			t.Fatalf("plan: %d ops, %v", len(ops), err)
		}
		plans = append(plans, ops)
	}
	for i, pb := range pbs {
		if err := pb.sendStarts(ctx, plans[i]); err != nil {
			t.Fatal(err)
		}
	}
	k := pbs[0].co.keys
	resp, err := cli.Get(ctx, k.Triggers(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || !strings.Contains(string(resp.Kvs[0].Value), "release r7") {
		t.Fatalf("requests %v, want one, of release r7", resp.Kvs)
	}
	st, err := cli.Get(ctx, k.Started("migrate"))
	if err != nil {
		t.Fatal(err)
	}
	if ran, _ := jobkeys.DecodeStarted(st.Kvs); !slices.Equal(ran, []string{"r7"}) {
		t.Errorf("started %v, want [r7]", ran)
	}
}

// TestRunAtStartNeedsARelease: a coordinated Cron without a release refuses
// a job that runs at start, naming the job and what to set; one without
// etcd takes it.
func TestRunAtStartNeedsARelease(t *testing.T) {
	t.Setenv(releaseEnv, "")
	srv := etcdtest.Shared(t)
	c := New(WithEtcd(srv.Client(t)), WithName("norelease"))
	_, err := c.AddJob("@hourly", Named("migrate", FuncJob(func() {}), WithRunAtStart()))
	if !errors.Is(err, errNoRelease) || !strings.Contains(err.Error(), `job "migrate"`) || !strings.Contains(err.Error(), "RELEASE") {
		t.Errorf("AddJob without a release: %v", err)
	}
	t.Setenv(releaseEnv, "RABC")
	withEnv := New(WithEtcd(srv.Client(t)), WithName("norelease"))
	if _, err := withEnv.AddJob("@hourly", Named("migrate", FuncJob(func() {}), WithRunAtStart())); err != nil || withEnv.coord.release != "RABC" {
		t.Errorf("AddJob with RELEASE set: %v, release %q", err, withEnv.coord.release)
	}
	if _, err := New().AddJob("@hourly", Named("migrate", FuncJob(func() {}), WithRunAtStart())); err != nil {
		t.Errorf("AddJob without etcd: %v", err)
	}
}

// TestRunAtStartIsLeftToItsRelease: a request of the start of release r9
// is left alone by a replica of r1, which runs a trigger asked for after
// it, and runs on the first replica of r9.
func TestRunAtStartIsLeftToItsRelease(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	sc := &startCluster{t: t, cli: srv.Client(t), name: "atstart-r9", mode: ClaimMode, runs: make(chan started, 16), up: map[string]*Cron{}}
	sc.start("a", "r1")
	sc.ran("r1", "a")
	sc.settled("a")
	k := sc.up["a"].coord.keys
	ctx := context.Background()
	r9 := k.Trigger("migrate", triggerID(t0, 1))
	// As a replica of r9 that led for a moment would have asked.
	if _, err := sc.cli.Txn(ctx).Then(clientv3.OpPut(k.Started("migrate"), jobkeys.EncodeStarted([]string{"r1"}, "r9")),
		clientv3.OpPut(r9, jobkeys.EncodeTrigger("the start of release r9", t0, "r9"))).Commit(); err != nil {
		t.Fatal(err)
	}
	if err := sc.up["a"].Trigger(ctx, "migrate"); err != nil {
		t.Fatal(err)
	}
	if s := waitStart(t, sc.runs, "the trigger"); s.info.Instance != "a" {
		t.Fatalf("the trigger ran on %s", s.info.Instance)
	}
	noStart(t, sc.runs, 200*time.Millisecond, "the start of r9 on a replica of r1")
	if resp, err := sc.cli.Get(ctx, r9); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the request of r9: %v, %v; want it left", resp, err)
	}
	sc.start("b", "r9")
	sc.ran("r9", "b")
	sc.settled("b")
	noStart(t, sc.runs, 100*time.Millisecond, "r9 again")
}
