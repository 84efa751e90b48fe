package cronx

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// markerPut returns the sequence of the first put in txn, or in the
// transactions nested in it, whose key holds under.
func markerPut(txn *etcdserverpb.TxnRequest, under string) (int64, bool) {
	for _, op := range append(append([]*etcdserverpb.RequestOp{}, txn.Success...), txn.Failure...) {
		if p := op.GetRequestPut(); p != nil {
			if _, leaf, ok := strings.Cut(string(p.Key), under); ok {
				seq, err := strconv.ParseInt(strings.TrimPrefix(leaf, "t"), 10, 64)
				return seq, err == nil
			}
		}
		if nested := op.GetRequestTxn(); nested != nil {
			if seq, ok := markerPut(nested, under); ok {
				return seq, true
			}
		}
	}
	return 0, false
}

// claimCommitted reports whether reply, etcd's to a claim (a single one, a
// batch of one, a trigger's or a buffered tick's), says it committed.
func claimCommitted(reply any) bool {
	resp, _ := reply.(*etcdserverpb.TxnResponse)
	if resp == nil || !resp.Succeeded {
		return false
	}
	if len(resp.Responses) > 0 {
		// A batch: an item's transaction asks whether its key exists, and
		// the transaction within it claims.
		if outer := resp.Responses[0].GetResponseTxn(); outer != nil && len(outer.Responses) > 0 {
			if inner := outer.Responses[0].GetResponseTxn(); inner != nil {
				return inner.Succeeded
			}
		}
	}
	return true
}

// losingClient is a client of sp, through endpoints (sp's member if
// none), that loses etcd's reply to each transaction lose picks, given the
// request and etcd's reply to it (etcdtest.LoseReplies).
func losingClient(t *testing.T, sp *etcdtest.Space, lose func(txn *etcdserverpb.TxnRequest, reply any) bool, endpoints ...string) *clientv3.Client {
	t.Helper()
	cfg := sp.ClientConfig(endpoints...)
	etcdtest.LoseReplies(&cfg, func(_ string, req, reply any) bool {
		txn, ok := req.(*etcdserverpb.TxnRequest)
		return ok && lose(txn, reply)
	})
	raw, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return sp.Within(raw)
}

// losingFirstClient is a losingClient that loses the reply of the first
// committed claim putting a marker under under; lost reports whether it
// has.
func losingFirstClient(t *testing.T, sp *etcdtest.Space, under string) (cli *clientv3.Client, lost func() bool) {
	t.Helper()
	var done atomic.Bool
	cli = losingClient(t, sp, func(txn *etcdserverpb.TxnRequest, reply any) bool {
		if !claimCommitted(reply) {
			return false
		}
		_, ok := markerPut(txn, under)
		return ok && done.CompareAndSwap(false, true)
	})
	return cli, done.Load
}

// startForbid starts a Cron of cli with opts and one Forbid job, slow, of
// spec, each of whose runs reports its Info on the channel returned.
func startForbid(t *testing.T, spec string, opts ...Option) <-chan Info {
	starts, _ := startForbidCron(t, spec, opts...)
	return starts
}

// startForbidCron is startForbid, and the Cron it started.
func startForbidCron(t *testing.T, spec string, opts ...Option) (<-chan Info, *Cron) {
	t.Helper()
	starts := make(chan Info, 64)
	c := New(append([]Option{WithSeconds(), WithElection(election.WithIdentity("a"))}, opts...)...)
	mustAdd(t, c, spec, Named("slow", ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		starts <- info
		return nil
	}), WithOverlap(Forbid)))
	c.Start()
	t.Cleanup(func() { <-c.Stop().Done() })
	return starts, c
}

// awaitLost waits for the first run on starts, arms the loss of a claim's
// reply, and returns the tick of the claim whose reply was lost.
func awaitLost(t *testing.T, starts <-chan Info, arm chan<- struct{}, lost <-chan time.Time) time.Time {
	t.Helper()
	runAfter(t, starts, time.Time{}, 10*time.Second, "first run")
	arm <- struct{}{}
	select {
	case tick := <-lost:
		return tick
	case <-time.After(10 * time.Second):
		t.Fatal("no claim of slow within 10s of the first run")
		return time.Time{}
	}
}

