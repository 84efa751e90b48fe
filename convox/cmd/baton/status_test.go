package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/statuspage"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// scheduler is a coordinated Cron named "crontab", led by web-1, as a
// replica of an app would run it, with an etcd of its own.
type scheduler struct {
	t    *testing.T
	srv  *etcdtest.Space
	cli  *clientv3.Client
	env  []string // reaches the etcd from a baton process
	runs chan cronx.Info
	logs *syncBuffer
}

// startScheduler runs a Cron with a seconds field and the named jobs on
// their specs, and waits until its leader has published them.
func startScheduler(t *testing.T, jobs map[string]string) *scheduler {
	t.Helper()
	srv := etcdtest.Shared(t)
	s := &scheduler{t: t, srv: srv, cli: srv.Client(t), env: srv.Env(),
		runs: make(chan cronx.Info, 1024), logs: &syncBuffer{}}
	logger := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if tz, ok := os.LookupEnv("TZ"); ok {
		s.env = append(s.env, "TZ="+tz) // baton shows times in the zone the test expects them in
	}
	c := cronx.New(cronx.WithSeconds(), cronx.WithEtcd(s.cli), cronx.WithName("crontab"), cronx.WithSlog(logger),
		cronx.WithElection(election.WithIdentity("web-1"), election.WithTTL(2*time.Second)))
	for name, spec := range jobs {
		job := cronx.ContextFunc(func(ctx context.Context) error {
			info, _ := cronx.InfoFrom(ctx)
			s.runs <- info
			return nil
		})
		if _, err := c.AddJob(spec, cronx.Named(name, job)); err != nil {
			t.Fatal(err)
		}
	}
	c.Start()
	t.Cleanup(func() {
		select {
		case <-c.Stop().Done():
		case <-time.After(10 * time.Second):
			t.Error("the Cron did not stop within 10s")
		}
	})
	until(t, 10*time.Second, "the leader to publish its jobs", func() bool {
		st := s.status()
		return len(st.Jobs) == len(jobs) && st.Leader.Identity == "web-1"
	})
	return s
}

