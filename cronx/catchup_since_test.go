package cronx

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/jobkeys"
)

// The tests of a job that never ran against the time it was first
// published: its ticks from then on came due with the job in the cluster,
// and are caught up or counted; a tick before it did not.

// TestNeverRunJobsTickBeforeItsPublicationIsNotCaughtUp: a leader that
// starts after a job's tick publishes the job and hands over at once; the
// successor does not run that tick, which came due before the cluster had
// the job, but does catch up a tick that fell as the job was published.
func TestNeverRunJobsTickBeforeItsPublicationIsNotCaughtUp(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	var l tickLedger
	tick := t0.Add(10 * time.Second)
	published := tick.Add(5 * time.Second)
	replica := func(id string, fake *clock.Fake) *Cron {
		c := New(WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
			WithEtcd(srv.Client(t)), WithName("fresh-since"),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		mustAdd(t, c, "*/10 * * * * *", Named("before", l.job("before")))
		mustAdd(t, c, "*/5 * * * * *", Named("as", l.job("as")))
		c.Start()
		t.Cleanup(func() { shutdown(t, c, id) })
		return c
	}
	fakeA, fakeB := clock.NewFake(published), clock.NewFake(published.Add(time.Second))
	a := replica("a", fakeA)
	eventually(t, wait, func() (bool, string) { return a.coord.scheduling(), "a does not lead" })
	waitPublished(t, srv.Client(t), "fresh-since", "before", "as")
	b := replica("b", fakeB)
	waitCandidates(t, srv.Client(t), "fresh-since", 2)
	<-a.Stop().Done()
	eventually(t, 15*time.Second, func() (bool, string) { return b.coord.scheduling(), "b did not lead after a stopped" })
	// "as" ticked at its publication: b catches that tick up, in the same
	// pass in which it fires "before"'s tick.
	l.ranOnce(t, 15*time.Second, published, "as")
	idleWithin(t, b, 10*time.Second, "b's catch-up")
	l.mu.Lock()
	defer l.mu.Unlock()
	if got := l.ran["before"]; len(got) != 0 {
		t.Errorf("before ran %v: a tick that came due before the job was published", got)
	}
}

// TestNeverRunJobsTicksSincePublicationAreCountedAfterAGap is G4 for a job
// that never ran, under Skip: when nobody led for longer than a lost
// leader's lease, the next leader counts each tick of the gap from the
// job's publication on as no_leader, as it would a job's that ran, and
// none before it.
func TestNeverRunJobsTicksSincePublicationAreCountedAfterAGap(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tick := time.Now().UTC().Truncate(10 * time.Second) // Status counts by the wall clock
	keys := jobkeys.New(election.DefaultPrefix, "since-gap")
	// Published by a leader lost since: "early" at its tick, "late" after it.
	for job, at := range map[string]time.Time{"early": tick, "late": tick.Add(5 * time.Second)} {
		if _, err := cli.Put(ctx, keys.Spec(job), "*/10 * * * * *"); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.Put(ctx, keys.Since(job), claimcond.Value(at.UnixNano(), "lost")); err != nil {
			t.Fatal(err)
		}
	}
	l := newEventLog()
	// Past the lost leader's lease: stallTTL and its expiry after the tick.
	start := tick.Add(stallTTL + lostExpiry + 3*time.Second)
	fake := clock.NewFake(start)
	b := New(append(observed(l), WithSeconds(), withClock(fake), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(cli), WithName("since-gap"), WithMisfire(Skip, 0),
		WithElection(election.WithIdentity("b"), election.WithTTL(stallTTL)))...)
	mustAdd(t, b, "*/10 * * * * *", Named("early", FuncJob(func() {})))
	mustAdd(t, b, "*/10 * * * * *", Named("late", FuncJob(func() {})))
	b.Start()
	t.Cleanup(func() { shutdown(t, b, "b") })
	next := tick.Add(10 * time.Second)
	counted := func(job string) []time.Time {
		var got []time.Time
		for _, e := range l.notRun(job, ReasonNoLeader) {
			got = append(got, e.Tick)
		}
		return got
	}
	// A job's gap is reported in tick order: its last tick ends it.
	eventually(t, 15*time.Second, func() (bool, string) {
		early, late := counted("early"), counted("late")
		return slices.ContainsFunc(early, next.Equal) && slices.ContainsFunc(late, next.Equal),
			fmt.Sprintf("ticks counted no_leader: early %v, late %v; want both to reach %v", early, late, next)
	})
	for job, want := range map[string][]time.Time{"early": {tick, next}, "late": {next}} {
		if got := counted(job); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%s's ticks counted no_leader: %v, want %v", job, got, want)
		}
	}
}
