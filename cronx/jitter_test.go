package cronx

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/jobkeys"
)

// TestJitterIsTheSameOnEveryReplicaAndBounded checks the delay's
// derivation: a function of the job's name and tick, under the maximum, and
// spread.
func TestJitterIsTheSameOnEveryReplicaAndBounded(t *testing.T) {
	t.Parallel()
	tick := time.Date(2026, 3, 2, 10, 1, 0, 0, time.UTC)
	seen := map[time.Duration]bool{}
	for i := range 1000 {
		name := fmt.Sprintf("job-%d", i)
		d := jitterOf(name, tick, time.Minute)
		if d < 0 || d >= time.Minute {
			t.Fatalf("%s: delay %v outside [0, 1m)", name, d)
		}
		if again := jitterOf(name, tick.In(time.FixedZone("x", 3600)), time.Minute); again != d {
			t.Fatalf("%s: delay %v, then %v for the same tick in another zone", name, d, again)
		}
		seen[d.Truncate(time.Second)] = true
	}
	if len(seen) < 55 {
		t.Errorf("1000 jobs' delays fall in %d of the 60 seconds, want them spread", len(seen))
	}
	if jitterOf("a", tick, time.Minute) == jitterOf("a", tick.Add(time.Minute), time.Minute) &&
		jitterOf("b", tick, time.Minute) == jitterOf("b", tick.Add(time.Minute), time.Minute) {
		t.Error("the delay does not change with the tick")
	}
}

// TestJitterDelaysTheClaimNotTheTick runs jittered jobs on three replicas:
// none starts at the tick; each is claimed and starts at its own delay,
// under its nominal tick; and when the leader stops with delays still
// pending, its successor runs those ticks (misfire RunOnce), each once, at
// their delays.
func TestJitterDelaysTheClaimNotTheTick(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	// A first tick that every job runs, then the tick of the test.
	first := start.Truncate(time.Minute).Add(time.Minute)
	tick := first.Add(time.Minute)
	const jitter = 50 * time.Second
	// Four jobs whose delays of tick are a second or more apart, in the
	// order of their delays.
	var names []string
	for i := 0; len(names) < 4; i++ {
		n, d := fmt.Sprintf("j%d", i), jitterOf(fmt.Sprintf("j%d", i), tick, jitter)
		apart := d >= time.Second
		for _, m := range names {
			apart = apart && (d-jitterOf(m, tick, jitter) >= time.Second || jitterOf(m, tick, jitter)-d >= time.Second)
		}
		if apart {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		return int(jitterOf(a, tick, jitter) - jitterOf(b, tick, jitter))
	})
	runs := make(chan started, 16)
	job := ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		runs <- started{info, ctx}
		return nil
	})
	pc := newPolicyCluster(t, "jitter", start, LeaderMode, func(id string, c *Cron) {
		for _, n := range names {
			mustAdd(t, c, "* * * * *", Named(n, job))
		}
	}, WithJobOptions(WithJitter(jitter)))
	pc.ready(first)
	pc.set(first)
	noStart(t, runs, 300*time.Millisecond, "at the tick, before any delay")
	pc.set(first.Add(jitter))
	for range names {
		waitStart(t, runs, "run of the first tick")
	}
	pc.ready(tick)
	pc.set(tick)
	noStart(t, runs, 300*time.Millisecond, "at the tick, before any delay")

	// The first job runs at its delay, under its nominal tick, and only its
	// tick is claimed.
	d0 := jitterOf(names[0], tick, jitter)
	pc.set(tick.Add(d0 - time.Millisecond))
	noStart(t, runs, 200*time.Millisecond, "just before the first delay")
	pc.set(tick.Add(d0))
	r := waitStart(t, runs, "run of "+names[0])
	if r.info.Job != names[0] || !r.info.Tick.Equal(tick) {
		t.Fatalf("ran %s of %v, want %s of the nominal tick %v", r.info.Job, r.info.Tick, names[0], tick)
	}
	for i, n := range names {
		if got, want := pc.lastClaimed(n), i == 0; got.Equal(tick) != want {
			t.Errorf("job %s: last claimed tick %v at the first delay; claimed %v, want %v", n, got, got.Equal(tick), want)
		}
	}

	// The leader stops with three delays pending; its successor claims and
	// runs those ticks at their delays.
	leader := r.info.Instance
	for i, c := range pc.crons {
		if pc.ids[i] == leader {
			<-c.Stop().Done()
		}
	}
	ran := map[string]string{names[0]: leader}
	for _, n := range names[1:] {
		pc.set(tick.Add(jitterOf(n, tick, jitter)))
		r := waitStart(t, runs, "run of "+n+" after the leader stopped")
		if !r.info.Tick.Equal(tick) || r.info.Instance == leader {
			t.Errorf("ran %s of %v on %s, want the nominal tick %v on a successor", r.info.Job, r.info.Tick, r.info.Instance, tick)
		}
		if prev, ok := ran[r.info.Job]; ok {
			t.Errorf("%s ran twice, on %s and %s", r.info.Job, prev, r.info.Instance)
		}
		ran[r.info.Job] = r.info.Instance
	}
	noStart(t, runs, 300*time.Millisecond, "after every job ran")
	if len(ran) != len(names) {
		t.Errorf("ran %v, want each of %v once", ran, names)
	}
}

// lastClaimed reads job's last claimed tick from etcd.
func (pc *policyCluster) lastClaimed(job string) time.Time {
	pc.t.Helper()
	resp, err := pc.cli.Get(context.Background(), jobkeys.New(election.DefaultPrefix, pc.name).Last(job))
	if err != nil {
		pc.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return time.Time{}
	}
	seq, _, err := jobkeys.ParseLast(string(resp.Kvs[0].Value))
	if err != nil {
		pc.t.Fatal(err)
	}
	return time.Unix(0, seq).UTC()
}

func TestJitterOptionErrors(t *testing.T) {
	t.Parallel()
	_, err := New().AddJob("* * * * *", Named("report", FuncJob(func() {}), WithJitter(-time.Second)))
	if err == nil || !strings.Contains(err.Error(), `job "report"`) || !strings.Contains(err.Error(), "WithJitter(-1s)") {
		t.Errorf("WithJitter(-1s): %v, want an error naming the job and the option", err)
	}
}
