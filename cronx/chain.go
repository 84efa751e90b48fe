package cronx

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	cron "github.com/robfig/cron/v3"
)

// The wrappers below are robfig/cron's for a plain Job, which they hand to
// cron.Recover, cron.DelayIfStillRunning and cron.SkipIfStillRunning as it
// is. robfig's wrappers call Run, which drops a ContextJob's context, so for
// a ContextJob they are context-carrying equivalents: the run's context
// (its cancellation under coordination, and InfoFrom) reaches the job, and
// the job's error reaches the run history. A robfig wrapper put in a
// Cron's chain by the program cannot do that: the jobs inside it run with a
// background context and their errors are not recorded.

// Recover returns a wrapper that stops a panic in the job from reaching the
// scheduler (and crashing the program), and logs it with its stack to
// logger as an error. For a ContextJob the panic is also the run's error.
func Recover(logger Logger) JobWrapper {
	plain := cron.Recover(logger)
	return func(j Job) Job {
		if _, ok := j.(ContextJob); !ok {
			return plain(j)
		}
		return ContextFunc(func(ctx context.Context) (runErr error) {
			defer func() {
				r := recover()
				if r == nil {
					return
				}
				stack, err := panicked(r)
				runErr = fmt.Errorf("panic: %w", err)
				logger.Error(err, "panic", "stack", stack)
			}()
			return runJob(ctx, j)
		})
	}
}

// panicked is the error that the recovered panic r is, or says, and the
// stack of the goroutine that recovered it, as robfig's Recover logs them.
func panicked(r any) (stack string, err error) {
	err, ok := r.(error)
	if !ok {
		err = fmt.Errorf("%v", r)
	}
	buf := make([]byte, 64<<10)
	buf = buf[:runtime.Stack(buf, false)]
	return "...\n" + string(buf), err
}

// DelayIfStillRunning returns a wrapper that serializes the runs of a job: a
// run that comes due while the previous one is in progress waits for it to
// finish. A wait longer than a minute is logged to logger.
func DelayIfStillRunning(logger Logger) JobWrapper {
	plain := cron.DelayIfStillRunning(logger)
	return func(j Job) Job {
		if _, ok := j.(ContextJob); !ok {
			return plain(j)
		}
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
	plain := cron.SkipIfStillRunning(logger)
	return func(j Job) Job {
		if _, ok := j.(ContextJob); !ok {
			return plain(j)
		}
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