// TestAClaimWhoseReplyWasLostRunsItsTick: etcd commits the claim of a
// Forbid job's tick, its in-progress marker with it, and the reply is lost
// (a member died in between). The replica's next try finds the tick
// claimed and the job busy, by its own claim: the tick runs all the same,
// once, and the job's later ticks run, where the marker, on a lease the
// replica keeps alive for its other runs, would have kept the job busy for
// as long as the replica lived.
func TestAClaimWhoseReplyWasLostRunsItsTick(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			sp := etcdtest.Shared(t)
			arm := make(chan struct{}, 1)
			lost := make(chan time.Time, 1)
			cli := losingClient(t, sp, func(txn *etcdserverpb.TxnRequest, reply any) bool {
				if !claimCommitted(reply) {
					return false
				}
				seq, ok := markerPut(txn, "slow/running/")
				if !ok {
					return false
				}
				select {
				case <-arm:
					lost <- time.Unix(0, seq)
					return true
				default:
					return false
				}
			})
			starts := startForbid(t, "* * * * * *", WithEtcd(cli), WithName("lostreply"), WithMode(mode))
			tick := awaitLost(t, starts, arm, lost)
			got := runAfter(t, starts, tick.Add(-time.Nanosecond), 10*time.Second, "run from the tick whose claim's reply was lost")
			if !got.Tick.Equal(tick) {
				t.Fatalf("the reply of tick %v's claim was lost and the tick did not run: the next run was of %v",
					tick.Format(time.TimeOnly), got.Tick.Format(time.TimeOnly))
			}
			next := runAfter(t, starts, tick, 10*time.Second, "run of a later tick (the job left busy?)")
			t.Logf("tick %v ran though its claim's reply was lost; then %v", tick.Format(time.TimeOnly), next.Tick.Format(time.TimeOnly))
		})
	}
}

// TestATriggersClaimWhoseReplyWasLostRuns: the same for a trigger of a
// Forbid job: the request was taken, by this replica's own claim, and its
// run goes on; the next trigger runs too, where the marker would have kept
// it waiting for a run that never was.
func TestATriggersClaimWhoseReplyWasLostRuns(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			sp := etcdtest.Shared(t)
			cli, lost := losingFirstClient(t, sp, "slow/running/t")
			starts := make(chan Info, 8)
			c := New(WithSeconds(), WithEtcd(cli), WithName("losttrigger"), WithMode(mode),
				WithElection(election.WithIdentity("a")))
			mustAdd(t, c, "0 0 0 1 1 *", Named("slow", ContextFunc(func(ctx context.Context) error {
				info, _ := InfoFrom(ctx)
				starts <- info
				return nil
			}), WithOverlap(Forbid)))
			c.Start()
			t.Cleanup(func() { <-c.Stop().Done() })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i, what := range []string{"the trigger whose claim's reply was lost", "the trigger after it"} {
				eventually(t, 10*time.Second, func() (bool, string) {
					err := c.Trigger(ctx, "slow")
					return err == nil, fmt.Sprint("trigger: ", err)
				})
				select {
				case info := <-starts:
					if !info.Triggered {
						t.Fatalf("run %d: %+v is not a trigger's", i+1, info)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("no run of %s within 10s", what)
				}
			}
			if !lost() {
				t.Fatal("no trigger's claim had its reply lost")
			}
		})
	}
}

