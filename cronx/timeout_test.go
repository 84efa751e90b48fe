package cronx

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestTimeoutEndsTheRunAndRecordsIt runs a job that waits for its context
// on three replicas: at its timeout, on the runner's clock, its context ends
// with ErrTimeout, and the run is in the history as timed out, once. The
// Cron's WithJobOptions timeout applies to every job; a job's own wins.
func TestTimeoutEndsTheRunAndRecordsIt(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	runs := make(chan started, 16)
	job := ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		runs <- started{info, ctx}
		<-ctx.Done()
		return ctx.Err()
	})
	pc := newPolicyCluster(t, "timeout", start, LeaderMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("slow", job, WithTimeout(10*time.Second)))
	}, WithJobOptions(WithTimeout(time.Hour)))
	pc.ready(tick)
	pc.set(tick)
	run := waitStart(t, runs, "run of the tick")
	fake := pc.fake(run.info.Instance)

	fake.Set(tick.Add(9 * time.Second))
	if err := run.ctx.Err(); err != nil {
		t.Fatalf("9s into a 10s timeout the run's context ended: %v", context.Cause(run.ctx))
	}
	pc.set(tick.Add(10 * time.Second))
	select {
	case <-run.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the run's context did not end at its 10s timeout (the job's own option, over the Cron's hour)")
	}
	if cause := context.Cause(run.ctx); !errors.Is(cause, ErrTimeout) {
		t.Errorf("the context's cause is %v, want ErrTimeout", cause)
	}
	hist := pc.history("slow", 1)
	if len(hist) != 1 {
		t.Fatalf("history %+v, want one run", hist)
	}
	h := hist[0]
	if !h.TimedOut || !strings.Contains(h.Error, "timed out after 10s") || !h.Tick.Equal(tick) || h.Instance != run.info.Instance {
		t.Errorf("recorded %+v, want the run of %v on %s, timed out after 10s", h, tick, run.info.Instance)
	}
	noStart(t, runs, 200*time.Millisecond, "after the timeout")
}

// TestTimeoutOptionErrors checks that a negative timeout is an error naming
// the job.
func TestTimeoutOptionErrors(t *testing.T) {
	t.Parallel()
	c := New()
	_, err := c.AddJob("* * * * *", Named("report", FuncJob(func() {}), WithTimeout(-time.Second)))
	if err == nil || !strings.Contains(err.Error(), `job "report"`) || !strings.Contains(err.Error(), "WithTimeout(-1s)") {
		t.Errorf("AddJob with WithTimeout(-1s): %v, want an error naming the job and the option", err)
	}
}
