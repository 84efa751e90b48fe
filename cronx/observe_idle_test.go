package cronx

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// rpcCount counts the gRPC calls a client makes, by method.
type rpcCount struct {
	mu    sync.Mutex
	calls map[string]int
	// notRun counts the requests that name a notrun key.
	notRun int
}

func (c *rpcCount) add(method string, req any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[method]++
	if req != nil && strings.Contains(fmt.Sprint(req), "/notrun") {
		c.notRun++
	}
}

func (c *rpcCount) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]int{}
	for k, v := range c.calls {
		m[k] = v
	}
	return m
}

// countedClient is a client of srv whose calls are counted: a member of the
// test's own, with no auth, whose clients make no call but the test's.
func countedClient(t *testing.T, srv *etcdtest.Member) (*clientv3.Client, *rpcCount) {
	c := &rpcCount{calls: map[string]int{}}
	return etcdtest.CountingClient(t, srv.Endpoint(), c.add), c
}

// TestIdleObservedFollowerSendsOnlyKeepalives: with an observer on, and
// while the leader reports and counts a paused job's ticks every second, a
// follower sends etcd its lease keepalives and nothing else: observing, and
// watching for an emptied etcd, cost a follower no request.
func TestIdleObservedFollowerSendsOnlyKeepalives(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	// The follower's session is one a loaded machine does not lapse: a
	// lapse renews it, and its requests are not an idle follower's.
	const settle, idle, ttl = 2 * time.Second, 6 * time.Second, stallTTL
	srv := etcdtest.Start(t)
	l := newLedger()
	lev := newEventLog()
	leader := startReplica(t, srv.Client(t), "leader", l, LeaderMode, append(observed(lev), func(c *Cron) {
		mustAdd(t, c, "* * * * * *", Named("held", ContextFunc(func(context.Context) error { return nil })))
	}, WithElection(election.WithTTL(stallTTL)))...) // a leader a loaded machine does not lose
	waitFor[leadershipGained](t, lev, 10*time.Second, "leadership", nil)
	eventually(t, 10*time.Second, func() (bool, string) { // once the leader has published it
		err := leader.cron.Pause(context.Background(), "held")
		return err == nil, fmt.Sprint(err)
	})

	cli, counter := countedClient(t, srv)
	fev := newEventLog()
	startReplica(t, cli, "follower", l, LeaderMode, append(observed(fev), func(c *Cron) {
		mustAdd(t, c, "* * * * * *", Named("held", ContextFunc(func(context.Context) error { return nil })))
	}, WithElection(election.WithTTL(ttl)))...)
	waitNotRun(t, lev, "held", ReasonPaused, 10*time.Second)
	time.Sleep(settle) // the follower queues and takes etcd's measure
	before := counter.snapshot()
	time.Sleep(idle) // measuring a rate over a period needs the period to pass
	after := counter.snapshot()
	waitNotRunCount(t, leader.cron, "held", ReasonPaused, 1) // the leader did report and count

	for method, n := range after {
		d := n - before[method]
		switch {
		case d == 0:
		case strings.HasSuffix(method, "/LeaseKeepAlive"):
			if max := int(idle/(ttl/3)) + 2; d > max {
				t.Errorf("idle follower sent %d keepalives in %v, want at most %d", d, idle, max)
			}
		default:
			t.Errorf("idle follower called %s %d times", method, d)
		}
	}
	if evs := fev.notRun("held", ReasonPaused); len(evs) != 0 {
		t.Errorf("the follower reported %d ticks not run", len(evs))
	}
}

// TestTicksThatRunCostNoNotRunRequest: with an observer on, a leader whose
// ticks all run sends etcd no request about ticks not run, and once a job
// is paused it does.
func TestTicksThatRunCostNoNotRunRequest(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cli, counter := countedClient(t, srv)
	l := newLedger()
	ev := newEventLog()
	r := startReplica(t, cli, "a", l, LeaderMode, observed(ev)...)
	l.waitTicks(t, 4, 10*time.Second)
	counter.mu.Lock()
	n := counter.notRun
	counter.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d requests about ticks not run while every tick ran", n)
	}
	// The same client does send them once a tick is not run: the count
	// above can see them.
	eventually(t, 10*time.Second, func() (bool, string) { // once the job's spec is published
		err := r.cron.Pause(context.Background(), "tick")
		return err == nil, fmt.Sprint(err)
	})
	waitNotRunCount(t, r.cron, "tick", ReasonPaused, 1)
	counter.mu.Lock()
	defer counter.mu.Unlock()
	if counter.notRun == 0 {
		t.Error("no request about ticks not run seen after a paused tick; the count cannot see them")
	}
}
