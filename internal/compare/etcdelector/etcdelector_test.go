package etcdelector

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// waitLeader returns the one elector of es that leads, failing the test if
// none or several lead after limit.
func waitLeader(t *testing.T, limit time.Duration, es ...*Elector) *Elector {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var leaders []*Elector
		for _, e := range es {
			if e.IsLeader(context.Background()) == nil {
				leaders = append(leaders, e)
			}
		}
		if len(leaders) == 1 {
			return leaders[0]
		}
		if len(leaders) > 1 || time.Now().After(deadline) {
			t.Fatalf("%d leaders, want exactly one", len(leaders))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOneLeaderAndHandoverOnClose(t *testing.T) {
	m := etcdtest.Start(t)
	// A TTL far above a handover, and above a pause of the test process,
	// which runs etcd: a handover that waited for it cannot pass for a slow
	// one.
	a := New(m.Client(t), "/test/election", "a", 30*time.Second)
	b := New(m.Client(t), "/test/election", "b", 30*time.Second)
	defer b.Close()
	first := waitLeader(t, 5*time.Second, a, b)
	if first.Fence() == 0 {
		t.Error("the leader has no fence")
	}
	other := b
	if first == b {
		other = a
	}
	if err := other.IsLeader(context.Background()); !errors.Is(err, ErrNotLeader) {
		t.Errorf("follower IsLeader = %v, want ErrNotLeader", err)
	}
	start := time.Now()
	first.Close()
	if got := waitLeader(t, 20*time.Second, a, b); got != other {
		t.Fatal("the closed elector still leads")
	}
	// Close resigns: the follower takes over in a watch round trip, not a TTL.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("handover took %v, want well under the 30s TTL", d)
	}
	if other == a {
		a.Close()
	}
}
