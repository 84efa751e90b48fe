package cronx

import (
	"context"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestStatusListsTheJobsWhenNoReplicaRuns: with every replica stopped,
// Status lists the jobs of the last release that published, each not
// scheduled since the last replica's stop, and not a job that the deploy
// before dropped; a replica of the same jobs that leads writes no roster.
func TestStatusListsTheJobsWhenNoReplicaRuns(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{LeaderMode, ClaimMode} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			srv := etcdtest.Shared(t)
			cli := srv.Client(t)
			name := "down"
			up := map[string]*Cron{}
			start := func(id string, jobs ...string) {
				t.Helper()
				c := New(WithLogger(testLogger{t, id}), WithEtcd(cli), WithName(name), WithMode(mode),
					WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
				for _, j := range jobs {
					mustAdd(t, c, "0 0 1 1 *", Named(j, FuncJob(func() {})))
				}
				c.Start()
				up[id] = c
				t.Cleanup(func() { shutdown(t, c, id) })
				if mode == LeaderMode {
					waitCandidates(t, cli, name, int64(len(up)))
				}
			}
			stop := func(id string) {
				t.Helper()
				shutdown(t, up[id], id)
				delete(up, id)
			}
			// published waits until id publishes and has written its round.
			published := func(id string) {
				t.Helper()
				c := up[id]
				deadline := time.Now().Add(15 * time.Second)
				for {
					if _, ok := c.coord.publishing(); ok && specsWritten(c) {
						resp, err := cli.Get(context.Background(), c.coord.keys.Roster(), clientv3.WithPrefix())
						if err == nil && len(resp.Kvs) > 0 {
							return
						}
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s has not published within 15s", id)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			k, err := NewControl(cli, "", name)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			listed := func() map[string]JobStatus {
				t.Helper()
				st, err := k.Status(ctx)
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]JobStatus{}
				for _, j := range st.Jobs {
					out[j.Name] = j
				}
				return out
			}
			rosterRev := func() int64 {
				t.Helper()
				resp, err := cli.Get(ctx, k.keys.RosterJobs())
				if err != nil || len(resp.Kvs) != 1 {
					t.Fatalf("the roster: %v, %v", resp, err)
				}
				return resp.Kvs[0].ModRevision
			}

			start("a", "keep", "dropped")
			published("a")
			start("b", "keep", "dropped")
			if mode == ClaimMode {
				published("b")
			}
			rev := rosterRev()
			// The deploy: c has keep and added, not dropped.
			start("c", "keep", "added")
			stop("a")
			if mode == LeaderMode {
				published("b") // b leads, with a's jobs: no roster written
				if now := rosterRev(); now != rev {
					t.Errorf("b, with a's jobs, wrote the roster again (revision %d, was %d)", now, rev)
				}
			}
			stop("b")
			published("c")
			if got := listed(); len(got) != 2 || !got["keep"].NotScheduledSince.IsZero() || !got["added"].NotScheduledSince.IsZero() {
				t.Fatalf("while c runs: %+v, want keep and added, scheduled", got)
			}
			before := time.Now()
			stop("c")
			after := time.Now()
			got := listed()
			if _, ok := got["dropped"]; ok || len(got) != 2 {
				t.Fatalf("every replica stopped: %+v, want keep and added alone", got)
			}
			for _, j := range []string{"keep", "added"} {
				since := got[j].NotScheduledSince
				if since.Before(before) || since.After(after) || got[j].Spec != "0 0 1 1 *" {
					t.Errorf("%s: not scheduled since %v, spec %q; want c's stop, between %v and %v", j, since, got[j].Spec, before, after)
				}
			}
		})
	}
}

// TestStatusListsTheJobsAfterEveryReplicaDied: a replica that dies records
// no stop; once its leases have expired, Status lists its jobs all the
// same, not scheduled since the last thing etcd has of it: here its run's
// end, later than its roster.
func TestStatusListsTheJobsAfterEveryReplicaDied(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits on the wall clock for leases to lapse or etcd to come back; the full tier runs it")
	}
	srv := etcdtest.Shared(t)
	// The replica's client goes through a proxy that is cut as it dies;
	// the reader's does not.
	proxy := etcdtest.NewProxy(t, srv.Addr())
	own, cli := srv.NewClient(t, proxy.Endpoint()), srv.Client(t)
	ran := make(chan struct{}, 1)
	c := New(WithEtcd(own), WithName("died"), WithLogger(testLogger{t, "a"}),
		WithElection(election.WithIdentity("a"), election.WithTTL(2*time.Second)))
	mustAdd(t, c, "0 0 1 1 *", Named("report", FuncJob(func() { ran <- struct{}{} })))
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	k, err := NewControl(cli, "", "died")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	report := func() (JobStatus, bool) {
		t.Helper()
		st, err := k.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range st.Jobs {
			if j.Name == "report" {
				return j, true
			}
		}
		return JobStatus{}, false
	}
	eventually(t, 10*time.Second, func() (bool, string) {
		_, ok := report()
		return ok, "report not listed"
	})
	if err := c.Trigger(ctx, "report"); err != nil {
		t.Fatal(err)
	}
	<-ran
	var j JobStatus
	eventually(t, 10*time.Second, func() (bool, string) {
		j, _ = report()
		return len(j.History) == 1, "the run not recorded"
	})
	h := j.History[0]
	proxy.Blackhole() // a's leases are neither revoked nor kept alive
	eventually(t, 15*time.Second, func() (bool, string) {
		j, _ = report()
		return !j.NotScheduledSince.IsZero(), "report not marked once a's leases expired"
	})
	if want := h.Start.Add(h.Duration); !j.NotScheduledSince.Equal(want) || j.Spec != "0 0 1 1 *" {
		t.Errorf("not scheduled since %v, spec %q; want the run's end, %v", j.NotScheduledSince, j.Spec, want)
	}
}
