package cronx

import (
	"context"
	"errors"
	"log"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

// authEtcd starts etcd with auth on, and a user baton whose password is pw.
func authEtcd(t *testing.T) *etcdtest.Member {
	t.Helper()
	srv := etcdtest.Start(t)
	root := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	steps := []func() error{
		func() error { _, err := root.UserAdd(ctx, "root", "rootpw"); return err },
		func() error { _, err := root.RoleAdd(ctx, "root"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := root.UserAdd(ctx, "baton", "pw"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "baton", "root"); return err },
		func() error { _, err := root.AuthEnable(ctx); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("enable auth: %v", err)
		}
	}
	return srv
}

// logLines collects a Cron's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) Info(msg string, kv ...any) { l.add("INFO " + msg) }
func (l *logLines) Error(err error, msg string, kv ...any) {
	l.add("ERROR " + msg + ": " + err.Error())
}
func (l *logLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}
func (l *logLines) matching(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			out = append(out, s)
		}
	}
	return out
}

// TestStartBeforeEtcdWithCredentialsSchedulesOnceItAnswers: a Cron
// configured from the environment, with credentials (so its client must log
// in as it connects), starts while etcd does not answer. It keeps trying,
// logs why it cannot connect, reports etcd unreachable, and runs its jobs
// within seconds of etcd answering.
func TestStartBeforeEtcdWithCredentialsSchedulesOnceItAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	if !inOwnProcess(t) {
		return
	}
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			srv := authEtcd(t)
			proxy := etcdtest.NewProxy(t, srv.Addr())
			proxy.Retarget(strings.TrimPrefix(closedEndpoint(t), "http://")) // connections refused: etcd not up yet
			t.Setenv("BATON_ETCD_ENDPOINTS", proxy.Endpoint())
			t.Setenv("BATON_ETCD_USERNAME", "baton")
			t.Setenv("BATON_ETCD_PASSWORD", "pw")
			logs := &logLines{}
			l := newLedger()
			c := New(WithSeconds(), WithName("late"), WithMode(mode), WithLogger(logs),
				WithElection(election.WithIdentity("r"), election.WithTTL(2*time.Second)))
			mustAdd(t, c, "* * * * * *", Named("tick", l.job("r", nil)))
			c.Start()
			r := &replica{id: "r", cron: c}
			t.Cleanup(func() { r.stop(t) })

			eventually(t, 15*time.Second, func() (bool, string) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_, err := c.Status(ctx)
				return errors.Is(err, ErrEtcdUnreachable) && !errors.Is(err, ErrNotCoordinated),
					"Status with etcd down: " + errString(err) + "; want ErrEtcdUnreachable"
			})
			eventually(t, 15*time.Second, func() (bool, string) {
				return len(logs.matching("ERROR cronx: cannot reach etcd")) > 0, "no log line says etcd cannot be reached"
			})
			if len(l.snapshot()) != 0 {
				t.Fatal("a job ran before etcd answered")
			}
			// Not a round number of attempts: the next one is under way.
			time.Sleep(1500 * time.Millisecond)

			proxy.Retarget(srv.Addr())
			answered := time.Now()
			l.waitTicks(t, 1, 10*time.Second)
			t.Logf("first run %v after etcd answered", time.Since(answered).Round(time.Millisecond))
			if d := time.Since(answered); d > 8*time.Second {
				t.Errorf("the first run came %v after etcd answered", d.Round(time.Millisecond))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := c.Status(ctx); err != nil {
				t.Errorf("Status once etcd answers: %v", err)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// TestStatusOfACronFromTheEnvironment: a Cron whose client comes from the
// environment answers Status before Start, after Stop, and at once after a
// Stop and a Start — never "not coordinated", never from a client being
// closed.
func TestStatusOfACronFromTheEnvironment(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	srv := etcdtest.Shared(t)
	srv.Setenv(t)
	l := newLedger()
	c := New(WithSeconds(), WithName("envstatus"), WithElection(election.WithIdentity("r"), election.WithTTL(2*time.Second)))
	mustAdd(t, c, "* * * * * *", Named("tick", l.job("r", nil)))
	status := func(when string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		st, err := c.Status(ctx)
		if err != nil {
			t.Fatalf("Status %s: %v", when, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Status %s took %v", when, d.Round(time.Millisecond))
		}
		if st.Scheduler != "envstatus" {
			t.Errorf("Status %s: scheduler %q", when, st.Scheduler)
		}
	}
	status("before Start")
	c.Start()
	l.waitTicks(t, 1, 10*time.Second)
	status("while running")
	c.Stop()
	status("after Stop")
	c.Start()
	// While the last run's client closes, and after.
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		status("right after Stop and Start")
	}
	n := len(l.snapshot())
	l.waitTicks(t, n+1, 10*time.Second)
	status("running again")
	returnsWithin(t, 10*time.Second, "Stop's context", func() { <-c.Stop().Done() })
}

// TestClaimModeStopDoesNotWaitForAResignation: claim mode elects no leader,
// so Stop returns at once and says nothing about resigning — with etcd up,
// and with etcd down while the Cron tries to log in to it.
func TestClaimModeStopDoesNotWaitForAResignation(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	cases := []struct {
		name string
		opts func(t *testing.T) []Option
	}{
		{"etcd up", func(t *testing.T) []Option {
			return []Option{WithEtcd(etcdtest.Shared(t).Client(t))}
		}},
		{"etcd down, credentials", func(t *testing.T) []Option {
			t.Setenv("BATON_ETCD_ENDPOINTS", closedEndpoint(t))
			t.Setenv("BATON_ETCD_USERNAME", "baton")
			t.Setenv("BATON_ETCD_PASSWORD", "pw")
			return nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logLines{}
			ran := make(chan Info, 16)
			c := New(append(tc.opts(t), WithSeconds(), WithName("claimstop"), WithMode(ClaimMode), WithLogger(logs),
				WithElection(election.WithIdentity("r"), election.WithTTL(2*time.Second)))...)
			mustAdd(t, c, "* * * * * *", Named("tick", ContextFunc(func(ctx context.Context) error {
				info, _ := InfoFrom(ctx)
				ran <- info
				return nil
			})))
			c.Start()
			select {
			case <-ran:
			case <-time.After(1500 * time.Millisecond): // etcd down: nothing runs
			}
			start := time.Now()
			done := c.Stop()
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Errorf("Stop took %v", d.Round(time.Millisecond))
			}
			returnsWithin(t, 10*time.Second, "Stop's context", func() { <-done.Done() })
			if lines := logs.matching("resignation"); len(lines) > 0 {
				t.Errorf("claim mode's Stop logged %q", lines)
			}
		})
	}
}

// TestNilScheduleOrJobIsAnError: Schedule with a nil schedule or job logs
// an error naming it and returns ID 0, alone and coordinated, where it used
// to panic in the caller (or, for a nil job, crash the program at its first
// run).
func TestNilScheduleOrJobIsAnError(t *testing.T) {
	t.Parallel()
	cli := etcdtest.NewClient(t, closedEndpoint(t))
	for _, tc := range []struct {
		name     string
		opts     []Option
		schedule Schedule
		job      Job
		want     string
	}{
		{"nil schedule", nil, nil, FuncJob(func() {}), "schedule is nil"},
		{"nil schedule, coordinated", []Option{WithEtcd(cli), WithName("nil1")}, nil, FuncJob(func() {}), "schedule is nil"},
		{"nil job", nil, Every(time.Second), nil, "job for every 1s is nil"},
		{"nil job, coordinated", []Option{WithEtcd(cli), WithName("nil2")}, Every(time.Second), nil, "job for every 1s is nil"},
		{"nil func, coordinated", []Option{WithEtcd(cli), WithName("nil3")}, Every(time.Second), FuncJob(nil), "nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logLines{}
			c := New(append([]Option{WithLogger(logs)}, tc.opts...)...)
			var id EntryID
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panic: %v", p)
					}
				}()
				id = c.Schedule(tc.schedule, tc.job)
			}()
			if id != 0 || len(c.Entries()) != 0 {
				t.Errorf("Schedule returned %d with %d entries, want 0 and none", id, len(c.Entries()))
			}
			if lines := logs.matching(tc.want); len(lines) != 1 {
				t.Errorf("log lines %q, want one error saying %q", logs.lines, tc.want)
			}
		})
	}
}

