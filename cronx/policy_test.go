package cronx

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// policyCluster is replicas of one coordinated Cron sharing a real etcd,
// each on a fake clock of its own that the test sets alike, or off by the
// replica's skew.
type policyCluster struct {
	t     *testing.T
	cli   *clientv3.Client
	name  string
	ids   []string
	fakes []*clock.Fake
	crons []*Cron
	skews []time.Duration // how far each replica's clock is ahead; nil: none is
}

// stallTTL is the session TTL of the tests that move fake clocks: etcd
// keeps time on the real clock, and a test process that a loaded machine
// does not schedule for a second or two must keep its terms and run
// markers, as a 2s TTL does not (its safe deadline is 1.5s after the last
// keepalive). Leadership changes hands in these tests by Stop, which
// resigns at once, so the TTL costs them no time.
const stallTTL = 10 * time.Second

// newPolicyCluster starts three replicas ("a", "b", "c") at start; add
// registers each replica's jobs before it starts.
func newPolicyCluster(t *testing.T, name string, start time.Time, mode Mode, add func(id string, c *Cron), opts ...Option) *policyCluster {
	t.Helper()
	srv := etcdtest.Shared(t)
	pc := &policyCluster{t: t, cli: srv.Client(t), name: name}
	for _, id := range []string{"a", "b", "c"} {
		fake := clock.NewFake(start)
		c := New(append([]Option{withClock(fake), WithLocation(time.UTC), WithLogger(testLogger{t, id}), WithEtcd(pc.cli),
			WithName(name), WithMode(mode), WithElection(election.WithIdentity(id), election.WithTTL(stallTTL))}, opts...)...)
		add(id, c)
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		pc.ids, pc.fakes, pc.crons = append(pc.ids, id), append(pc.fakes, fake), append(pc.crons, c)
	}
	return pc
}

// ready waits until a replica schedules (every replica in claim mode) and
// every scheduling replica has armed its timer for a tick due by at (on its
// own clock, at plus its skew), the time the test moves the clocks to next.
// A replica that has just become leader sleeps on an idle timer until its
// loop resyncs; moving its clock before then would skip the tick.
func (pc *policyCluster) ready(at time.Time) {
	pc.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := 0
		for i, c := range pc.crons {
			if c.coord.scheduling() {
				if !pc.fakes[i].WaitDueBy(at.Add(pc.skew(i)), time.Until(deadline)) {
					pc.t.Fatalf("%s schedules but armed no timer due by %v within 15s", pc.ids[i], at.Add(pc.skew(i)))
				}
				n++
			}
		}
		if n > 0 && (pc.crons[0].coord.mode == LeaderMode || n == len(pc.crons)) {
			return
		}
		if time.Now().After(deadline) {
			pc.t.Fatal("no replica scheduling within 15s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// set moves every replica's clock to at, plus its skew.
func (pc *policyCluster) set(at time.Time) {
	for i, f := range pc.fakes {
		f.Set(at.Add(pc.skew(i)))
	}
}

// skew returns how far replica i's clock is ahead.
func (pc *policyCluster) skew(i int) time.Duration {
	if pc.skews == nil {
		return 0
	}
	return pc.skews[i]
}

// fake returns the clock of replica id.
func (pc *policyCluster) fake(id string) *clock.Fake {
	for i, x := range pc.ids {
		if x == id {
			return pc.fakes[i]
		}
	}
	pc.t.Fatalf("no replica %q", id)
	return nil
}

// history waits until job's history has n records, and returns it.
func (pc *policyCluster) history(job string, n int) []Record {
	pc.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, err := pc.crons[0].Status(context.Background())
		if err != nil {
			pc.t.Fatal(err)
		}
		for _, j := range st.Jobs {
			if j.Name == job && len(j.History) >= n {
				return j.History
			}
		}
		if time.Now().After(deadline) {
			pc.t.Fatalf("job %q: fewer than %d runs recorded within 15s: %+v", job, n, st.Jobs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// started is one run as a job saw it start.
type started struct {
	info Info
	ctx  context.Context
}

// waitStart waits for a run on ch.
func waitStart(t *testing.T, ch <-chan started, what string) started {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(15 * time.Second):
		t.Fatalf("no %s within 15s", what)
	}
	return started{}
}

// noStart fails if a run arrives on ch within d.
func noStart(t *testing.T, ch <-chan started, d time.Duration, what string) {
	t.Helper()
	select {
	case s := <-ch:
		t.Fatalf("%s: a run of %v started on %s", what, s.info.Tick, s.info.Instance)
	case <-time.After(d):
	}
}

type testLogger struct {
	t  *testing.T
	id string
}

func (l testLogger) Info(msg string, kv ...any) {
	if strings.HasPrefix(msg, "cronx") {
		l.t.Logf("%s: %s %v", l.id, msg, kv)
	}
}
func (l testLogger) Error(err error, msg string, kv ...any) {
	l.t.Logf("%s: %s: %v %v", l.id, msg, err, kv)
}
