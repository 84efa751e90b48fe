package cronx

import (
	"context"
	"time"
)

// The Cron's cluster-wide operations, each through its Control (control.go).

// control returns the Cron's Control, or ErrNotCoordinated, and a func to
// call when done with it.
func (c *Cron) control(ctx context.Context) (*Control, func(), error) {
	if c.coord == nil {
		if c.coordErr != nil {
			return nil, nil, c.coordErr
		}
		return nil, nil, ErrNotCoordinated
	}
	cli, release, err := c.coord.conn.controlClient(ctx)
	if err != nil {
		return nil, nil, err
	}
	return &Control{client: cli, prefix: c.coord.prefix, scheduler: c.coord.name, keys: c.coord.keys}, release, nil
}

// Pause stops job from starting on every replica until Resume.
func (c *Cron) Pause(ctx context.Context, job string) error {
	k, release, err := c.control(ctx)
	if err != nil {
		return err
	}
	defer release()
	return k.Pause(ctx, job, c.coord.identity)
}

// Resume lets job run again on every replica.
func (c *Cron) Resume(ctx context.Context, job string) error {
	k, release, err := c.control(ctx)
	if err != nil {
		return err
	}
	defer release()
	return k.Resume(ctx, job)
}

// Trigger runs job once now, on whichever replica schedules it.
func (c *Cron) Trigger(ctx context.Context, job string) error {
	k, release, err := c.control(ctx)
	if err != nil {
		return err
	}
	defer release()
	return k.Trigger(ctx, job, c.coord.identity)
}

// Status reports the scheduler's leader and each job's last and next run and
// history. It returns ErrNotCoordinated only for a Cron without etcd, and
// ErrEtcdUnreachable while a started Cron cannot reach the etcd of its
// environment.
func (c *Cron) Status(ctx context.Context) (Status, error) {
	k, release, err := c.control(ctx)
	if err != nil {
		return Status{}, err
	}
	defer release()
	st, err := k.Status(ctx)
	if err != nil {
		return st, err
	}
	// A follower does not schedule, so its entries keep the Next they had
	// when it started or last led; the schedule still says when the job runs.
	now := c.now()
	next := map[string]time.Time{}
	for _, e := range c.Entries() {
		next[e.name] = e.Next
		if !e.Next.After(now) {
			next[e.name] = e.Schedule.Next(now)
		}
	}
	for i := range st.Jobs {
		st.Jobs[i].Next = next[st.Jobs[i].Name]
	}
	return st, nil
}
