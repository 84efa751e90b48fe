package cronx

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fencedWrite is a job that works until work is closed and ends with a
// write guarded by its fence, and reports the write's outcome. It ignores
// its context, as a job whose work must finish does (and as a paused
// process cannot help doing).
func fencedWrite(cli *clientv3.Client, started chan<- Info, work <-chan struct{}, wrote chan<- error) ContextFunc {
	return func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		started <- info
		<-work
		wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := cli.Txn(wctx).If(info.Fence.Cmp()).Then(clientv3.OpPut("/app/out", info.Tick.String())).Commit()
		if err == nil && !resp.Succeeded {
			err = fmt.Errorf("refused: fence %v is not current", info.Fence)
		}
		wrote <- err
		return nil
	}
}

// TestRunFinishingAfterResignCanStillWrite is the rule between G2 and G3: a
// leader stopped in the middle of a run (SIGTERM in a deploy) resigns at
// once, and the run, which G3 lets finish, can still make its fenced write;
// its fence is its run's, not the term given up.
func TestRunFinishingAfterResignCanStillWrite(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	started, wrote, work := make(chan Info, 16), make(chan error, 16), make(chan struct{})
	crons := map[string]*Cron{}
	for _, id := range []string{"a", "b"} {
		// Leadership changes hands by Stop: a loaded machine must not
		// lapse the run's marker under a short TTL (stallTTL).
		c := New(WithSeconds(), WithEtcd(srv.Client(t)), WithName("fence"),
			WithElection(election.WithIdentity(id), election.WithTTL(stallTTL)))
		mustAdd(t, c, "*/5 * * * * *", Named("export", fencedWrite(cli, started, work, wrote)))
		c.Start()
		crons[id] = c
		t.Cleanup(func() { <-c.Stop().Done() })
	}
	var run Info
	select {
	case run = <-started:
	case <-time.After(15 * time.Second):
		t.Fatal("no run within 15s")
	}
	st, err := crons[run.Instance].Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	term := st.Leader.Fence
	stopped := crons[run.Instance].Stop()
	// The term is given up at once, while the run goes on; then it ends.
	eventually(t, 5*time.Second, func() (bool, string) {
		ok, err := term.Valid(context.Background(), cli)
		return err == nil && !ok, "the stopped leader had not resigned"
	})
	close(work)
	select {
	case err := <-wrote:
		if err != nil {
			t.Errorf("the run that finished after its leader resigned could not write: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not finish within 10s")
	}
	<-stopped.Done()
	// Once the run has ended, its fence guards nothing.
	if ok, err := run.Fence.Valid(context.Background(), cli); err != nil || ok {
		t.Errorf("the fence of a run that ended is still valid (err %v)", err)
	}
}

// TestDeposedLeadersRunCannotWrite is G2 for a leader paused in the middle
// of a run: cut off from etcd for longer than its TTL, it is deposed and its
// lease expires; when it comes back its run's fenced write fails.
func TestDeposedLeadersRunCannotWrite(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	proxy := etcdtest.NewProxy(t, srv.Addr())
	started, wrote, work := make(chan Info, 16), make(chan error, 16), make(chan struct{})
	a := New(WithSeconds(), WithEtcd(srv.NewClient(t, proxy.Endpoint())), WithName("fence"),
		WithElection(election.WithIdentity("a"), election.WithTTL(2*time.Second)))
	mustAdd(t, a, "* * * * * *", Named("export", fencedWrite(cli, started, work, wrote)))
	a.Start()
	t.Cleanup(func() { <-a.Stop().Done() })
	// A bound, not a wait: the first run comes within a few seconds, but
	// once took longer than 15 s with the whole package beside two busy
	// loops, where a 2 s TTL's keepalives are late.
	var run Info
	select {
	case run = <-started:
	case <-time.After(time.Minute):
		t.Fatal("no run within a minute")
	}
	if run.Instance != "a" {
		t.Fatalf("the first run was on %s, want a", run.Instance)
	}
	proxy.Blackhole()
	// Until a's lease has expired, as a pause longer than the TTL lets it.
	eventually(t, 10*time.Second, func() (bool, string) {
		ok, err := run.Fence.Valid(context.Background(), cli)
		return err == nil && !ok, "a's run's fence is still valid"
	})
	proxy.Pass()
	close(work)
	select {
	case err := <-wrote:
		if err == nil {
			t.Error("the run of a deposed leader made its fenced write")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not finish within 10s")
	}
}
