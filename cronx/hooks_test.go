package cronx

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
)

// hookCall is one call of a hook, as the hook saw it.
type hookCall struct {
	kind HookKind
	info Info
	err  error
	ctx  context.Context
}

// TestHooksRunOncePerRunAndAreBounded runs a job that fails on its first
// tick and succeeds on its second, on three replicas in claim mode, where
// every replica fires every tick: each run's hook is called once in the
// cluster, by the replica that ran it, with the run's Info and error. A
// failure hook that hangs holds up neither the
// next tick nor its record, and is ended at its timeout on the runner's
// clock; its timeout and a success hook's panic are reported to observers.
func TestHooksRunOncePerRunAndAreBounded(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	boom := errors.New("boom")
	calls := make(chan hookCall, 16)
	failed := make(chan HookFailed, 16)
	job := ContextFunc(func(ctx context.Context) error {
		if info, _ := InfoFrom(ctx); info.Tick.Equal(tick) {
			return boom
		}
		return nil
	})
	onFailure := WithOnFailure(func(ctx context.Context, info Info, err error) error {
		calls <- hookCall{OnFailure, info, err, ctx}
		<-ctx.Done() // hangs until its timeout
		return nil
	})
	onSuccess := WithOnSuccess(func(ctx context.Context, info Info, err error) error {
		calls <- hookCall{OnSuccess, info, err, ctx}
		panic("notifier down")
	})
	pc := newPolicyCluster(t, "hooks", start, ClaimMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("flaky", job, onFailure, onSuccess, WithHookTimeout(30*time.Second)))
	}, WithObserver(Observer{OnHookFailed: func(e HookFailed) { failed <- e }}))

	pc.ready(tick)
	pc.set(tick)
	first := waitHook(t, calls, "the failure hook of the first tick")
	if first.kind != OnFailure || !errors.Is(first.err, boom) || !first.info.Tick.Equal(tick) || first.info.Job != "flaky" || first.info.Fence.Key == "" {
		t.Fatalf("first hook call %s with %+v, %v; want on_failure of flaky's %v with its fence and boom", first.kind, first.info, first.err, tick)
	}
	// The run is recorded, by the replica the hook runs on, while the hook
	// hangs.
	if h := pc.history("flaky", 1); len(h) != 1 || !h[0].Tick.Equal(tick) || h[0].Instance != first.info.Instance || !strings.Contains(h[0].Error, "boom") {
		t.Fatalf("history when the hook was called: %+v, want the failed run of %v on %s", h, tick, first.info.Instance)
	}
	noHook(t, calls, 300*time.Millisecond, "a second call for the first tick")

	// The next tick runs, and is recorded, while the failure hook hangs.
	next := tick.Add(time.Minute)
	pc.ready(next)
	pc.set(next)
	second := waitHook(t, calls, "the success hook of the second tick")
	if second.kind != OnSuccess || second.err != nil || !second.info.Tick.Equal(next) {
		t.Fatalf("second hook call %s with %+v, %v; want on_success of %v with no error", second.kind, second.info, second.err, next)
	}
	if h := pc.history("flaky", 2); !h[0].Tick.Equal(next) && !h[1].Tick.Equal(next) {
		t.Fatalf("history %+v has no run of %v", h, next)
	}
	// The minute passed ended the failure hook, 30s after its run.
	select {
	case <-first.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the failure hook's context did not end at its 30s timeout")
	}
	if cause := context.Cause(first.ctx); !errors.Is(cause, ErrHookTimeout) {
		t.Errorf("the hook's context ended with %v, want ErrHookTimeout", cause)
	}
	got := map[HookKind]HookFailed{}
	for len(got) < 2 {
		select {
		case e := <-failed:
			got[e.Hook] = e
		case <-time.After(10 * time.Second):
			t.Fatalf("hook failures reported: %+v, want the failure hook's timeout and the success hook's panic", got)
		}
	}
	if e := got[OnFailure]; !errors.Is(e.Err, ErrHookTimeout) || !e.Tick.Equal(tick) || e.Job != "flaky" || e.Instance != first.info.Instance || e.Scheduler != "hooks" {
		t.Errorf("failure hook reported as %+v, want its timeout on %s for %v", e, first.info.Instance, tick)
	}
	if e := got[OnSuccess]; e.Err == nil || !strings.Contains(e.Err.Error(), "notifier down") || !e.Tick.Equal(next) || e.Instance != second.info.Instance {
		t.Errorf("success hook reported as %+v, want its panic on %s for %v", e, second.info.Instance, next)
	}
	noHook(t, calls, 300*time.Millisecond, "a second call for the second tick")
}

