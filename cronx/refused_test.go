package cronx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// refusalCase is a leader of an every-second job whose log, at info level,
// and events the test reads while etcd refuses its writes and accepts them
// again.
type refusalCase struct {
	ledger *ledger
	events *eventLog
	log    *lockedBuffer
	cron   *Cron
}

func startRefusalCase(t *testing.T, cli *clientv3.Client) *refusalCase {
	t.Helper()
	rc := &refusalCase{ledger: newLedger(), events: newEventLog(), log: &lockedBuffer{}}
	logger := slog.New(slog.NewTextHandler(rc.log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// A grace of 3 s: a refused tick is reported soon after its deadline.
	r := startReplica(t, cli, "a", rc.ledger, LeaderMode,
		append(observed(rc.events), WithSlog(logger), WithMisfire(RunOnce, 3*time.Second))...)
	rc.cron = r.cron
	waitFor[leadershipGained](t, rc.events, 10*time.Second, "leadership", nil)
	rc.ledger.waitTicks(t, 1, 10*time.Second)
	if !strings.Contains(rc.log.String(), `level=INFO msg="cronx: leading" scheduler=test instance=a`) {
		t.Errorf("leadership gained is not logged at info level:\n%s", rc.log.String())
	}
	return rc
}

// refused checks that etcd's refusal, want, is an error in the log and an
// event within 5 s.
func (rc *refusalCase) refused(t *testing.T, want error) {
	t.Helper()
	r := waitFor[etcdRefused](t, rc.events, 5*time.Second, "etcd's refusal told", nil)
	if !errors.Is(r.Err, want) || r.Scheduler != "test" || r.Instance != "a" {
		t.Errorf("refusal %+v: want %v, of test, by a", r, want)
	}
	line := `level=ERROR msg="cronx: etcd refuses writes; no tick runs until it accepts them" err=`
	if out := rc.log.String(); !strings.Contains(out, line) || !strings.Contains(out, want.Error()) {
		t.Errorf("no error line %q naming %q in the log:\n%s", line, want, out)
	}
}

// notRunRefused checks that a tick kept from running by etcd's refusal,
// want, is reported as refused, in etcd's words, and never as etcd
// unavailable.
func (rc *refusalCase) notRunRefused(t *testing.T, want error) {
	t.Helper()
	e := waitNotRun(t, rc.events, "tick", ReasonEtcdRefused, 10*time.Second)
	if !errors.Is(e.Err, want) {
		t.Errorf("tick not run with %v, want %v", e.Err, want)
	}
	if n := rc.ledger.count(e.Tick); n != 0 {
		t.Errorf("tick %v reported refused ran %d times", e.Tick, n)
	}
	if un := rc.events.notRun("tick", ReasonEtcdUnavailable); len(un) > 0 {
		t.Errorf("a refusal reported as etcd unavailable: %+v", un[0])
	}
}

// accepted checks that etcd accepting writes again is told and logged at
// info level within 5 s, and that ticks run again.
func (rc *refusalCase) accepted(t *testing.T) {
	t.Helper()
	waitFor[etcdAccepted](t, rc.events, 5*time.Second, "etcd accepting writes told", nil)
	if out := rc.log.String(); !strings.Contains(out, `level=INFO msg="cronx: etcd accepts writes again" scheduler=test instance=a`) {
		t.Errorf("etcd accepting writes again is not logged at info level:\n%s", out)
	}
	rc.ledger.waitTicks(t, len(rc.ledger.snapshot())+1, 15*time.Second)
}

// termsLost returns the terms reported lost so far.
func (rc *refusalCase) termsLost() []leadershipLost {
	rc.events.mu.Lock()
	defer rc.events.mu.Unlock()
	var out []leadershipLost
	for _, ev := range rc.events.all {
		if lost, ok := ev.(leadershipLost); ok {
			out = append(out, lost)
		}
	}
	return out
}

// TestNoSpaceIsARefusalSeenAtOnce: etcd out of space (its NOSPACE alarm,
// raised at --quota-backend-bytes) refuses the leader's claims: that is an
// error at the first refusal, not a silence until the misfire deadline, and
// the ticks are not run for etcd_refused; once an operator frees space and
// disarms the alarm, the replica hears it within seconds, though no claim
// was made meanwhile, and runs again.
func TestNoSpaceIsARefusalSeenAtOnce(t *testing.T) {
	t.Parallel()
	srv := etcdtest.StartQuota(t, 2<<20)
	rc := startRefusalCase(t, srv.Client(t))
	srv.Fill(t)
	rc.refused(t, rpctypes.ErrNoSpace)
	rc.notRunRefused(t, rpctypes.ErrNoSpace)
	srv.Free(t)
	rc.accepted(t)
	// Counted in etcd once it takes the count.
	waitNotRunCount(t, rc.cron, "tick", ReasonEtcdRefused, 1)
	// A lease's keepalives are no writes: the term outlived it all.
	for _, lost := range rc.termsLost() {
		t.Errorf("the term was lost while etcd was out of space: %v", lost.Err)
	}
	<-rc.cron.Stop().Done()
	if out := rc.log.String(); !strings.Contains(out, `level=INFO msg="cronx: no longer leading: stopped" scheduler=test instance=a`) {
		t.Errorf("the term ended by Stop is not logged at info level:\n%s", out)
	}
}

// appEtcd is an etcd with authentication on, where user "app" has role
// "app", which may read and write under /baton/.
type appEtcd struct {
	t          *testing.T
	admin, app *clientv3.Client
}

func startAppEtcd(t *testing.T) *appEtcd {
	t.Helper()
	srv := etcdtest.Start(t)
	a := &appEtcd{t: t}
	a.admin = srv.EnableAuth(t, "root-secret",
		etcdtest.User{Name: "app", Password: "app-secret", Prefix: "/baton/", Perm: clientv3.PermissionType(clientv3.PermReadWrite)})
	a.app = srv.ClientAs(t, "app", "app-secret")
	return a
}

func (a *appEtcd) must(_ any, err error) {
	a.t.Helper()
	if err != nil {
		a.t.Fatal(err)
	}
}

// grant sets role app's permission on /baton/: PermRead takes its write
// permission away, PermReadWrite gives it back.
func (a *appEtcd) grant(perm clientv3.PermissionType, cli *clientv3.Client) {
	a.t.Helper()
	if cli == nil {
		cli = a.admin
	}
	a.must(cli.RoleGrantPermission(context.Background(), "app", "/baton/", clientv3.GetPrefixRangeEnd("/baton/"), perm))
}

// TestRevokedWritePermissionIsARefusal: the role of the replica's user
// loses its write permission on the prefix and keeps its read: every claim
// is refused, in etcd's words (permission denied), and so are the lease's
// keepalives, so the term ends; once the permission is granted again, the
// replica hears it within seconds, leads again and runs.
func TestRevokedWritePermissionIsARefusal(t *testing.T) {
	t.Parallel()
	a := startAppEtcd(t)
	rc := startRefusalCase(t, a.app)
	a.grant(clientv3.PermissionType(clientv3.PermRead), nil)
	rc.refused(t, rpctypes.ErrPermissionDenied)
	// etcd from 3.5 on refuses the keepalives of a lease whose keys the
	// user may not write: the term ends, and says why, at info level.
	lost := waitFor[leadershipLost](t, rc.events, 10*time.Second, "the term lost", nil)
	if !errors.Is(lost.Err, rpctypes.ErrPermissionDenied) {
		t.Errorf("term lost with %v, want it to name %v", lost.Err, rpctypes.ErrPermissionDenied)
	}
	if out := rc.log.String(); !strings.Contains(out, `level=INFO msg="cronx: no longer leading" scheduler=test instance=a`) ||
		!strings.Contains(out, "the last keepalive: etcdserver: permission denied") {
		t.Errorf("the lost term is not logged at info level with etcd's words:\n%s", out)
	}
	a.grant(clientv3.PermissionType(clientv3.PermReadWrite), nil)
	rc.accepted(t) // ticks run: a leads again
}

// TestRevokedPermissionSeenByKeepalives: a leader with no tick due for a
// year makes no claim, but etcd refusing its lease's keepalives ends its
// term, and that is a refusal all the same.
func TestRevokedPermissionSeenByKeepalives(t *testing.T) {
	t.Parallel()
	a := startAppEtcd(t)
	ev := newEventLog()
	c := New(append([]Option{WithSeconds(), WithEtcd(a.app), WithName("test"), WithLogger(DiscardLogger),
		WithElection(election.WithIdentity("a"), election.WithTTL(2*time.Second))}, observed(ev)...)...)
	if _, err := c.AddJob("0 0 0 1 1 *", Named("yearly", FuncJob(func() {}))); err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
	waitFor[leadershipGained](t, ev, 10*time.Second, "leadership", nil)
	a.grant(clientv3.PermissionType(clientv3.PermRead), nil)
	r := waitFor[etcdRefused](t, ev, 10*time.Second, "etcd's refusal told", nil)
	if !errors.Is(r.Err, rpctypes.ErrPermissionDenied) {
		t.Errorf("refusal %v, want %v", r.Err, rpctypes.ErrPermissionDenied)
	}
	a.grant(clientv3.PermissionType(clientv3.PermReadWrite), nil)
	waitFor[etcdAccepted](t, ev, 5*time.Second, "etcd accepting writes told", nil)
}

// TestRefusalProbeHearsEtcdAcceptAgain: once a claim was refused, the
// replica asks etcd every second whether it accepts writes again, so it
// hears it without a claim (the next tick may be an hour away); the probe
// ends with the Cron.
func TestRefusalProbeHearsEtcdAcceptAgain(t *testing.T) {
	t.Parallel()
	srv := etcdtest.StartQuota(t, 2<<20)
	cli := srv.Client(t)
	ev := newEventLog()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var runs jobWaiter
	rf := &refusals{name: "test", identity: "a", probeKey: "/baton/jobs/test/",
		client: func() *clientv3.Client { return cli }, ctx: func() context.Context { return ctx },
		now: time.Now, runs: &runs, logger: DiscardLogger, obs: observers{newObserverQueue(ev.observer())}}
	srv.Fill(t)
	_, err := cli.Put(ctx, "/baton/jobs/test/tick/last", "1")
	if !rf.refused(err) {
		t.Fatalf("a put refused with %v is not a refusal", err)
	}
	waitFor[etcdRefused](t, ev, 5*time.Second, "the refusal told", nil)
	srv.Free(t)
	waitFor[etcdAccepted](t, ev, 5*time.Second, "etcd accepting writes told, with no claim made", nil)
	cancel()
	select {
	case <-runs.idle().Done():
	case <-time.After(5 * time.Second):
		t.Error("the probe outlived its context")
	}
}

// TestWhatIsARefusal: etcd's refusals are told from its silences, and only
// those a write that changes nothing can tell the end of are probed.
func TestWhatIsARefusal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err     error
		refusal error
		probe   bool
	}{
		{fmt.Errorf("election: claim k seq 1: %w", rpctypes.ErrNoSpace), rpctypes.ErrNoSpace, true},
		{rpctypes.ErrPermissionDenied, rpctypes.ErrPermissionDenied, true},
		{rpctypes.ErrCorrupt, rpctypes.ErrCorrupt, true},
		{fmt.Errorf("claim 30 items: %w", rpctypes.ErrRequestTooLarge), rpctypes.ErrRequestTooLarge, false},
		{rpctypes.ErrTooManyOps, rpctypes.ErrTooManyOps, false},
		// The client's own limit (MaxCallSendMsgSize), above an etcd whose
		// --max-request-bytes is larger.
		{status.Error(codes.ResourceExhausted, "trying to send message larger than max (2100000 vs. 2097152)"), rpctypes.ErrRequestTooLarge, false},
		{status.Error(codes.ResourceExhausted, "etcdserver: too many requests"), nil, false},
		{rpctypes.ErrTimeout, nil, false},
		{rpctypes.ErrNoLeader, nil, false},
		{rpctypes.ErrTooManyRequests, nil, false},
		{context.DeadlineExceeded, nil, false},
		{nil, nil, false},
	} {
		refusal, probe := etcdRefusal(tc.err)
		if refusal != tc.refusal || probe != tc.probe {
			t.Errorf("etcdRefusal(%v) = %v, %v; want %v, %v", tc.err, refusal, probe, tc.refusal, tc.probe)
		}
	}
}
