package cronx

import (
	"time"

	"github.com/batonhq/baton/internal/clock"
)

// idleWait is how long the loop sleeps when no entry has a next run; it only
// needs to outlast any real wait, since adds, removes and Stop wake it.
const idleWait = 100000 * time.Hour

// run is the scheduler. It owns c.entries until Stop: other goroutines reach
// them only through the add, remove and snapshot channels.
//
// Each entry's Next is its nominal tick, computed by its Schedule. The loop
// sleeps until the earliest Next, then starts every entry whose Next has
// come, through fire with that Next, and computes each one's following Next
// from the wake-up time. So a tick is named by the schedule, not by when the
// process happened to wake up; and, as in robfig/cron, a scheduler that wakes
// up late runs each late entry once rather than once per missed tick.
func (c *Cron) run() {
	c.logger.Info("start")
	now := c.now()
	for _, e := range c.entries {
		e.Next = e.Schedule.Next(now)
		c.logger.Info("schedule", "now", now, "entry", e.ID, "next", e.Next)
	}
	for {
		sortByNext(c.entries)
		d, ticking := c.untilNext()
		if !c.wait(c.clock.NewTimer(d), ticking) {
			return
		}
	}
}

// untilNext returns how long to sleep before the earliest entry is due,
// and whether the loop schedules ticks now: a follower's does not, and its
// entries' Next are left as they were when it last scheduled.
func (c *Cron) untilNext() (time.Duration, bool) {
	if c.coord != nil && !c.coord.scheduling() {
		return idleWait, false // a follower costs nothing per tick
	}
	if len(c.entries) == 0 || c.entries[0].Next.IsZero() {
		return idleWait, true
	}
	now := c.now()
	d := c.entries[0].Next.Sub(now)
	if group, tick := c.preclaimable(); group != nil {
		d = min(d, tick.Add(-preclaimLead).Sub(now))
	}
	return d, true
}

// wait handles events until one changes what the loop must sleep for, and
// reports false on Stop. The timer is spent or stopped when it returns;
// ticking says whether it was armed for ticks.
func (c *Cron) wait(timer clock.Timer, ticking bool) bool {
	for {
		select {
		case <-timer.C():
			c.wake()
			return true

		case e := <-c.add:
			timer.Stop()
			now := c.now()
			e.Next = e.Schedule.Next(now)
			c.takePlace(e, now)
			c.entries = append(c.entries, e)
			c.logger.Info("added", "now", now, "entry", e.ID, "next", e.Next)
			return true

		case id := <-c.remove:
			timer.Stop()
			for _, e := range c.entries {
				if e.ID == id {
					c.keepPlace(e, c.now())
				}
			}
			c.removeEntry(id)
			c.logger.Info("removed", "entry", id)
			c.acked <- struct{}{}
			return true

		case <-c.resync:
			// While the loop scheduled ticks, the entries due by now run
			// first, whether the timer fired as the resync came or the tick
			// passed since: recomputing them from now would skip their
			// tick. A follower's entries are as old as its last term: a
			// tick missed since is the catch-up's.
			timer.Stop()
			if ticking { // mutation:stale-takeover
				c.wake()
			}
			c.resyncEntries(c.now())
			return true

		case reply := <-c.snapshot:
			// Nothing changed: keep sleeping on the same timer.
			reply <- c.entrySnapshot()

		case <-c.stop:
			timer.Stop()
			c.logger.Info("stop")
			c.acked <- struct{}{}
			return false
		}
	}
}

// wake handles the loop's timer: it starts every entry due by now.
func (c *Cron) wake() {
	// The Cron's clock, not the timer's reading, says what is due: they
	// differ when the clock is not the machine's.
	now := c.now()
	c.logger.Info("wake", "now", now)
	if c.coord != nil {
		c.preclaimDue(now)
		c.coord.claims.forgetStale(now)
	}
	c.runDue(now)
}

// runDue fires every entry due by now. Entries are sorted, so the first one
// not yet due ends the pass.
func (c *Cron) runDue(now time.Time) {
	for _, e := range c.entries {
		if e.Next.IsZero() || e.Next.After(now) {
			return
		}
		c.fire(e, e.Next)
		e.Prev = e.Next
		e.Next = e.Schedule.Next(now)
		c.logger.Info("run", "now", now, "entry", e.ID, "next", e.Next)
	}
}

// resyncEntries recomputes every Next from now. It runs when this replica
// starts or stops scheduling under coordination; when it starts, the latest
// tick of each job that fell within the misfire grace is claimed too, and
// runs if no replica ran it (a tick missed while leadership changed hands).
func (c *Cron) resyncEntries(now time.Time) {
	co := c.coord
	catchUp := co != nil && co.misfire == RunOnce && co.scheduling() // mutation:catch-up
	for _, e := range c.entries {
		if catchUp {
			if t := latestTick(e.Schedule, now, co.grace); !t.IsZero() && t.After(e.Prev) {
				if c.fireHook != nil {
					c.fireHook(*e, t)
				}
				co.fire(e, t, true)
				e.Prev = t
			}
		}
		e.Next = e.Schedule.Next(now)
	}
	c.logger.Info("resync", "now", now)
}