func (s *scheduler) status() cronx.Status {
	ctl, err := cronx.NewControl(s.cli, "", "crontab")
	if err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := ctl.Status(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

func (s *scheduler) job(name string) cronx.JobStatus {
	for _, j := range s.status().Jobs {
		if j.Name == name {
			return j
		}
	}
	return cronx.JobStatus{}
}

// baton runs the baton command against the scheduler's etcd and fails the
// test unless it exits with want.
func (s *scheduler) baton(want int, args ...string) string {
	s.t.Helper()
	code, out := runBaton(s.t, s.env, args...)
	if code != want {
		s.t.Fatalf("baton %s exited %d, want %d; output:\n%s", strings.Join(args, " "), code, want, out)
	}
	return out
}

// run waits for a run of job that matches ok.
func (s *scheduler) run(job string, d time.Duration, what string, ok func(cronx.Info) bool) cronx.Info {
	s.t.Helper()
	deadline := time.After(d)
	for {
		select {
		case info := <-s.runs:
			if info.Job == job && ok(info) {
				return info
			}
		case <-deadline:
			s.t.Fatalf("no %s within %v", what, d)
		}
	}
}

// line returns the line of out whose first fields are fields, or fails.
func line(t *testing.T, out string, fields ...string) string {
	t.Helper()
	for l := range strings.Lines(out) {
		f := strings.Fields(l)
		if len(f) >= len(fields) && strings.Join(f[:len(fields)], " ") == strings.Join(fields, " ") {
			return l
		}
	}
	t.Fatalf("no line starting %q in:\n%s", fields, out)
	return ""
}

// TestStatusShowsLeadersLocksAndJobs: status lists baton's and etcdctl's
// elections, a lock held by a plain concurrency.Mutex, and a job with its
// triggered last run and next tick, as a table and as JSON.
func TestStatusShowsLeadersLocksAndJobs(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, map[string]string{"report": "0 0 0 1 1 *"}) // New Year's midnight only
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	lockSess, err := concurrency.NewSession(s.cli, concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer lockSess.Close()
	if err := concurrency.NewMutex(lockSess, "/baton/lock/migrate").Lock(ctx); err != nil {
		t.Fatal(err)
	}
	electSess, err := concurrency.NewSession(s.cli, concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer electSess.Close()
	if err := concurrency.NewElection(electSess, "/baton/election/manual").Campaign(ctx, "ops-box"); err != nil {
		t.Fatal(err)
	}

	out := s.baton(exitOK, "trigger", "report")
	if !strings.Contains(out, "triggered crontab/report") {
		t.Errorf("baton trigger does not say what it did:\n%s", out)
	}
	run := s.run("report", 10*time.Second, "triggered run of report", func(i cronx.Info) bool { return i.Triggered })
	until(t, 10*time.Second, "the triggered run in report's history", func() bool { return len(s.job("report").History) == 1 })

	now := time.Now()
	nextNewYear := time.Date(now.Year()+1, 1, 1, 0, 0, 0, 0, time.Local)
	out = s.baton(exitOK, "status")
	if l := line(t, out, "crontab"); !strings.Contains(l, " web-1 ") {
		t.Errorf("election crontab: %q, want led by web-1", l)
	}
	if l := line(t, out, "manual"); !strings.Contains(l, " ops-box ") {
		t.Errorf("election manual: %q, want led by ops-box (etcdctl's plain value)", l)
	}
	if l, want := line(t, out, "migrate"), fmt.Sprintf(" lease %x ", lockSess.Lease()); !strings.Contains(l, want) {
		t.Errorf("lock migrate: %q, want held by%s", l, want)
	}
	l := line(t, out, "crontab", "report", "0", "0", "0", "1", "1", "*", "no")
	for _, want := range []string{" " + run.Tick.Format(time.RFC3339) + " ", " web-1 ", " ok, ", "(triggered)", " " + nextNewYear.Format(time.RFC3339)} {
		if !strings.Contains(l, want) {
			t.Errorf("job line %q does not have %q", l, want)
		}
	}

	var doc struct {
		Prefix    string `json:"prefix"`
		Elections []struct {
			Name, Leader, Lease string
			Since               time.Time
			Fence               int64
			Candidates          int
		} `json:"elections"`
		Locks []struct {
			Name, Holder, Lease string
			Fence               int64
			Waiting             int
		} `json:"locks"`
		Schedulers []struct {
			Name, Leader string
			Jobs         []struct {
				Name, Spec string
				Paused     bool
				Running    []string
				Next       time.Time
				LastRun    *struct {
					Tick, Start     time.Time
					Instance, Error string
					DurationSeconds float64 `json:"duration_seconds"`
					Triggered       bool
				} `json:"last_run"`
				History []json.RawMessage
			}
		} `json:"schedulers"`
	}
	out = s.baton(exitOK, "status", "--json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if want := s.srv.BatonPrefix("/baton"); doc.Prefix != want || len(doc.Elections) != 2 || len(doc.Locks) != 1 || len(doc.Schedulers) != 1 {
		t.Fatalf("status --json: prefix %q, %d elections, %d locks, %d schedulers; want %s, 2, 1, 1:\n%s",
			doc.Prefix, len(doc.Elections), len(doc.Locks), len(doc.Schedulers), want, out)
	}
	if e := doc.Elections[0]; e.Name != "crontab" || e.Leader != "web-1" || e.Since.IsZero() || e.Fence <= 0 || e.Candidates != 1 {
		t.Errorf("election crontab: %+v", e)
	}
	if e := doc.Elections[1]; e.Name != "manual" || e.Leader != "ops-box" || e.Lease != fmt.Sprintf("%x", electSess.Lease()) {
		t.Errorf("election manual: %+v", e)
	}
	if l := doc.Locks[0]; l.Name != "migrate" || l.Holder != "" || l.Lease != fmt.Sprintf("%x", lockSess.Lease()) || l.Waiting != 0 {
		t.Errorf("lock migrate: %+v", l)
	}
	sc := doc.Schedulers[0]
	if sc.Name != "crontab" || sc.Leader != "web-1" || len(sc.Jobs) != 1 {
		t.Fatalf("scheduler: %+v", sc)
	}
	j := sc.Jobs[0]
	if j.Name != "report" || j.Spec != "0 0 0 1 1 *" || j.Paused || j.Running == nil || len(j.History) != 1 || !j.Next.Equal(nextNewYear) {
		t.Errorf("job report: %+v, want next %v", j, nextNewYear)
	}
	if r := j.LastRun; r == nil || !r.Tick.Equal(run.Tick) || r.Instance != "web-1" || !r.Triggered || r.Error != "" ||
		r.Start.IsZero() || r.DurationSeconds < 0 {
		t.Errorf("report's last run: %+v, want the triggered run at %v on web-1", r, run.Tick)
	}

	// One scheduler's jobs only; elections and locks stay.
	out = s.baton(exitOK, "status", "--scheduler", "crontab")
	line(t, out, "crontab", "report")
	line(t, out, "migrate")
}

// TestPauseResumeTriggerOperateAJob: a paused job's ticks are skipped
// cluster-wide, a trigger still runs it once, and after resume it runs on
// its schedule again.
func TestPauseResumeTriggerOperateAJob(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, map[string]string{"tick": "* * * * * *"})
	s.run("tick", 10*time.Second, "first run of tick", func(cronx.Info) bool { return true })

	out := s.baton(exitOK, "pause", "crontab/tick", "--id", "alice")
	if !strings.Contains(out, "paused crontab/tick") {
		t.Errorf("baton pause does not say what it did:\n%s", out)
	}
	pausedAt := time.Now()
	out = s.baton(exitOK, "pause", "tick")
	if !strings.Contains(out, "paused already (by alice)") {
		t.Errorf("a second pause does not say the job is paused already:\n%s", out)
	}
	if l := line(t, s.baton(exitOK, "status"), "crontab", "tick"); !strings.Contains(l, " yes (alice) ") {
		t.Errorf("status of the paused job: %q, want paused by alice", l)
	}
	var doc struct {
		Schedulers []struct {
			Jobs []struct {
				Paused   bool
				PausedBy string `json:"paused_by"`
			}
		}
	}
	if err := json.Unmarshal([]byte(s.baton(exitOK, "status", "--json")), &doc); err != nil ||
		len(doc.Schedulers) != 1 || len(doc.Schedulers[0].Jobs) != 1 || !doc.Schedulers[0].Jobs[0].Paused ||
		doc.Schedulers[0].Jobs[0].PausedBy != "alice" {
		t.Errorf("status --json of the paused job: %+v (%v)", doc, err)
	}

	// The leader skips the job's next ticks as paused.
	skipped := `msg="cronx: skipped: paused" job=tick`
	until(t, 10*time.Second, "two ticks of tick skipped as paused", func() bool {
		return strings.Count(s.logs.String(), skipped) >= 2
	})
	for len(s.runs) > 0 {
		if r := <-s.runs; !r.Triggered && r.Tick.After(pausedAt) {
			t.Errorf("tick ran for %v, after it was paused at %v", r.Tick, pausedAt)
		}
	}

	// A trigger runs it once even while paused, as cronx documents.
	out = s.baton(exitOK, "trigger", "tick", "--scheduler", "crontab")
	if !strings.Contains(out, "triggered crontab/tick") || !strings.Contains(out, "paused") {
		t.Errorf("baton trigger of a paused job: %q", out)
	}
	s.run("tick", 10*time.Second, "triggered run of the paused tick", func(i cronx.Info) bool {
		if !i.Triggered && i.Tick.After(pausedAt) {
			t.Errorf("tick ran for %v while paused", i.Tick)
		}
		return i.Triggered
	})

	out = s.baton(exitOK, "resume", "tick")
	if !strings.Contains(out, "resumed crontab/tick") {
		t.Errorf("baton resume does not say what it did:\n%s", out)
	}
	resumedAt := time.Now()
	s.run("tick", 10*time.Second, "scheduled run of tick after resume", func(i cronx.Info) bool {
		return !i.Triggered && i.Tick.After(resumedAt)
	})
	if j := s.job("tick"); j.Paused {
		t.Error("status shows tick paused after resume")
	}
	if out := s.baton(exitOK, "resume", "tick"); !strings.Contains(out, "not paused") {
		t.Errorf("resume of a running job: %q, want it to say the job is not paused", out)
	}
}

// TestPauseResumeTriggerUnknownJobOrScheduler: an operation on a job no
// replica published fails, listing what there is; bad arguments are usage
// errors.
func TestPauseResumeTriggerUnknownJobOrScheduler(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, map[string]string{"report": "0 0 0 1 1 *", "sweep": "0 0 0 1 1 *"})
	for _, op := range []string{"pause", "resume", "trigger"} {
		out := s.baton(exitFailure, op, "nope")
		for _, want := range []string{`"nope"`, `"crontab"`, "report, sweep"} {
			if !strings.Contains(out, want) {
				t.Errorf("baton %s nope: %q does not name %s", op, out, want)
			}
		}
		out = s.baton(exitFailure, op, "billing/report")
		for _, want := range []string{`"billing"`, "schedulers there: crontab"} {
			if !strings.Contains(out, want) {
				t.Errorf("baton %s billing/report: %q does not name %s", op, out, want)
			}
		}
	}
	if j := s.job("report"); j.Paused {
		t.Error("a failed operation paused a job")
	}
	if out := s.baton(exitFailure, "status", "--scheduler", "billing"); !strings.Contains(out, `"billing"`) || !strings.Contains(out, "crontab") {
		t.Errorf("status --scheduler billing: %q, want an error naming billing and listing crontab", out)
	}

	for _, args := range [][]string{
		{"pause"},
		{"pause", "report", "sweep"},
		{"trigger", "no such job"},
		{"resume", "crontab/"},
		{"pause", "crontab/report", "--scheduler", "billing"},
		{"status", "--scheduler", "a/b"},
		{"status", "extra"},
	} {
		if out := s.baton(exitUsage, args...); !strings.Contains(out, "--help") {
			t.Errorf("baton %s: %q, want a usage error", strings.Join(args, " "), out)
		}
	}
}

// TestStatusPauseResumeTriggerFailFastWithoutEtcd: with etcd unreachable,
// every command exits 1 within its dial timeout, naming the endpoint.
func TestStatusPauseResumeTriggerFailFastWithoutEtcd(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close()
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"pause", "report"}, {"resume", "report"}, {"trigger", "report"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			p := startBaton(t, []string{"BATON_ETCD_ENDPOINTS=" + endpoint}, append(args, "--dial-timeout", "1s")...)
			code := p.wait(15 * time.Second)
			if code != exitFailure || !strings.Contains(p.out.String(), endpoint) {
				t.Errorf("exit %d, output %q; want 1 naming %s", code, p.out.String(), endpoint)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %v to give up on a 1s dial timeout", took)
			}
		})
	}
}

func TestStatusPauseResumeTriggerHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"status", "pause", "resume", "trigger"} {
		code, out := runBaton(t, nil, cmd, "--help")
		if code != exitOK || !strings.Contains(out, "Usage: baton "+cmd) || !strings.Contains(out, "--endpoints") {
			t.Errorf("baton %s --help: exit %d, output:\n%s", cmd, code, out)
		}
	}
}

// TestStatusTextShowsTicksNotRun: the table's NOT RUN column lists a job's
// ticks not run over the last day by reason, and "-" without any.
func TestStatusTextShowsTicksNotRun(t *testing.T) {
	t.Parallel()
	snap := &statuspage.Snapshot{Prefix: "/baton", Schedulers: []statuspage.Scheduler{{Name: "crontab", Jobs: []statuspage.Job{
		{Name: "report", Spec: "@hourly", NotRun: map[string]int{"paused": 2, "no_leader": 1}},
		{Name: "sweep", Spec: "@hourly"},
	}}}}
	var out strings.Builder
	if err := snap.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if l := line(t, out.String(), "SCHEDULER"); !strings.HasSuffix(strings.TrimSpace(l), "NOT RUN (1D)") {
		t.Errorf("header %q does not end with NOT RUN (1D)", l)
	}
	if l := line(t, out.String(), "crontab", "report"); !strings.HasSuffix(strings.TrimSpace(l), " no_leader 1,paused 2") {
		t.Errorf("report's line %q does not end with its counts", l)
	}
	if l := line(t, out.String(), "crontab", "sweep"); !strings.HasSuffix(strings.TrimSpace(l), " -") {
		t.Errorf("sweep's line %q does not end with -", l)
	}
}
