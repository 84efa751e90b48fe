package cronx

import (
	"time"

	"github.com/batonhq/baton/internal/clock"
)

// idleWait is how long the loop sleeps when no entry has a next run; it only
// needs to outlast any real wait, since adds, removes and Stop wake it.
const idleWait = 100000 * time.Hour

// loop is the scheduler. While the Cron runs, its goroutine owns the
// entries: other goroutines reach them only through its channels; while
// the Cron is stopped, the Cron's runningMu guards them.
//
// Each entry's Next is its nominal tick, computed by its Schedule. The loop
// sleeps until the earliest Next, then fires every entry whose Next has
// come with that Next, and computes each one's following Next from the
// wake-up time. So a tick is named by the schedule, not by when the process
// happened to wake up; and, as in robfig/cron, a scheduler that wakes up
// late runs each late entry once rather than once per missed tick (a
// leader reports the others: late.go).
type loop struct {
	c       *Cron // what the loop fires through and reads the clock of
	entries []*Entry
	places  places // of jobs just removed, for a reload (reload.go)

	add      chan *Entry
	remove   chan EntryID
	acked    chan struct{} // the loop's answer to remove and stop
	snapshot chan chan []Entry
	stop     chan struct{}
	resync   chan struct{} // asks for every Next to be computed again
}

func newLoop(c *Cron) *loop {
	return &loop{
		c:        c,
		add:      make(chan *Entry),
		remove:   make(chan EntryID),
		acked:    make(chan struct{}),
		snapshot: make(chan chan []Entry),
		stop:     make(chan struct{}),
		resync:   make(chan struct{}, 1),
	}
}

// run is the loop's goroutine, until Stop.
func (l *loop) run() {
	c := l.c
	c.logger.Info("start")
	now := c.now()
	for _, e := range l.entries {
		e.Next = e.Schedule.Next(now)
		c.logger.Info("schedule", "now", now, "entry", e.ID, "next", e.Next)
	}
	for {
		sortByNext(l.entries)
		d, ticking := l.untilNext()
		if !l.wait(c.clock.NewTimer(d), ticking) {
			return
		}
	}
}

// untilNext returns how long to sleep before the earliest entry is due,
// and whether the loop schedules ticks now: a follower's does not, and its
// entries' Next are left as they were when it last scheduled.
func (l *loop) untilNext() (time.Duration, bool) {
	if co := l.c.coord; co != nil && !co.scheduling() {
		return idleWait, false // a follower costs nothing per tick
	}
	if len(l.entries) == 0 || l.entries[0].Next.IsZero() {
		return idleWait, true
	}
	return l.entries[0].Next.Sub(l.c.now()), true
}

// wait handles events until one changes what the loop must sleep for, and
// reports false on Stop. The timer is spent or stopped when it returns;
// ticking says whether it was armed for ticks.
func (l *loop) wait(timer clock.Timer, ticking bool) bool {
	c := l.c
	for {
		select {
		case <-timer.C():
			l.wake()
			return true

		case e := <-l.add:
			timer.Stop()
			now := c.now()
			e.Next = e.Schedule.Next(now)
			var again time.Time
			if c.coord != nil {
				again = l.places.take(e, now) // reload.go
			}
			l.entries = append(l.entries, e)
			c.logger.Info("added", "now", now, "entry", e.ID, "next", e.Next)
			if !again.IsZero() {
				c.fire(e, again, false)
			}
			return true

		case id := <-l.remove:
			timer.Stop()
			var removed *Entry
			for _, e := range l.entries {
				if e.ID == id {
					removed = e
				}
			}
			givenUp := c.removeEntry(id)
			if removed != nil && c.coord != nil {
				l.places.keep(removed, givenUp, c.now())
			}
			c.logger.Info("removed", "entry", id)
			l.acked <- struct{}{}
			return true

		case <-l.resync:
			// While the loop scheduled ticks, the entries due by now run
			// first, whether the timer fired as the resync came or the tick
			// passed since: recomputing them from now would skip their
			// tick. A follower's entries are as old as its last term: a
			// tick missed since is the catch-up's.
			timer.Stop()
			if ticking { // mutation:stale-takeover
				l.wake()
			}
			l.resyncEntries(c.now())
			return true

		case reply := <-l.snapshot:
			// Nothing changed: keep sleeping on the same timer.
			reply <- l.entrySnapshot()

		case <-l.stop:
			timer.Stop()
			c.logger.Info("stop")
			l.acked <- struct{}{}
			return false
		}
	}
}

// wake fires every entry due by now. Entries are sorted, so the first one
// not yet due ends the pass. The Cron's clock, not the timer's reading,
// says what is due: they differ when the clock is not the machine's.
func (l *loop) wake() {
	now := l.c.now()
	l.c.logger.Info("wake", "now", now)
	co := l.c.coord
	if co != nil {
		defer co.claims.batch.firingTick()() // batch.go
	}
	for _, e := range l.entries {
		if e.Next.IsZero() || e.Next.After(now) {
			return
		}
		tick := e.Next
		if co != nil {
			tick = co.lateTick(e, now) // late.go
		}
		l.c.fire(e, tick, false)
		e.Prev = tick
		e.Next = e.Schedule.Next(now)
		l.c.logger.Info("run", "now", now, "entry", e.ID, "next", e.Next)
	}
}

// resyncEntries recomputes every Next from now. It runs when this replica
// starts or stops scheduling under coordination; when it starts, the latest
// tick of each job that fell within its catch-up window is claimed too, and
// runs if no replica ran it (a tick missed while leadership changed hands).
func (l *loop) resyncEntries(now time.Time) {
	co := l.c.coord
	takeover := co != nil && co.scheduling()
	for _, e := range l.entries {
		if takeover {
			if t := co.catchUpTick(e, now); !t.IsZero() { // catchup.go
				l.c.fire(e, t, true)
				e.caughtUp = t // mutation:catch-up-prev
			}
		}
		e.Next = e.Schedule.Next(now)
	}
	l.c.logger.Info("resync", "now", now)
}

// requestResync asks the loop to recompute every entry's next run from now,
// as when this replica starts or stops leading. It never blocks.
func (l *loop) requestResync() {
	select {
	case l.resync <- struct{}{}:
	default:
	}
}

func (l *loop) entrySnapshot() []Entry {
	out := make([]Entry, len(l.entries))
	for i, e := range l.entries {
		out[i] = *e
	}
	return out
}
