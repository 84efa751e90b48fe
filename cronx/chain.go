package cronx

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// JobWrapper adds a behaviour to a job: it returns a Job that runs j in some
// way.
type JobWrapper func(Job) Job

// Chain is a list of JobWrappers that together decorate a job, for
// behaviours that cut across jobs, such as recovering panics or preventing
// overlapping runs.
type Chain struct {
	wrappers []JobWrapper
}

// NewChain returns a Chain of wrappers, the first outermost.
func NewChain(wrappers ...JobWrapper) Chain {
	return Chain{wrappers: wrappers}
}

// Then returns j decorated by the chain's wrappers, so that
// NewChain(a, b, c).Then(j) is a(b(c(j))).
func (c Chain) Then(j Job) Job {
	for i := len(c.wrappers) - 1; i >= 0; i-- {
		j = c.wrappers[i](j)
	}
	return j
}

// Recover returns a wrapper that stops a panic in the job from reaching the
// scheduler (and crashing the program), and logs it with its stack to
// logger as an error.
func Recover(logger Logger) JobWrapper {
	return func(j Job) Job {
		return ContextFunc(func(ctx context.Context) (runErr error) {
			defer func() {
				r := recover()
				if r == nil {
					return
				}
				err, ok := r.(error)
				if !ok {
					err = fmt.Errorf("%v", r)
				}
				runErr = fmt.Errorf("panic: %w", err)
				logger.Error(err, "panic", "stack", "...\n"+string(debug.Stack()))
			}()
			return runJob(ctx, j)
		})
	}
}

// DelayIfStillRunning returns a wrapper that serializes the runs of a job: a
// run that comes due while the previous one is in progress waits for it to
// finish. A wait longer than a minute is logged to logger.
func DelayIfStillRunning(logger Logger) JobWrapper {
	return func(j Job) Job {
		var mu sync.Mutex
		return ContextFunc(func(ctx context.Context) error {
			queued := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if waited := time.Since(queued); waited > time.Minute {
				logger.Info("delay", "duration", waited)
			}
			return runJob(ctx, j)
		})
	}
}

// SkipIfStillRunning returns a wrapper that drops a run which comes due while
// the previous one is in progress, and logs the skip to logger.
func SkipIfStillRunning(logger Logger) JobWrapper {
	return func(j Job) Job {
		var running atomic.Bool
		return ContextFunc(func(ctx context.Context) error {
			if !running.CompareAndSwap(false, true) {
				logger.Info("skip")
				return nil
			}
			// Deferred so that a run that panics does not make every later
			// run look overlapping.
			defer running.Store(false)
			return runJob(ctx, j)
		})
	}
}
