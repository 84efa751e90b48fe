package cronx

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

// signalHandler is a slog handler that reports each record's message.
type signalHandler struct{ msgs chan string }

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.msgs <- r.Message:
	default:
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

// TestForbidJobRunsAgainAfterItsMarkersReleaseFailed: a Forbid run that
// ends while etcd is down cannot delete its in-progress marker then (nor,
// unless etcd took it first, record its end, with which the marker goes);
// once etcd is back the marker goes, and the job runs again, although the
// replica's session (and the marker's lease) lived through the outage.
func TestForbidJobRunsAgainAfterItsMarkersReleaseFailed(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	logs := signalHandler{msgs: make(chan string, 256)}
	starts := make(chan Info, 64)
	release := make(chan struct{})
	var held atomic.Bool
	job := func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		starts <- info
		if held.CompareAndSwap(false, true) {
			<-release
		}
		return nil
	}
	// A TTL that outlives the outage: the session stays, and with it the
	// marker's lease.
	c := New(WithSeconds(), WithEtcd(cli), WithName("marker"), WithMode(ClaimMode), WithSlog(slog.New(logs)),
		WithElection(election.WithIdentity("a"), election.WithTTL(20*time.Second)))
	mustAdd(t, c, "* * * * * *", Named("slow", ContextFunc(job), WithOverlap(Forbid)))
	c.Start()
	t.Cleanup(func() { <-c.Stop().Done() })
	var run Info
	select {
	case run = <-starts:
	case <-time.After(10 * time.Second):
		t.Fatal("no run within 10s")
	}
	srv.Kill()
	close(release)
	deadline := time.After(15 * time.Second)
	for failed := false; !failed; {
		select {
		case msg := <-logs.msgs:
			// The record fails, or, taken as etcd died, the release.
			failed = strings.Contains(msg, "not recorded in their jobs' histories yet") || strings.Contains(msg, "release run marker")
		case <-deadline:
			t.Fatal("neither the record of the run nor its marker's release failed within 15s of etcd's death")
		}
	}
	srv.Restart(t)
	next := runAfter(t, starts, run.Tick, 15*time.Second, "run of slow after etcd came back")
	t.Logf("ran %v, then %v after etcd came back", run.Tick.Format(time.TimeOnly), next.Tick.Format(time.TimeOnly))
}
