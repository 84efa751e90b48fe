package cronx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/internal/clock"
)

// ErrTimeout is the cause of the context of a run that reached its
// timeout (WithTimeout): context.Cause(ctx) returns it once the deadline
// has passed.
var ErrTimeout = errors.New("cronx: run timed out")

// WithTimeout bounds each run of the job to d, measured from the moment it
// starts: at the deadline its context is cancelled, with ErrTimeout as the
// cause, and the run is recorded in the job's history as timed out. A job
// must return when its context ends; one that does not read it (a plain
// Job) runs on, and is recorded as timed out if it returns after the
// deadline. The default, 0, is no timeout.
func WithTimeout(d time.Duration) JobOption {
	return func(p *policyDraft) {
		if d < 0 {
			p.errs = append(p.errs, fmt.Errorf("WithTimeout(%s): want a duration of 0 (none) or more", d))
			return
		}
		p.timeout = d
	}
}

// runTimeout is the deadline of one run, kept on the Cron's clock.
type runTimeout struct {
	d     time.Duration
	timer clock.Timer
	done  chan struct{} // closed by stop
	fired chan struct{} // closed when the deadline passed first
}

// withRunTimeout returns ctx cancelled with ErrTimeout once d has passed on
// clk, and the timeout, whose stop must be called when the run returns. A
// zero d returns ctx unchanged and a nil timeout.
func withRunTimeout(ctx context.Context, clk clock.Clock, d time.Duration) (context.Context, *runTimeout) {
	if d <= 0 {
		return ctx, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t := &runTimeout{d: d, timer: clk.NewTimer(d), done: make(chan struct{}), fired: make(chan struct{})}
	go func() {
		defer cancel(nil)
		select {
		case <-t.timer.C():
			close(t.fired)
			cancel(ErrTimeout) // mutation:timeout
			<-t.done
		case <-t.done:
			t.timer.Stop()
		}
	}()
	return ctx, t
}

// stop ends the timeout and returns the run's error as recorded: a run that
// outlived its deadline is an ErrTimeout, whatever it returned. A nil
// timeout returns err.
func (t *runTimeout) stop(err error) (timedOut bool, _ error) {
	if t == nil {
		return false, err
	}
	close(t.done)
	select {
	case <-t.fired:
	default:
		return false, err
	}
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		return true, fmt.Errorf("%w after %s", ErrTimeout, t.d)
	}
	return true, fmt.Errorf("%w after %s: %w", ErrTimeout, t.d, err)
}
