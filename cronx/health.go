package cronx

import (
	"context"
	"errors"
	"fmt"
)

// ErrNotRunning means the Cron has not been started, or has been stopped.
var ErrNotRunning = errors.New("cronx: not running")

// Alive reports whether the Cron's scheduler loop turns: nil once the loop
// has answered, ErrNotRunning before Start and after Stop, and an error
// wrapping ctx's when the loop did not answer before ctx was done (it is
// stuck, or Stop came meanwhile). A health check calls it with a short
// deadline.
//
// Alive does not read etcd: a coordinated Cron that waits for etcd, or a
// follower that schedules nothing, is alive; ask Status about etcd. It
// costs one turn of the loop and a copy of the entries, like Entries.
func (c *Cron) Alive(ctx context.Context) error {
	c.runningMu.Lock()
	running := c.running
	c.runningMu.Unlock()
	if !running {
		return ErrNotRunning
	}
	// Not under runningMu, as Entries is: a stuck loop must not hold up
	// Stop behind a health check.
	reply := make(chan []Entry, 1)
	select {
	case c.snapshot <- reply:
	case <-ctx.Done():
		return fmt.Errorf("cronx: the scheduler loop did not answer: %w", context.Cause(ctx))
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cronx: the scheduler loop did not answer: %w", context.Cause(ctx))
	}
}
