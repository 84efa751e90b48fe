package cronx

import "time"

// A reload removes a job and adds it again. Were the new entry scheduled
// from the time it was added, a tick that came due between the Remove and
// the Add would run nowhere (the replica may be the leader, or every
// replica may reload at once), and an @every job would restart its interval,
// out of step with the replicas that did not reload. So the run loop keeps a
// removed coordinated job's place — its last and next tick — for a short
// while, and a job added under the same name with the same spec takes it
// over: a late tick runs at once, as a late wake-up's does. A tick whose
// run the removal gave up before it started (it waited for its jitter, its
// claim, or the run it replaces) is fired again by the job added: its
// claim, given back, waits for the give-back (runs.awaitRemoved).
type removedJob struct {
	spec       string
	prev, next time.Time
	givenUp    time.Time // the earliest tick the removal gave up; zero for none
	removedAt  time.Time
}

// places are the places of coordinated jobs just removed, by name; the
// loop's.
type places map[string]removedJob

// keep remembers a coordinated job's place as it is removed, with the
// tick its removal gave up.
func (p *places) keep(e *Entry, givenUp, now time.Time) {
	if e.name == "" {
		return
	}
	if *p == nil {
		*p = places{}
	}
	(*p)[e.name] = removedJob{spec: e.spec, prev: e.Prev, next: e.Next, givenUp: givenUp, removedAt: now}
}

// take gives an added entry the place of the job removed under its name,
// if the spec is the same and the removal recent, and returns the tick its
// removal gave up, for the loop to fire again; it forgets places kept too
// long.
func (p places) take(e *Entry, now time.Time) (again time.Time) {
	if r, ok := p[e.name]; ok && e.name != "" {
		delete(p, e.name)
		if r.spec == e.spec && now.Sub(r.removedAt) < reloadWindow && !r.next.IsZero() {
			e.Prev, e.Next = r.prev, r.next
			again = r.givenUp // mutation:reload-given-up
		}
	}
	for name, r := range p {
		if now.Sub(r.removedAt) >= reloadWindow {
			delete(p, name)
		}
	}
	return again
}
