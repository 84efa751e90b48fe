package cronx

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestRunsEndedWhileEtcdWasOutAreRecordedOnceItAnswers: runs that end
// while etcd does not answer are not given up while the Cron runs: once
// etcd answers, each is in its job's history, once.
func TestRunsEndedWhileEtcdWasOutAreRecordedOnceItAnswers(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	fake := clock.NewFake(t0)
	logs := &lockedBuffer{}
	c := New(withClock(fake), WithLocation(time.UTC), WithSeconds(), WithSlog(slog.New(slog.NewTextHandler(logs, nil))),
		WithEtcd(srv.NewClient(t, proxy.Endpoint())), WithName("recordretry"), WithMode(ClaimMode),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	t.Cleanup(func() {
		proxy.Pass()
		<-c.Stop().Done()
	})
	const n = 3
	started, release := make(chan struct{}, n), make(chan struct{})
	for i := range n {
		mustAdd(t, c, "* * * * * *", Named(fmt.Sprintf("job%d", i), FuncJob(func() {
			started <- struct{}{}
			<-release
		})))
	}
	c.Start()
	tick := t0.Add(time.Second)
	startTick(t, fake, tick, started, n)
	proxy.Blackhole()
	close(release)
	eventually(t, 3*etcdTimeout, func() (bool, string) {
		return strings.Contains(logs.String(), "not recorded in their jobs' histories yet"), "no record has failed yet"
	})
	proxy.Pass()
	eventually(t, 2*etcdTimeout+2*maxReleaseBackoff, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := c.Status(ctx)
		if err != nil {
			return false, err.Error()
		}
		for i := range n {
			job := fmt.Sprintf("job%d", i)
			j, _ := jobStatus(st, job)
			runs := 0
			for _, r := range j.History {
				if r.Tick.Equal(tick) {
					runs++
				}
			}
			if runs != 1 {
				return false, fmt.Sprintf("%s's history holds %d runs of %v, want 1: %+v", job, runs, tick, j.History)
			}
		}
		return true, ""
	})
}