// TestHookOptionErrors checks that a nil hook and a timeout of 0 or less
// are errors naming the job and the option.
func TestHookOptionErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opt  JobOption
		want string
	}{
		{WithOnFailure(nil), "WithOnFailure(nil)"},
		{WithOnSuccess(nil), "WithOnSuccess(nil)"},
		{WithHookTimeout(0), "WithHookTimeout(0s)"},
	} {
		_, err := New().AddJob("* * * * *", Named("report", FuncJob(func() {}), tc.opt))
		if err == nil || !strings.Contains(err.Error(), `job "report"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AddJob with %s: %v, want an error naming the job and the option", tc.want, err)
		}
	}
}

func waitHook(t *testing.T, ch <-chan hookCall, what string) hookCall {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(15 * time.Second):
		t.Fatalf("no hook call within 15s: %s", what)
		return hookCall{}
	}
}

func noHook(t *testing.T, ch <-chan hookCall, d time.Duration, what string) {
	t.Helper()
	select {
	case c := <-ch:
		t.Fatalf("%s: %s called on %s for %v", what, c.kind, c.info.Instance, c.info.Tick)
	case <-time.After(d):
	}
}

// TestHookFollowsTheLastAttempt: a job whose first attempt fails and whose
// retry succeeds calls its success hook once, with the second attempt's
// Info, and its failure hook never: a hook is told of the run, not of each
// attempt.
func TestHookFollowsTheLastAttempt(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 2, 10, 0, 30, 0, time.UTC)
	tick := start.Truncate(time.Minute).Add(time.Minute)
	runs := make(chan started, 16)
	calls := make(chan hookCall, 16)
	job := ContextFunc(func(ctx context.Context) error {
		info, _ := InfoFrom(ctx)
		runs <- started{info, ctx}
		if info.Attempt == 1 {
			return errors.New("first attempt failed")
		}
		return nil
	})
	record := func(kind HookKind) Hook {
		return func(ctx context.Context, info Info, err error) error {
			calls <- hookCall{kind, info, err, ctx}
			return nil
		}
	}
	pc := newPolicyCluster(t, "hookretry", start, LeaderMode, func(id string, c *Cron) {
		mustAdd(t, c, "* * * * *", Named("flaky", job, WithRetries(2, 30*time.Second)))
	}, WithJobOptions(WithOnFailure(record(OnFailure)), WithOnSuccess(record(OnSuccess))))
	pc.ready(tick)
	pc.set(tick)
	first := waitStart(t, runs, "first attempt")
	noHook(t, calls, 300*time.Millisecond, "a hook after the first attempt, with a retry to come")
	runner := pc.fake(first.info.Instance)
	pc.waitDue(runner, tick.Add(30*time.Second), "the backoff")
	pc.set(tick.Add(30 * time.Second))
	waitStart(t, runs, "second attempt")
	c := waitHook(t, calls, "the success hook after the second attempt")
	if c.kind != OnSuccess || c.err != nil || c.info.Attempt != 2 || !c.info.Tick.Equal(tick) || c.info.Instance != first.info.Instance {
		t.Errorf("hook %s with %+v, %v; want on_success of attempt 2 of %v on %s", c.kind, c.info, c.err, tick, first.info.Instance)
	}
	noHook(t, calls, 300*time.Millisecond, "a second hook of the run")
}

// TestStopsContextWaitsForAHook: a hook called at a run's end is part of
// the Cron's work, so Stop's context is done only once it has returned,
// and the caller may close the client or exit then.
func TestStopsContextWaitsForAHook(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Shared(t)
	fake := clock.NewFake(t0)
	called := make(chan struct{})
	release := make(chan struct{})
	c := newFakeCron(t, fake, fake, WithSeconds(), WithEtcd(srv.Client(t)), WithName("stophook"),
		WithElection(election.WithIdentity("a"), election.WithTTL(stallTTL)))
	mustAdd(t, c.Cron, "* * * * * *", Named("failing", ContextFunc(func(context.Context) error { return errors.New("boom") }),
		WithOnFailure(func(context.Context, Info, error) error {
			select {
			case called <- struct{}{}:
			default:
			}
			<-release
			return nil
		})))
	c.Start()
	tick := t0.Add(time.Second)
	if !fake.WaitDueBy(tick, wait) {
		t.Fatal("no timer armed for the first tick")
	}
	fake.Set(tick)
	select {
	case <-called:
	case <-time.After(wait):
		t.Fatal("the failure hook was not called")
	}
	done := c.Stop()
	select {
	case <-done.Done():
		close(release)
		t.Fatal("Stop's context was done while a hook was being called")
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case <-done.Done():
	case <-time.After(wait):
		t.Fatal("Stop's context not done after the hook returned")
	}
}
