package cronx

import (
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestAClaimThatFindsNoSlotByItsDeadlineIsReported: in claim mode, a tick
// of more jobs than claims may be in flight, on an etcd that does not
// answer. The claims beyond maxClaims wait for a slot; once their misfire
// deadline passes they are reported not run at once, rather than wait for
// the claims ahead of them to time out and then be sent late.
func TestAClaimThatFindsNoSlotByItsDeadlineIsReported(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	fake := clock.NewFake(t0)
	ev := newEventLog()
	const grace = 2 * time.Second
	c := New(append([]Option{withClock(fake), WithLocation(time.UTC), WithSeconds(), WithEtcd(srv.NewClient(t, proxy.Endpoint())),
		WithName("slots"), WithMode(ClaimMode), WithMisfire(Skip, grace)}, observed(ev)...)...)
	t.Cleanup(func() {
		proxy.Pass()
		select {
		case <-c.Stop().Done():
		case <-time.After(30 * time.Second):
			t.Error("the Cron still used its client 30s after the test")
		}
	})
	const n, waiting = maxClaims + 16, 16
	ran := make(chan struct{}, n)
	for i := range n {
		mustAdd(t, c, "* * * * * *", Named(fmt.Sprintf("j%d", i), FuncJob(func() { ran <- struct{}{} })))
	}
	c.Start()
	// A first tick with etcd answering: the marker leases are granted.
	first := t0.Add(time.Second)
	if !fake.WaitDueBy(first, wait) {
		t.Fatal("no timer armed for the first tick")
	}
	fake.Set(first)
	for i := range n {
		receive1(t, ran, fmt.Sprintf("run %d of %d of the first tick", i+1, n))
	}

	proxy.Blackhole()
	tick := first.Add(time.Second)
	if !fake.WaitDueBy(tick, wait) {
		t.Fatal("no timer armed for the second tick")
	}
	fake.Set(tick)
	stages := func() (sent, fired int) {
		c.runs.mu.Lock()
		defer c.runs.mu.Unlock()
		return c.runs.count(func(r *run) bool { return r.tick.Equal(tick) && r.stage == stageSent }),
			c.runs.count(func(r *run) bool { return r.tick.Equal(tick) && r.stage == stageFired })
	}
	eventually(t, wait, func() (bool, string) {
		sent, fired := stages()
		return sent == maxClaims && fired == waiting, fmt.Sprintf("%d claims on the wire and %d waiting, want %d and %d", sent, fired, maxClaims, waiting)
	})
	// The deadline passes while the claims on the wire still wait for
	// etcd (etcdTimeout): only the waiting ones can be reported by then.
	fake.Set(tick.Add(grace + time.Second))
	eventually(t, etcdTimeout/2, func() (bool, string) {
		got := 0
		for i := range n {
			for _, e := range ev.notRun(fmt.Sprintf("j%d", i), ReasonEtcdUnavailable) {
				if e.Tick.Equal(tick) {
					got++
				}
			}
		}
		return got >= waiting, fmt.Sprintf("%d of the %d ticks whose claims found no slot reported not run", got, waiting)
	})
}
