package cronx

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Hook is told of a run's end: the run's Info (its last attempt's, for a
// job with WithRetries) and the error it returned, nil for a success. Its
// context ends at the hook's timeout (WithHookTimeout), with
// ErrHookTimeout as the cause. The error it returns, like a panic in it, is
// logged and reported to observers (OnHookFailed); neither changes the
// run's record.
type Hook func(ctx context.Context, info Info, err error) error

// DefaultHookTimeout bounds a hook when the job has no WithHookTimeout: long
// enough for a notification's HTTP request or a short script, short enough
// that a hook that hangs is reported within the minute.
const DefaultHookTimeout = time.Minute

// ErrHookTimeout is the cause of a hook's context once its timeout has
// passed, and the error reported for a hook that returned after it.
var ErrHookTimeout = errors.New("cronx: hook timed out")

// hooks is a job's WithOnFailure, WithOnSuccess and WithHookTimeout. A
// policy is compared and shared by value (policies.intern) and a function
// cannot be compared, so the policy holds a hooks by pointer: the one an
// option made, shared by every job given that option.
type hooks struct {
	onFailure Hook
	onSuccess Hook
	timeout   time.Duration // 0: DefaultHookTimeout
}

// HookKind names a hook in logs, events and metric labels.
type HookKind string

// The hooks a job can have.
const (
	OnFailure HookKind = "on_failure"
	OnSuccess HookKind = "on_success"
)

// WithOnFailure calls h at the end of each of the job's runs that failed:
// a ContextJob that returned an error (a timeout, a lost claim, a
// replacement or Shutdown included), after its last attempt when it has
// WithRetries. The replica that ran the tick calls it, once, so a cluster
// calls it once per run. It is called once the run is handed to its
// record, in a goroutine of its own, so it delays neither the job's next
// tick nor the history. Stop's context is done once the hooks called have
// returned; Shutdown ends their contexts, as it does the runs', with
// ErrShutdown. Hooks are part of coordinated runs: a Cron without etcd
// calls none.
func WithOnFailure(h Hook) JobOption {
	return withHook(OnFailure, h)
}

// WithOnSuccess calls h at the end of each of the job's runs that
// succeeded, as WithOnFailure does for a failure.
func WithOnSuccess(h Hook) JobOption {
	return withHook(OnSuccess, h)
}

// WithHookTimeout bounds each call of the job's hooks to d, from the
// moment the run ended; the default is DefaultHookTimeout. A hook must
// return when its context ends; one that returns later is reported as
// failed with ErrHookTimeout.
func WithHookTimeout(d time.Duration) JobOption {
	return func(p *policyDraft) {
		if d <= 0 {
			p.errs = append(p.errs, fmt.Errorf("WithHookTimeout(%s): want a duration above 0", d))
			return
		}
		p.hooks = p.hooks.with(func(h *hooks) { h.timeout = d })
	}
}

// withHook is the option that sets the job's hook of kind to h.
func withHook(kind HookKind, h Hook) JobOption {
	return func(p *policyDraft) {
		if h == nil {
			p.errs = append(p.errs, fmt.Errorf("With%s(nil): want a function", kind.option()))
			return
		}
		p.hooks = p.hooks.with(func(hs *hooks) {
			if kind == OnFailure {
				hs.onFailure = h
			} else {
				hs.onSuccess = h
			}
		})
	}
}

// option is the name of the option that sets a hook of kind.
func (kind HookKind) option() string {
	if kind == OnFailure {
		return "OnFailure"
	}
	return "OnSuccess"
}

// with returns a copy of hs (none: a zero one) changed by set. Policies
// share a hooks, so one is never changed once made.
func (hs *hooks) with(set func(*hooks)) *hooks {
	var h hooks
	if hs != nil {
		h = *hs
	}
	set(&h)
	return &h
}

// kinds are the hooks hs has, for the series of a job's hook failures.
func (hs *hooks) kinds() []HookKind {
	var out []HookKind
	if hs != nil && hs.onFailure != nil {
		out = append(out, OnFailure)
	}
	if hs != nil && hs.onSuccess != nil {
		out = append(out, OnSuccess)
	}
	return out
}

// HookFailed is a hook of a job that returned an error, panicked or
// outlived its timeout, on the replica that ran the run.
type HookFailed struct {
	Scheduler string
	Job       string
	Tick      time.Time
	Instance  string
	Hook      HookKind
	// Err is what the hook returned, its panic, or ErrHookTimeout.
	Err error
}

// callHook is the hook step at the end of a run's life: r's last attempt,
// with info, ended with err. The hook for that outcome, if the job has
// one, is called in the background, bounded by its timeout; the Cron's
// background work counts it, so Stop waits for it.
func callHook(r *run, info Info, err error) {
	hs := r.job.policy.hooks
	if hs == nil {
		return
	}
	kind, h := OnSuccess, hs.onSuccess
	if err != nil {
		kind, h = OnFailure, hs.onFailure
	}
	if h == nil {
		return
	}
	co := r.co
	d := hs.timeout
	if d == 0 {
		d = DefaultHookTimeout
	}
	co.work.add() // mutation:hook-awaited
	go func() {
		defer co.work.done() // mutation:hook-awaited-done
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		defer r.rs.hookCalled(cancel)()
		t := co.clock.NewTimer(d)
		defer t.Stop()
		returned := make(chan struct{})
		defer close(returned)
		go func() {
			select {
			case <-t.C():
				cancel(ErrHookTimeout) // mutation:hook-timeout
			case <-returned:
			}
		}()
		herr := runHook(ctx, h, info, err)
		if herr == nil && context.Cause(ctx) == ErrHookTimeout {
			herr = fmt.Errorf("%w after %s", ErrHookTimeout, d)
		}
		if herr == nil {
			return
		}
		co.logger.Error(herr, "cronx: a hook failed", "job", r.job.name, "tick", r.tick, "hook", string(kind))
		if co.rep.observed() {
			co.rep.emit(HookFailed{Scheduler: co.scope.name, Job: r.job.name, Tick: r.tick, Instance: co.identity, Hook: kind, Err: herr})
		}
	}()
}

// runHook calls h, and returns its panic as an error.
func runHook(ctx context.Context, h Hook, info Info, runErr error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			_, perr := panicked(p)
			err = fmt.Errorf("panic: %w", perr)
		}
	}()
	return h(ctx, info, runErr)
}
