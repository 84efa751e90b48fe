package cronx

import "time"

// A reload removes a job and adds it again. Were the new entry scheduled
// from the time it was added, a tick that came due between the Remove and
// the Add would run nowhere (the replica may be the leader, or every
// replica may reload at once), and an @every job would restart its interval,
// out of step with the replicas that did not reload. So the run loop keeps a
// removed coordinated job's place — its last and next tick — for a short
// while, and a job added under the same name with the same spec takes it
// over: a late tick runs at once, as a late wake-up's does.
type removedJob struct {
	spec       string
	prev, next time.Time
	removedAt  time.Time
}

// keepPlace remembers a coordinated job's place as it is removed.
func (c *Cron) keepPlace(e *Entry, now time.Time) {
	if c.coord == nil || e.name == "" {
		return
	}
	if c.places == nil {
		c.places = map[string]removedJob{}
	}
	c.places[e.name] = removedJob{spec: e.spec, prev: e.Prev, next: e.Next, removedAt: now}
}

// takePlace gives an added entry the place of the job removed under its
// name, if the spec is the same and the removal recent; it forgets places
// kept too long.
func (c *Cron) takePlace(e *Entry, now time.Time) {
	if p, ok := c.places[e.name]; ok && e.name != "" {
		delete(c.places, e.name)
		if p.spec == e.spec && now.Sub(p.removedAt) < reloadWindow && !p.next.IsZero() {
			e.Prev, e.Next = p.prev, p.next
		}
	}
	for name, p := range c.places {
		if now.Sub(p.removedAt) >= reloadWindow {
			delete(c.places, name)
		}
	}
}