// TestABufferedClaimWhoseReplyWasLostRuns: the same for a tick that waited
// in a BufferOne job's buffer: its claim, committed with its reply lost,
// leaves its marker, and the tick runs rather than wait for that marker,
// its own, to go.
func TestABufferedClaimWhoseReplyWasLostRuns(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			sp := etcdtest.Shared(t)
			var arm, lost atomic.Bool
			cli := losingClient(t, sp, func(txn *etcdserverpb.TxnRequest, reply any) bool {
				if len(txn.Success) != 1 || txn.Success[0].GetRequestPut() == nil || !arm.Load() {
					return false
				}
				if !claimCommitted(reply) {
					return false // nothing to lose
				}
				// A buffered tick's claim puts its marker alone.
				_, ok := markerPut(txn, "slow/running/")
				return ok && lost.CompareAndSwap(false, true)
			})
			h := newHeldJob()
			buffered := make(chan TickBuffered, 16)
			c := New(WithSeconds(), WithEtcd(cli), WithName("lostbuffered"), WithMode(mode),
				WithElection(election.WithIdentity("a")),
				WithObserver(Observer{OnTickBuffered: func(e TickBuffered) { buffered <- e }}))
			mustAdd(t, c, "* * * * * *", Named("slow", h.job(), WithOverlap(BufferOne)))
			c.Start()
			t.Cleanup(func() {
				close(h.release)
				<-c.Stop().Done()
			})
			waitStart(t, h.starts, "first run")
			var tick time.Time
			select {
			case e := <-buffered:
				tick = e.Tick
			case <-time.After(10 * time.Second):
				t.Fatal("no tick buffered within 10s of the first run")
			}
			arm.Store(true)
			h.release <- struct{}{}
			got := waitStart(t, h.starts, "run of the buffered tick whose claim's reply was lost")
			if !got.info.Tick.Equal(tick) {
				t.Fatalf("ran %v, want the buffered tick %v", got.info.Tick.Format(time.TimeOnly), tick.Format(time.TimeOnly))
			}
			if !lost.Load() {
				t.Fatal("the buffered tick's claim had no reply lost")
			}
			h.release <- struct{}{}
			next := waitStart(t, h.starts, "run after the buffered tick")
			t.Logf("buffered tick %v ran though its claim's reply was lost; then %v", tick.Format(time.TimeOnly), next.info.Tick.Format(time.TimeOnly))
		})
	}
}

// TestABackfillsClaimWhoseReplyWasLostRuns: the same for a backfilled
// tick: the request moved on to it by this replica's own claim, which
// runs, and the backfill goes on to its next ticks, each run once, in
// order.
func TestABackfillsClaimWhoseReplyWasLostRuns(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			sp := etcdtest.Shared(t)
			cli, lost := losingFirstClient(t, sp, "hourly/running/b")
			bf := newBackfillLedger()
			c := New(WithSeconds(), WithEtcd(cli), WithName("lostbackfill"), WithMode(mode),
				WithElection(election.WithIdentity("a")))
			mustAdd(t, c, "0 0 * * * *", Named("hourly", bf.job("a", 0), WithOverlap(Forbid)))
			c.Start()
			t.Cleanup(func() { <-c.Stop().Done() })
			from, to, ticks := hourlyTicks(3)
			ctx := context.Background()
			eventually(t, 10*time.Second, func() (bool, string) {
				_, err := c.Backfill(ctx, "hourly", from, to, 0)
				return err == nil, fmt.Sprint("backfill: ", err)
			})
			bf.wait(t, len(ticks), 20*time.Second)
			bf.check(t, ticks)
			if !lost() {
				t.Fatal("no backfilled tick's claim had its reply lost")
			}
		})
	}
}

