package cronx

import (
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestCrashGapIsReportedAsNoLeader: the leader is cut off from etcd, as by
// a crash; until its lease lapses nobody leads. The successor reports the
// ticks of that gap, but the one it catches up, as no leader, none of them
// ran, and Status counts them. The deposed leader reports its term and its
// session lost.
func TestCrashGapIsReportedAsNoLeader(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	l := newLedger()
	ea, eb := newEventLog(), newEventLog()
	// a's lease outlives it by at least 2⅔ s, so that more ticks fall in
	// the gap than the one b catches up.
	startReplica(t, srv.NewClient(t, proxy.Endpoint()), "a", l, LeaderMode,
		append(observed(ea), WithElection(election.WithTTL(4*time.Second)))...)
	waitFor[leadershipGained](t, ea, 10*time.Second, "leadership of a", nil)
	b := startReplica(t, srv.Client(t), "b", l, LeaderMode, observed(eb)...)
	l.waitTicks(t, 2, 10*time.Second)

	proxy.Blackhole()
	lost, s := waitLost(t, ea, 10*time.Second, "a")
	if lost.Err == nil {
		t.Error("a's lost term has no cause")
	}
	if !errors.Is(s.Err, election.ErrSessionExpired) {
		t.Errorf("a's session lost with %v, want %v", s.Err, election.ErrSessionExpired)
	}
	waitFor[leadershipGained](t, eb, 10*time.Second, "leadership of b", nil)
	gap := waitNotRun(t, eb, "tick", ReasonNoLeader, 10*time.Second)
	l.waitTicks(t, len(l.snapshot())+1, 10*time.Second) // b schedules
	for _, e := range eb.notRun("tick", ReasonNoLeader) {
		if n := l.count(e.Tick); n != 0 {
			t.Errorf("tick %v reported as fallen while nobody led ran %d times", e.Tick, n)
		}
	}
	if gap.Instance != "b" || gap.Scheduler != "test" {
		t.Errorf("gap reported by %q of %q, want b of test", gap.Instance, gap.Scheduler)
	}
	waitNotRunCount(t, b.cron, "tick", ReasonNoLeader, len(eb.notRun("tick", ReasonNoLeader)))
}

// TestCrashGapIsReportedOverASlowEtcd: the successor of a leader cut off
// reaches etcd only a second and more a round trip (600 ms each way), as a
// loaded etcd answers; it still reports the ticks of the gap, which its
// term does not wait for.
func TestCrashGapIsReportedOverASlowEtcd(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	pa, pb := etcdtest.NewProxy(t, srv.Addr()), etcdtest.NewProxy(t, srv.Addr())
	l := newLedger()
	ea, eb := newEventLog(), newEventLog()
	startReplica(t, srv.NewClient(t, pa.Endpoint()), "a", l, LeaderMode,
		append(observed(ea), WithName("slowgap"), WithElection(election.WithTTL(4*time.Second)))...)
	waitFor[leadershipGained](t, ea, 10*time.Second, "leadership of a", nil)
	startReplica(t, srv.NewClient(t, pb.Endpoint()), "b", l, LeaderMode,
		append(observed(eb), WithName("slowgap"), WithElection(election.WithTTL(stallTTL)))...)
	waitCandidates(t, srv.Client(t), "slowgap", 2)
	pb.Delay(600 * time.Millisecond)
	pa.Blackhole()
	waitFor[leadershipGained](t, eb, 30*time.Second, "leadership of b", nil)
	waitNotRun(t, eb, "tick", ReasonNoLeader, 20*time.Second)
}

// TestLostSessionIsReportedAndRegained: a lone leader loses etcd for longer
// than its TTL, then reaches it again: it reports its session and term
// lost, then its session regained and a new term.
func TestLostSessionIsReportedAndRegained(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	l := newLedger()
	ev := newEventLog()
	startReplica(t, srv.NewClient(t, proxy.Endpoint()), "a", l, LeaderMode, observed(ev)...)
	waitFor[leadershipGained](t, ev, 10*time.Second, "leadership", nil)
	l.waitTicks(t, 1, 10*time.Second)
	proxy.Blackhole()
	// etcd comes back only once the term is lost too, or it would go on.
	waitLost(t, ev, 10*time.Second, "a")
	proxy.Pass()
	// Both come once etcd answers the campaign, which backs off by up to
	// the TTL between attempts while etcd is out.
	waitFor[sessionRegained](t, ev, 20*time.Second, "the session regained", nil)
	waitFor[leadershipGained](t, ev, 20*time.Second, "leadership again", nil)
}

// TestEtcdOutageTicksAreReportedUnavailable: a leader whose term outlasts
// an outage of etcd cannot claim the ticks of the outage before their
// misfire deadline (Skip): it reports them as etcd unavailable, and counts
// them once etcd answers again.
func TestEtcdOutageTicksAreReportedUnavailable(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	l := newLedger()
	ev := newEventLog()
	r := startReplica(t, srv.NewClient(t, proxy.Endpoint()), "a", l, LeaderMode,
		append(observed(ev), WithMisfire(Skip, 0), WithElection(election.WithTTL(30*time.Second)))...)
	waitFor[leadershipGained](t, ev, 10*time.Second, "leadership", nil)
	l.waitTicks(t, 1, 10*time.Second)
	proxy.Blackhole()
	e := waitNotRun(t, ev, "tick", ReasonEtcdUnavailable, 15*time.Second)
	proxy.Pass()
	if e.Err == nil {
		t.Error("a tick not run for etcd unavailable carries no error")
	}
	if n := l.count(e.Tick); n != 0 {
		t.Errorf("tick %v reported as not run ran %d times", e.Tick, n)
	}
	waitNotRunCount(t, r.cron, "tick", ReasonEtcdUnavailable, 1)
}

// TestClaimModeOutageReportsOvertakenTicks: in claim mode, ticks whose
// claims wait out an outage give way to the latest one when etcd is back:
// they are reported as overtaken.
func TestClaimModeOutageReportsOvertakenTicks(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	l := newLedger()
	ev := newEventLog()
	startReplica(t, srv.NewClient(t, proxy.Endpoint()), "a", l, ClaimMode, observed(ev)...)
	l.waitTicks(t, 1, 10*time.Second)
	proxy.Blackhole()
	time.Sleep(3 * time.Second) // ticks come due while etcd is out
	proxy.Pass()
	e := waitNotRun(t, ev, "tick", ReasonOvertaken, 15*time.Second)
	if n := l.count(e.Tick); n != 0 {
		t.Errorf("overtaken tick %v ran %d times", e.Tick, n)
	}
}

// TestEtcdFoundEmptyIsReported: etcd that comes back without its data is
// reported to the observers.
func TestEtcdFoundEmptyIsReported(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	l := newLedger()
	ev := newEventLog()
	startReplica(t, srv.Client(t), "a", l, LeaderMode, observed(ev)...)
	l.waitTicks(t, 1, 10*time.Second)
	srv.Wipe(t)
	e := waitFor[EtcdEmpty](t, ev, 20*time.Second, "etcd found empty", nil)
	if e.Why == "" || e.Instance != "a" {
		t.Errorf("EtcdEmpty %+v: want a reason, from a", e)
	}
}
