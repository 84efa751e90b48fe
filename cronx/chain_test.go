package cronx

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	cron "github.com/robfig/cron/v3"
)

type ctxKey struct{}

// This package's wrappers hand a ContextJob its run's context and give back
// its error; robfig/cron's, which call Run, cannot: the job gets a
// background context and its error is lost.
func TestWrappersPassTheContext(t *testing.T) {
	t.Parallel()
	wrappers := []struct {
		name      string
		wrap      JobWrapper
		keepsCtx  bool
		wantError string
	}{
		{"Recover", Recover(DiscardLogger), true, "boom"},
		{"DelayIfStillRunning", DelayIfStillRunning(DiscardLogger), true, "boom"},
		{"SkipIfStillRunning", SkipIfStillRunning(DiscardLogger), true, "boom"},
		{"cron.Recover", cron.Recover(DiscardLogger), false, ""},
		{"cron.DelayIfStillRunning", cron.DelayIfStillRunning(DiscardLogger), false, ""},
		{"cron.SkipIfStillRunning", cron.SkipIfStillRunning(DiscardLogger), false, ""},
	}
	for _, w := range wrappers {
		t.Run(w.name, func(t *testing.T) {
			var seen any
			job := NewChain(w.wrap).Then(Named("job", ContextFunc(func(ctx context.Context) error {
				seen = ctx.Value(ctxKey{})
				return errors.New("boom")
			})))
			err := runJob(context.WithValue(context.Background(), ctxKey{}, "run"), job)
			if got := seen == "run"; got != w.keepsCtx {
				t.Errorf("the job saw its run's context: %v, want %v", got, w.keepsCtx)
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != w.wantError {
				t.Errorf("run error = %q, want %q", got, w.wantError)
			}
			if plainJob(job) == w.keepsCtx {
				t.Errorf("plainJob = %v: coordination would bind the context of a job that cannot see it, or not bind one that can", plainJob(job))
			}
		})
	}
}

// Recover makes a ContextJob's panic its run's error, and logs it as
// robfig/cron's Recover does.
func TestRecoverContextJobPanic(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	job := Recover(PrintfLogger(log.New(&out, "", 0)))(ContextFunc(func(context.Context) error { panic("disk full") }))
	err := runJob(context.Background(), job)
	if err == nil || err.Error() != "panic: disk full" {
		t.Errorf("run error = %v, want panic: disk full", err)
	}
	if got := out.String(); !strings.HasPrefix(got, "panic, error=disk full, stack=...\n") {
		t.Errorf("log = %q, want the panic with its stack", got)
	}
}

// SkipIfStillRunning skips a ContextJob's run while one is in progress, and
// runs it again once that one returned, even by a panic.
func TestSkipIfStillRunningContextJob(t *testing.T) {
	t.Parallel()
	release, started := make(chan struct{}), make(chan struct{})
	runs := 0
	job := Recover(DiscardLogger)(SkipIfStillRunning(DiscardLogger)(ContextFunc(func(context.Context) error {
		runs++
		if runs == 1 {
			close(started)
			<-release
			panic("first run")
		}
		return nil
	})))
	first := make(chan error)
	go func() { first <- runJob(context.Background(), job) }()
	<-started
	if err := runJob(context.Background(), job); err != nil || runs != 1 {
		t.Fatalf("a run while one is in progress: error %v, runs %d; want it skipped", err, runs)
	}
	close(release)
	if err := <-first; err == nil {
		t.Fatal("the first run's panic was not its error")
	}
	if err := runJob(context.Background(), job); err != nil || runs != 2 {
		t.Fatalf("a run after a panicking one: error %v, runs %d; want it run", err, runs)
	}
}

// Under coordination a job wrapped by this package's chain learns its run
// and has its error recorded; behind robfig/cron's wrapper it still runs,
// once per tick, but with neither.
func TestChainUnderCoordination(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	for _, tt := range []struct {
		name      string
		wrap      JobWrapper
		wantInfo  bool
		wantError string
	}{
		{"cronx", Recover(DiscardLogger), true, "boom"},
		{"robfig", cron.Recover(DiscardLogger), false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			infos := make(chan bool, 16)
			c := New(WithSeconds(), WithEtcd(cli), WithName("chain-"+tt.name), WithChain(tt.wrap), WithLogger(DiscardLogger),
				WithElection(election.WithIdentity("web-1"), election.WithTTL(2*time.Second)))
			mustAdd(t, c, "* * * * * *", Named("job", ContextFunc(func(ctx context.Context) error {
				_, ok := InfoFrom(ctx)
				infos <- ok
				return errors.New("boom")
			})))
			c.Start()
			defer func() { <-c.Stop().Done() }()
			select {
			case ok := <-infos:
				if ok != tt.wantInfo {
					t.Errorf("InfoFrom found run info: %v, want %v", ok, tt.wantInfo)
				}
			case <-time.After(8 * time.Second):
				t.Fatal("the job did not run within 8s")
			}
			eventually(t, 5*time.Second, func() (bool, string) {
				st, err := c.Status(context.Background())
				if err != nil {
					return false, err.Error()
				}
				js, _ := jobStatus(st, "job")
				if len(js.History) == 0 {
					return false, "no run recorded"
				}
				if got := js.History[0].Error; got != tt.wantError {
					return false, fmt.Sprintf("recorded error %q, want %q", got, tt.wantError)
				}
				return true, ""
			})
		})
	}
}