// TestARecoverysClaimWhoseReplyWasLostRuns: the same for the claim that
// runs again a tick whose runner died: committed with its reply lost, the
// tick runs again all the same, once.
func TestARecoverysClaimWhoseReplyWasLostRuns(t *testing.T) {
	t.Parallel()
	sp := etcdtest.Shared(t)
	var lose atomic.Bool
	lose.Store(true)
	cli := losingClient(t, sp, func(txn *etcdserverpb.TxnRequest, reply any) bool {
		if !claimCommitted(reply) {
			return false
		}
		// The recovery's claim: the job's recovered key, and the marker.
		_, ok := markerPut(txn, "hourly/running/")
		return ok && len(txn.Success) == 2 && strings.HasSuffix(string(txn.Success[0].GetRequestPut().GetKey()), "/recovered") &&
			lose.CompareAndSwap(true, false)
	})
	T := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	keys := jobkeys.New(election.DefaultPrefix, "recover-lostreply")
	lostTickState(t, cli, keys, "hourly", "0 0 * * * *", T, 0)
	l := newEventLog()
	var ran tickLedger
	b := New(append(observed(l), WithSeconds(), WithEtcd(cli), WithName("recover-lostreply"), WithMisfire(RunOnce, time.Minute),
		withClock(clock.NewFake(T.Add(20*time.Second))), WithLocation(time.UTC), WithLogger(testLogger{t, "b"}),
		WithElection(election.WithIdentity("b"), election.WithTTL(2*time.Second)))...)
	mustAdd(t, b, "0 0 * * * *", Named("hourly", ran.job("hourly"), WithOverlap(Forbid), WithRecovery(1)))
	b.Start()
	t.Cleanup(func() { shutdown(t, b, "b") })
	waitFor(t, l, 20*time.Second, fmt.Sprintf("run again of %v", T), func(e RunStarted) bool { return e.Tick.Equal(T) && e.Recovered == 1 })
	if lose.Load() {
		t.Fatal("the recovery's claim had no reply lost")
	}
	idleWithin(t, b, 20*time.Second, "b")
}

// TestAClaimWhoseReplyWasLostAsEtcdWentAwayFreesItsJob: the reply of a
// Forbid job's committed claim is lost, and etcd then stops answering the
// replica until the tick's misfire deadline has passed: the run gives up,
// and is reported not run, without waiting for etcd. Once etcd answers
// again, the marker its claim left is released, and the job's later
// ticks run, within the replica's session, which lived through it all;
// and the tick, claimed by that try and never run, is counted not run.
func TestAClaimWhoseReplyWasLostAsEtcdWentAwayFreesItsJob(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			if testing.Short() {
				t.Skip("waits on the wall clock for a misfire deadline to pass; the full tier runs it")
			}
			sp := etcdtest.Shared(t)
			proxy := etcdtest.NewProxy(t, sp.Addr())
			arm := make(chan struct{}, 1)
			lost := make(chan time.Time, 1)
			cli := losingClient(t, sp, func(txn *etcdserverpb.TxnRequest, reply any) bool {
				if !claimCommitted(reply) {
					return false
				}
				seq, ok := markerPut(txn, "slow/running/")
				if !ok {
					return false
				}
				select {
				case <-arm:
					proxy.Blackhole() // and etcd goes away
					lost <- time.Unix(0, seq)
					return true
				default:
					return false
				}
			}, proxy.Endpoint())
			l := newEventLog()
			// A TTL that outlives the outage: the marker's lease lives on.
			starts, c := startForbidCron(t, "* * * * * *", append(observed(l), WithEtcd(cli), WithName("lostreply-out"), WithMode(mode),
				WithMisfire(RunOnce, 2*time.Second), WithElection(election.WithIdentity("a"), election.WithTTL(20*time.Second)))...)
			tick := awaitLost(t, starts, arm, lost)
			waitFor(t, l, 15*time.Second, fmt.Sprintf("tick %v reported not run", tick.Format(time.TimeOnly)), func(e TickNotRun) bool {
				return e.Job == "slow" && e.Tick.Equal(tick) && e.Reason == ReasonEtcdUnavailable
			})
			proxy.Pass()
			next := runAfter(t, starts, tick, 15*time.Second, "run of a later tick once etcd answered (the job left busy?)")
			// Claimed, as its job's last, and never run: counted all the
			// same, where the tally takes a job's last tick for one that ran.
			waitNotRunCount(t, c, "slow", ReasonEtcdUnavailable, 1)
			t.Logf("tick %v given up with its claim's reply lost and etcd away; then %v ran", tick.Format(time.TimeOnly), next.Tick.Format(time.TimeOnly))
		})
	}
}
