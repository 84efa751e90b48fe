package cronx

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
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

// TestPauseAfterKeepsAPauseByHand: a job paused by hand before its n-th
// failure keeps who paused it; one paused by its failures says who and
// why, in the runs' two ways of being recorded (one by one, in a batch).
func TestPauseAfterKeepsAPauseByHand(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	prefix := srv.BatonPrefix("/baton")
	sc := &scope{name: "kept", identity: "web-2", keys: jobkeys.New(prefix, "kept"), logger: testLogger{t, "web-2"}}
	rc := newRecorder(&coordinator{scope: sc, writes: writes{sc}, conn: &connection{sc: sc, client: cli}, rep: &reporter{sc: sc}}, &runs{})
	policy := &jobPolicy{pauseAfter: 2}
	base := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	fail := func(job string, i int) finishItem {
		at := base.Add(time.Duration(i) * time.Minute)
		return finishItem{job: job, tick: at, start: at, end: at, err: fmt.Errorf("exit status %d", i), policy: policy}
	}
	ctx := context.Background()
	k, err := NewControl(cli, prefix, "kept")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, sc.keys.Paused("by-hand"), "alice"); err != nil {
		t.Fatal(err)
	}
	rc.appendHistory(ctx, fail("by-hand", 1))
	rc.appendHistory(ctx, fail("itself", 1))
	rc.recordAll([]finishItem{fail("by-hand", 2), fail("itself", 2)})
	st, err := k.status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{"by-hand": {"alice", ""}, "itself": {"web-2", "2 consecutive failures; the last: exit status 2"}}
	for _, j := range st.Jobs {
		if w := want[j.Name]; !j.Paused || j.PausedBy != w[0] || j.PausedReason != w[1] {
			t.Errorf("%s: paused %v by %q because %q; want by %q because %q", j.Name, j.Paused, j.PausedBy, j.PausedReason, w[0], w[1])
		}
	}
	if by, paused, err := k.Paused(ctx, "itself"); err != nil || !paused || by != "web-2" {
		t.Errorf("Paused: %q, %v, %v; want web-2", by, paused, err)
	}
}
