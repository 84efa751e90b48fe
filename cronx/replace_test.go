package cronx

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// TestReplaceCancelsTheRunInProgress runs a Replace job whose runs outlast
// the tick, on three replicas in claim mode, each replica winning a tick in
// turn: each tick cancels the run in progress, wherever it runs, with
// ErrReplaced, and the new run starts only once the old one has returned;
// every tick runs, and the history records the replaced runs.
func TestReplaceCancelsTheRunInProgress(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	type held struct {
		started
		release chan struct{}
	}
	runs := make(chan held, 16)
	job := ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		h := held{started{info, ctx}, make(chan struct{})}
		runs <- h
		<-ctx.Done()
		<-h.release // a slow shutdown
		return ctx.Err()
	})
	pc := newPolicyCluster(t, "replace", start, ClaimMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("long", job, WithOverlap(Replace)))
	})
	pc.ready(tick)
	pc.set(tick)
	var cur held
	select {
	case cur = <-runs:
	case <-time.After(15 * time.Second):
		t.Fatal("no run of the first tick")
	}
	const ticks = 4
	for i := 1; i <= ticks; i++ {
		next := tick.Add(time.Duration(i) * time.Minute)
		// One replica reaches the tick first and claims it: each in turn,
		// so that the run it replaces is on another replica as often as not.
		// Its loop must wait for the tick first: one that wakes for the last
		// tick only after its clock reached this one skips this one.
		winner := pc.ids[i%len(pc.ids)]
		pc.waitDue(pc.fake(winner), next, "the tick of "+winner)
		pc.fake(winner).Set(next)
		select {
		case <-cur.ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("the run of %v on %s was not cancelled by the tick %v", cur.info.Tick, cur.info.Instance, next)
		}
		if cause := context.Cause(cur.ctx); !errors.Is(cause, ErrReplaced) {
			t.Errorf("the replaced run's cause is %v, want ErrReplaced", cause)
		}
		select {
		case h := <-runs:
			t.Fatalf("the run of %v started on %s while the run of %v still ran on %s", h.info.Tick, h.info.Instance, cur.info.Tick, cur.info.Instance)
		case <-time.After(300 * time.Millisecond):
		}
		pc.set(next)
		close(cur.release)
		var h held
		select {
		case h = <-runs:
		case <-time.After(10 * time.Second):
			t.Fatalf("the run of %v did not start after the run it replaces returned", next)
		}
		if !h.info.Tick.Equal(next) || h.info.Instance != winner {
			t.Fatalf("ran %v on %s, want %v on %s, which claimed it", h.info.Tick, h.info.Instance, next, winner)
		}
		cur = h
	}
	close(cur.release)
	hist := pc.history("long", ticks)
	for i, r := range hist[:ticks] {
		if !r.Tick.Equal(tick.Add(time.Duration(i)*time.Minute)) || !strings.Contains(r.Error, "replaced by a later tick") {
			t.Errorf("history[%d] = %+v, want the run of %v, replaced", i, r, tick.Add(time.Duration(i)*time.Minute))
		}
	}
}

func TestOverlapOptionErrors(t *testing.T) {
	t.Parallel()
	_, err := New().AddJob("* * * * *", Named("report", FuncJob(func() {}), WithOverlap(Overlap(9))))
	if err == nil || !strings.Contains(err.Error(), `job "report"`) || !strings.Contains(err.Error(), "WithOverlap(9)") {
		t.Errorf("WithOverlap(9): %v, want an error naming the job and the option", err)
	}
}

// TestReplaceWatchSurvivesCompaction: a run whose watch would start at a
// revision etcd has compacted away (a long run, and auto-compaction) still
// learns of the later claim that happened meanwhile, and is replaced.
func TestReplaceWatchSurvivesCompaction(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	c := New(WithEtcd(cli), WithName("compact"), WithLogger(DiscardLogger))
	co := c.coord
	ctx := context.Background()
	key := co.keys.Last("long")
	resp, err := cli.Put(ctx, key, "claim of the run")
	if err != nil {
		t.Fatal(err)
	}
	claimed := resp.Header.Revision
	if _, err := cli.Put(ctx, key, "a later claim"); err != nil {
		t.Fatal(err)
	}
	last, err := cli.Put(ctx, "/other", "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, last.Header.Revision); err != nil {
		t.Fatal(err)
	}
	replaced := make(chan struct{})
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r := newRun(c.runs, co, jobRef{name: "long"}, time.Now())
	watchLaterClaim(wctx, r, claimed, func() { close(replaced) })
	select {
	case <-replaced:
	default:
		t.Fatal("a later claim made before the compaction went unseen")
	}
}
