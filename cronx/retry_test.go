package cronx

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestRetriesKeepOneClaim runs a Forbid job that fails its first two
// attempts on three replicas: the runner retries it under the same claim
// after 30s and 60s, the tick that comes meanwhile is skipped rather than
// run beside it, every attempt is in the history, and the marker goes with
// the last. Then the leader stops in a backoff: it makes no further
// attempt, and its successor runs the next tick.
//
// The last attempt (tick+90s) comes before the tick after the skipped one:
// a clock moved past both at once would leave to chance whether that tick
// is claimed while the last attempt runs (skipped) or after it (run).
func TestRetriesKeepOneClaim(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	runs := make(chan started, 16)
	job := ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		runs <- started{info, ctx}
		if info.Attempt < 3 {
			return fmt.Errorf("attempt %d failed", info.Attempt)
		}
		return nil
	})
	pc := newPolicyCluster(t, "retry", start, LeaderMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("flaky", job, WithOverlap(Forbid), WithRetries(3, 30*time.Second)))
	})
	pc.ready(tick)
	pc.set(tick)
	first := waitStart(t, runs, "first attempt")
	if first.info.Attempt != 1 {
		t.Fatalf("first run is attempt %d", first.info.Attempt)
	}
	pc.history("flaky", 1)
	if n := pc.markers("flaky"); n != 1 {
		t.Fatalf("%d in-progress markers in the backoff, want the run's one", n)
	}
	runner := pc.fake(first.info.Instance)
	pc.waitDue(runner, tick.Add(30*time.Second), "the first backoff")
	pc.set(tick.Add(30 * time.Second))
	second := waitStart(t, runs, "second attempt")
	pc.waitDue(runner, tick.Add(30*time.Second+60*time.Second), "the second backoff")
	pc.set(tick.Add(time.Minute))
	noStart(t, runs, 300*time.Millisecond, "the next tick, during the backoff of a Forbid job")
	pc.set(tick.Add(30*time.Second + 60*time.Second - time.Millisecond))
	noStart(t, runs, 200*time.Millisecond, "before the second backoff (60s) ended")
	pc.set(tick.Add(30*time.Second + 60*time.Second))
	third := waitStart(t, runs, "third attempt")
	for i, s := range []started{first, second, third} {
		if s.info.Attempt != i+1 || !s.info.Tick.Equal(tick) || s.info.Instance != first.info.Instance || s.info.Fence != first.info.Fence {
			t.Errorf("attempt %d: %+v, want attempt %d of %v on %s under fence %v", i+1, s.info, i+1, tick, first.info.Instance, first.info.Fence)
		}
	}
	hist := pc.history("flaky", 3)
	for i, h := range hist {
		wantErr := i < 2
		if h.Attempt != i+1 || !h.Tick.Equal(tick) || (h.Error != "") != wantErr || h.Instance != first.info.Instance {
			t.Errorf("history[%d] = %+v, want attempt %d of %v, failed: %v", i, h, i+1, tick, wantErr)
		}
	}
	pc.waitMarkers("flaky", 0)

	// The next tick runs; the leader stops in its first backoff.
	next := tick.Add(2 * time.Minute)
	pc.set(next)
	r := waitStart(t, runs, "the run of the next tick")
	leader := r.info.Instance
	pc.history("flaky", 4)
	for i, c := range pc.crons {
		if pc.ids[i] == leader {
			select {
			case <-c.Stop().Done():
			case <-time.After(10 * time.Second):
				t.Fatal("Stop's context not done within 10s while a run waited to retry")
			}
		}
	}
	pc.waitMarkers("flaky", 0)
	pc.set(next.Add(30 * time.Second))
	noStart(t, runs, 300*time.Millisecond, "a retry after the runner stopped")
	pc.ready(next.Add(time.Minute))
	pc.set(next.Add(time.Minute))
	r = waitStart(t, runs, "the tick after, on the successor")
	if r.info.Instance == leader || !r.info.Tick.Equal(next.Add(time.Minute)) || r.info.Attempt != 1 {
		t.Errorf("ran %+v, want attempt 1 of %v on a successor of %s", r.info, next.Add(time.Minute), leader)
	}
}

// waitDue waits until the replica whose clock is fake waits for at, as a
// retry's backoff does: moving the clock before the backoff is armed would
// move its deadline too.
func (pc *policyCluster) waitDue(fake *clock.Fake, at time.Time, what string) {
	pc.t.Helper()
	if !fake.WaitDue(at, 10*time.Second) {
		pc.t.Fatalf("%s: nothing waits for %v after 10s", what, at.Format(time.TimeOnly))
	}
}

// markers counts job's in-progress markers.
func (pc *policyCluster) markers(job string) int64 {
	pc.t.Helper()
	resp, err := pc.cli.Get(context.Background(), jobkeys.New(election.DefaultPrefix, pc.name).Running(job), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		pc.t.Fatal(err)
	}
	return resp.Count
}

// waitMarkers waits until job has n in-progress markers.
func (pc *policyCluster) waitMarkers(job string, n int64) {
	pc.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for pc.markers(job) != n {
		if time.Now().After(deadline) {
			pc.t.Fatalf("job %q: %d in-progress markers after 10s, want %d", job, pc.markers(job), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRetriesOfATimedOutRun: a timeout is a failure, retried.
func TestRetriesOfATimedOutRun(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	runs := make(chan started, 16)
	job := ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		runs <- started{info, ctx}
		if info.Attempt == 1 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	pc := newPolicyCluster(t, "retry-timeout", start, ClaimMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("hangs", job, WithTimeout(5*time.Second), WithRetries(2, time.Second)))
	})
	pc.ready(tick)
	pc.set(tick)
	first := waitStart(t, runs, "first attempt")
	pc.set(tick.Add(5 * time.Second))
	pc.history("hangs", 1)
	pc.waitDue(pc.fake(first.info.Instance), tick.Add(6*time.Second), "the backoff after the timeout")
	pc.set(tick.Add(6 * time.Second))
	if s := waitStart(t, runs, "second attempt"); s.info.Attempt != 2 {
		t.Fatalf("ran attempt %d, want 2", s.info.Attempt)
	}
	hist := pc.history("hangs", 2)
	if !hist[0].TimedOut || hist[1].TimedOut || hist[1].Error != "" {
		t.Errorf("history %+v, want a timed-out attempt, then a good one", hist)
	}
	noStart(t, runs, 200*time.Millisecond, "after the good attempt")
}

func TestRetriesOptionErrors(t *testing.T) {
	t.Parallel()
	for _, opt := range []JobOption{WithRetries(-1, time.Second), WithRetries(3, -time.Second)} {
		_, err := New().AddJob("* * * * *", Named("report", FuncJob(func() {}), opt))
		if err == nil || !strings.Contains(err.Error(), `job "report"`) || !strings.Contains(err.Error(), "WithRetries(") {
			t.Errorf("%v, want an error naming the job and the option", err)
		}
	}
}
