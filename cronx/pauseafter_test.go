package cronx

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestPauseAfterFailures: a job of three replicas that fails every tick,
// WithPauseAfter(2), runs its first failure's next tick, is paused
// cluster-wide by its second failure with the reason in Status, runs no
// tick while paused, and once resumed is paused again by its next failure.
func TestPauseAfterFailures(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	runs := make(chan started, 16)
	job := ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		runs <- started{info, ctx}
		return fmt.Errorf("exit status %d", info.Tick.Minute())
	})
	pc := newPolicyCluster(t, "pauseafter", start, ClaimMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("failing", job, WithPauseAfter(2)))
	})
	ctx := context.Background()
	step := func(at time.Time, records int) Info {
		t.Helper()
		pc.ready(at)
		pc.set(at)
		s := waitStart(t, runs, fmt.Sprintf("the run of %v", at.Format(time.TimeOnly)))
		pc.history("failing", records)
		return s.info
	}
	paused := func() JobStatus {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, err := pc.crons[0].Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range st.Jobs {
				if j.Name == "failing" && j.Paused {
					return j
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("not paused within 10s: %+v", st.Jobs)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	step(tick, 1)
	st, err := pc.crons[1].Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if j := st.Jobs[0]; j.Paused || j.ConsecutiveFailures != 1 {
		t.Fatalf("after one failure: paused %v, %d failures in a row", j.Paused, j.ConsecutiveFailures)
	}
	second := step(tick.Add(time.Minute), 2)
	j := paused()
	if j.PausedBy != second.Instance || !strings.Contains(j.PausedReason, "2 consecutive failures") || !strings.Contains(j.PausedReason, "exit status 2") {
		t.Errorf("paused by %q because %q, want by %s, with 2 failures and the last error", j.PausedBy, j.PausedReason, second.Instance)
	}
	pc.ready(tick.Add(2 * time.Minute))
	pc.set(tick.Add(2 * time.Minute))
	noStart(t, runs, 300*time.Millisecond, "a tick of the paused job")

	if err := pc.crons[2].Resume(ctx, "failing"); err != nil {
		t.Fatal(err)
	}
	step(tick.Add(3*time.Minute), 3)
	if j := paused(); !strings.Contains(j.PausedReason, "3 consecutive failures") {
		t.Errorf("paused again because %q, want 3 failures", j.PausedReason)
	}
}
