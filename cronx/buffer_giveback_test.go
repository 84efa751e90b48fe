package cronx

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestBufferedTurnGivenBackStillHasItsWaiters: a buffered tick's turn is
// claimed by one run, which then does not start (Stop, Remove, the end of
// its term) and gives it back; a run that waited for the same tick meanwhile
// (another replica's, in claim mode, or a successor's) is not told the tick
// was taken, and takes its turn once the claim is given back; the tick's
// buffer key goes only as that run starts. Were the key deleted by the turn
// and put back by the give-back, the waiting run would have quit and left
// the key to nobody.
func TestBufferedTurnGivenBackStillHasItsWaiters(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	c := New(WithEtcd(cli), WithName("bufgiveback"), WithLogger(testLogger{t, "a"}))
	t.Cleanup(func() { <-c.Stop().Done() })
	co := c.coord
	ctx := context.Background()
	tick := time.Date(2026, 3, 2, 10, 1, 0, 0, time.UTC)
	key := co.keys.BufferEntry("slow", tick.UnixNano())
	put, err := cli.Put(ctx, key, "x")
	if err != nil {
		t.Fatal(err)
	}
	ref := jobRef{name: "slow", policy: &jobPolicy{overlap: BufferOne}}
	runOf := func() *run {
		r := newRun(c.runs, co, ref, tick)
		r.buf = &buffered{key: key, rev: put.Header.Revision}
		t.Cleanup(func() { r.cancel(nil) })
		return r
	}

	first := runOf()
	c1, err := co.claims.claimBuffered(first)
	if err != nil {
		t.Fatalf("the first run's turn: %v", err)
	}
	// The second run waits for the tick now, while the first run's turn
	// holds: its claim finds the first run's marker.
	second := runOf()
	type result struct {
		c   held
		err error
	}
	done := make(chan result, 1)
	go func() {
		c2, err := co.claims.claimBuffered(second)
		done <- result{c2, err}
	}()
	select {
	case res := <-done:
		t.Fatalf("the second run's turn came back (%v) while the first run's turn held", res.err)
	case <-time.After(200 * time.Millisecond):
	}

	co.claims.giveBack(first, c1) // the first run did not start
	var res result
	select {
	case res = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the run waiting for the tick did not take its turn within 15s of the give-back")
	}
	if res.err != nil {
		t.Fatalf("the run waiting for the tick: %v, want its turn", res.err)
	}
	if err := co.claims.takeBuffered(second, res.c); err != nil {
		t.Fatalf("the second run's start: %v", err)
	}
	resp, err := cli.Get(ctx, co.keys.Buffer("slow"), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Fatalf("%d keys left in the buffer once its one tick started, want none", resp.Count)
	}
	third := runOf()
	stop := time.AfterFunc(15*time.Second, func() { third.cancel(errors.New("no answer within 15s")) })
	defer stop.Stop()
	if _, err := co.claims.claimBuffered(third); !errors.Is(err, errBufferTaken) {
		t.Errorf("a third run's turn of the started tick: %v, want %v", err, errBufferTaken)
	}
	co.claims.giveBack(second, res.c)
}
