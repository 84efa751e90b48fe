package cronx

import "time"

// fire starts one run of e for the nominal tick time tick: the Next that came
// due, never the wake-up time, so that every replica names a tick alike.
// Every run of every job starts here, so that a check which must come before
// a run, such as a cluster-wide claim of the tick, has one place to go.
//
// fire is called by the run loop and must not block it: anything slow
// belongs in the goroutine. It reads what it needs from e before returning,
// because the loop goes on to update e.
func (c *Cron) fire(e *Entry, tick time.Time) {
	if c.fireHook != nil {
		c.fireHook(*e, tick)
	}
	if c.coord != nil {
		c.coord.fire(e, tick, false)
		return
	}
	job, name := e.WrappedJob, e.name
	c.jobWaiter.add()
	go func() {
		defer c.jobWaiter.done()
		if len(c.observers) > 0 {
			c.runLocal(name, job, tick)
			return
		}
		job.Run()
	}()
}
