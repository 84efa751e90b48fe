package cronx

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

// runLog records every run of every job of every replica, with when it
// started.
type runLog struct {
	mu   sync.Mutex
	runs []loggedRun
	ch   chan loggedRun
}

type loggedRun struct {
	Info
	started time.Time
}

func (rl *runLog) job() ContextFunc {
	return func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		r := loggedRun{info, time.Now()}
		rl.mu.Lock()
		rl.runs = append(rl.runs, r)
		rl.mu.Unlock()
		select {
		case rl.ch <- r:
		default:
		}
		return nil
	}
}

// TestClaimModeOutageRunsOneMissedTickPerJob: two replicas in claim mode
// lose etcd for four TTLs, while their jobs keep coming due every second.
// When etcd is back, each job runs at most one of the ticks it missed (the
// latest, under RunOnce), not all of them in a burst, and no tick is
// reported as an error.
func TestClaimModeOutageRunsOneMissedTickPerJob(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	rl := &runLog{ch: make(chan loggedRun, 1024)}
	jobs := []string{"tick", "other"}
	var proxies []*etcdtest.Proxy
	logs := map[string]*logLines{}
	for _, id := range []string{"a", "b"} {
		proxy := etcdtest.NewProxy(t, srv.Addr())
		proxies = append(proxies, proxy)
		logs[id] = &logLines{}
		c := New(WithSeconds(), WithEtcd(srv.NewClient(t, proxy.Endpoint())), WithName("outage"), WithMode(ClaimMode),
			WithLogger(logs[id]), WithElection(election.WithIdentity(id), election.WithTTL(2*time.Second)))
		for _, job := range jobs {
			mustAdd(t, c, "* * * * * *", Named(job, rl.job()))
		}
		c.Start()
		r := &replica{id: id, cron: c}
		t.Cleanup(func() { r.stop(t) })
	}
	waitRun := func(after time.Time, what string) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case r := <-rl.ch:
				if r.Tick.After(after) {
					return
				}
			case <-deadline:
				t.Fatalf("no %s within 20s", what)
			}
		}
	}
	waitRun(time.Time{}, "run before the outage")

	for _, p := range proxies {
		p.Blackhole()
	}
	down := time.Now()
	time.Sleep(8 * time.Second) // the outage: four TTLs, while ticks come due
	for _, p := range proxies {
		p.Cut()
		p.Pass()
	}
	up := time.Now()
	waitRun(up.Add(2*time.Second), "run after the outage")

	rl.mu.Lock()
	defer rl.mu.Unlock()
	missed := map[string][]loggedRun{} // runs of ticks that fell in the outage
	perTick := map[string]int{}
	for _, r := range rl.runs {
		key := fmt.Sprintf("%s %s", r.Job, r.Tick.Format(time.TimeOnly))
		if perTick[key]++; perTick[key] == 2 {
			t.Errorf("tick %s ran twice", key)
		}
		if r.Tick.After(down) && r.Tick.Before(up) {
			missed[r.Job] = append(missed[r.Job], r)
		}
	}
	for _, job := range jobs {
		runs := missed[job]
		sort.Slice(runs, func(i, j int) bool { return runs[i].Tick.Before(runs[j].Tick) })
		t.Logf("%s: %d runs of the ticks missed in the %v outage", job, len(runs), up.Sub(down).Round(time.Second))
		if len(runs) > 1 {
			for _, r := range runs {
				t.Logf("  tick %s ran on %s at %s", r.Tick.Format(time.TimeOnly), r.Instance, r.started.Format(time.TimeOnly+".000"))
			}
			t.Errorf("%s ran %d of the ticks it missed, want at most 1", job, len(runs))
		}
	}
	for id, l := range logs {
		if lines := l.matching("ERROR cronx: tick not run"); len(lines) > 0 {
			t.Errorf("%s logged ticks as errors: %q", id, lines)
		}
	}
}
