package cronx

import (
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// TestStopWithAClaimInFlightMissesNoTick is G3 when the leader stops while
// its claim of a tick is on the wire: the claim commits after the term has
// ended, so the leader gives the tick back before it resigns, and the next
// leader runs it.
func TestStopWithAClaimInFlightMissesNoTick(t *testing.T) {
	srv := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	l := newLedger()
	a := startReplica(t, etcdtest.NewClient(t, proxy.Endpoint()), "a", l, LeaderMode)
	deadline := time.After(15 * time.Second)
	for led := false; !led; {
		select {
		case r := <-l.ch:
			led = r.Instance == "a"
		case <-deadline:
			t.Fatal("a ran no tick within 15s")
		}
	}
	startReplica(t, srv.Client(t), "b", l, LeaderMode)
	time.Sleep(time.Second) // b waits behind a

	// a's requests now take 100 ms each way; it stops 30 ms after a tick.
	proxy.Delay(100 * time.Millisecond)
	tick := time.Now().Truncate(time.Second).Add(2 * time.Second)
	time.Sleep(time.Until(tick.Add(30 * time.Millisecond)))
	a.cron.Stop()

	deadline = time.After(10 * time.Second)
	for {
		select {
		case r := <-l.ch:
			if r.Tick.Before(tick) {
				continue
			}
			if !r.Tick.Equal(tick) {
				t.Fatalf("tick %v was missed: the next run is %v, on %s", tick, r.Tick, r.Instance)
			}
			if n := l.count(tick); n != 1 {
				t.Fatalf("tick %v ran %d times", tick, n)
			}
			return
		case <-deadline:
			t.Fatalf("no run of tick %v or later within 10s", tick)
		}
	}
}
