package cronx

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestPublishedSchedulersJobsAndPause: what an operator's tool lists
// (schedulers under the prefix, a scheduler's jobs, whether one is paused)
// is what the replicas published and what Pause recorded, and nothing of
// another prefix.
func TestPublishedSchedulersJobsAndPause(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := context.Background()
	for _, name := range []string{"web", "billing"} {
		opsReplica(t, cli, name, name+"-1", LeaderMode, newLedger(), func(c *Cron) {
			mustAdd(t, c, "0 0 3 * * *", Named("report", FuncJob(func() {})))
		})
	}
	other := New(WithSeconds(), WithEtcd(cli), WithName("elsewhere"),
		WithElection(election.WithPrefix("/other")))
	mustAdd(t, other, "0 0 3 * * *", Named("x", FuncJob(func() {})))
	other.Start()
	defer func() { <-other.Stop().Done() }()

	ctl, err := NewControl(cli, "", "billing")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() (bool, string) {
		names, err := Schedulers(ctx, cli, "")
		jobs, jerr := ctl.Jobs(ctx)
		ok := err == nil && jerr == nil && slices.Equal(names, []string{"billing", "web"}) &&
			slices.Equal(jobs, []string{"report", "tick"})
		return ok, fmt.Sprintf("schedulers %v (%v), billing's jobs %v (%v)", names, err, jobs, jerr)
	})
	if by, paused, err := ctl.Paused(ctx, "report"); paused || by != "" || err != nil {
		t.Fatalf("before Pause: paused %v by %q, %v", paused, by, err)
	}
	if err := ctl.Pause(ctx, "report", "ops"); err != nil {
		t.Fatal(err)
	}
	if by, paused, err := ctl.Paused(ctx, "report"); !paused || by != "ops" || err != nil {
		t.Fatalf("after Pause: paused %v by %q, %v; want by ops", paused, by, err)
	}
}
