package cronx

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
)

// TestRecoveryLeavesATickWhoseRecordLeftTheHistory: a tick that ran and
// was recorded is not run again by the next leader (WithRecovery), though
// a backfill's records pushed its record out of the bounded history: the
// outcome key keeps the latest recorded tick.
func TestRecoveryLeavesATickWhoseRecordLeftTheHistory(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	T := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	ch := make(chan Info, 64)
	job := func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		ch <- info
		return nil
	}
	mk := func(id string, fake *clock.Fake, log Logger) *Cron {
		c := New(WithSeconds(), WithEtcd(srv.Client(t)), WithName("recover-evicted"), WithMisfire(RunOnce, time.Minute),
			withClock(fake), WithLocation(time.UTC), WithLogger(log),
			WithElection(election.WithIdentity(id), election.WithTTL(2*time.Second)))
		mustAdd(t, c, "0 0 * * * *", Named("hourly", ContextFunc(job), WithRecovery(1)))
		return c
	}
	fa := clock.NewFake(T.Add(-time.Second))
	a := mk("a", fa, testLogger{t, "a"})
	a.Start()
	if !fa.WaitDueBy(T, 20*time.Second) {
		t.Fatal("a armed no timer")
	}
	fa.Set(T)
	if r := runAfter(t, ch, time.Time{}, 20*time.Second, "T on a"); !r.Tick.Equal(T) || r.Instance != "a" {
		t.Fatalf("first run %v on %s", r.Tick, r.Instance)
	}
	if _, err := a.Backfill(context.Background(), "hourly", T.Add(-10*time.Hour), T, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if r := runAfter(t, ch, time.Time{}, 20*time.Second, "a backfill run"); !r.Backfill {
			t.Fatalf("not a backfill run: %+v", r)
		}
	}
	keys := jobkeys.New(election.DefaultPrefix, "recover-evicted")
	eventually(t, 20*time.Second, func() (bool, string) {
		resp, err := srv.Client(t).Get(context.Background(), keys.History("hourly"))
		if err != nil {
			return false, err.Error()
		}
		hist, _ := decodeHistory(resp.Kvs)
		return len(hist) == historyLen && !ranTick(hist, T), "the history still holds T"
	})
	<-a.Stop().Done()
	log := &logLines{}
	b := mk("b", clock.NewFake(T.Add(20*time.Second)), log)
	b.Start()
	t.Cleanup(func() { shutdown(t, b, "b") })
	eventually(t, 20*time.Second, func() (bool, string) {
		return len(log.matching("not run again: a run of the tick was recorded")) > 0, fmt.Sprintf("b did not find T recorded: %q", log.matching(""))
	})
	idleWithin(t, b, 20*time.Second, "b")
	select {
	case r := <-ch:
		t.Errorf("T ran again: %+v", r)
	default:
	}
}