// TestUnansweredEndpointIsLoggedAndReported: BATON_ETCD_ENDPOINTS names an
// endpoint that accepts connections and answers nothing (a wrong address
// behind a firewall). The Cron's own Logger, robfig's or slog, says within
// the dial timeout that etcd does not answer, and that the Cron
// coordinates through etcd; Status reports ErrEtcdUnreachable.
func TestUnansweredEndpointIsLoggedAndReported(t *testing.T) {
	if !inOwnProcess(t) {
		return
	}
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	proxy.Blackhole()
	t.Setenv("BATON_ETCD_ENDPOINTS", proxy.Endpoint())
	cases := []struct {
		name string
		opt  func(w *lockedBuffer) Option
	}{
		{"robfig", func(w *lockedBuffer) Option { return WithLogger(VerbosePrintfLogger(log.New(w, "", 0))) }},
		{"slog", func(w *lockedBuffer) Option { return WithSlog(slog.New(slog.NewTextHandler(w, nil))) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logs := &lockedBuffer{}
			c := New(WithSeconds(), WithName("unanswered"+tc.name), tc.opt(logs))
			mustAdd(t, c, "* * * * * *", Named("tick", FuncJob(func() {})))
			c.Start()
			t.Cleanup(func() { <-c.Stop().Done() })
			if !strings.Contains(logs.String(), "coordinating through etcd") {
				t.Errorf("the Cron's Logger does not say that it coordinates through etcd; it logged:\n%s", logs.String())
			}
			eventually(t, election.DefaultDialTimeout+5*time.Second, func() (bool, string) {
				return strings.Contains(logs.String(), "cannot reach etcd"),
					"nothing logged through the Cron's Logger about an etcd that does not answer; it logged:\n" + logs.String()
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := c.Status(ctx); !errors.Is(err, ErrEtcdUnreachable) {
				t.Errorf("Status = %v, want ErrEtcdUnreachable", err)
			}
		})
	}
}
