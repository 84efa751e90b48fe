package cronx

import (
	"fmt"
	"sync"
	"time"
)

// catchUpPolicy is a job's WithCatchUp.
type catchUpPolicy struct {
	set    bool          // WithCatchUp was given: the Cron's misfire policy does not apply
	window time.Duration // how old a missed tick may be and still run; 0: none runs
}

// WithCatchUp sets how old a tick the job missed may be and still run, once,
// when the cluster comes back: after an outage of etcd, of every replica, or
// a leader's crash. The replica that takes over claims the latest tick of
// the job in (now-window, now] that it has not fired, under the tick's own
// name (G1: once in the cluster), if the job ran, or was published before
// the takeover and by the tick; the ticks before the latest are not run, and
// are counted as not run (ReasonNoLeader, over the last day at most). A live
// tick's claim is also retried, while etcd does not answer, until its tick
// plus window. A window of a year costs what a minute does: the latest tick
// is searched for, not walked to. WithCatchUp(0) catches nothing up, as
// misfire Skip does for the whole Cron.
//
// Without it the Cron's WithMisfire applies: RunOnce within its grace
// (DefaultMisfireGrace, a minute), or Skip. It matters only with etcd.
func WithCatchUp(window time.Duration) JobOption {
	return func(p *policyDraft) {
		if window < 0 {
			p.errs = append(p.errs, fmt.Errorf("WithCatchUp(%s): want a window of 0 (none) or more", window))
			return
		}
		p.catchUp = catchUpPolicy{set: true, window: window}
	}
}

// catchUpWindow is how old a missed tick of a job of policy p may be and
// still run: its WithCatchUp, else the Cron's misfire grace under RunOnce,
// else none.
func (sc *scope) catchUpWindow(p *jobPolicy) time.Duration {
	if p != nil && p.catchUp.set { // mutation:catch-up-window
		return p.catchUp.window
	}
	if sc.misfire == RunOnce && sc.grace >= 0 { // mutation:catch-up
		return sc.grace
	}
	return 0
}

// catchUpTick is the tick of e that a replica taking over at now runs
// late: the latest in its catch-up window that e has not fired or caught
// up already, or that it fired and gave up unclaimed (unclaimedTicks) or
// fired under the term before and has not started, or the zero time.
func (co *coordinator) catchUpTick(e *Entry, now time.Time) time.Time {
	window := co.catchUpWindow(e.policy)
	if window <= 0 {
		return time.Time{}
	}
	t := latestTick(e.Schedule, now, window)
	if t.IsZero() {
		return t
	}
	if t.After(e.given()) || co.unclaimed.take(e.ID, t) { // mutation:catch-up-unclaimed
		return t
	}
	if co.mode == LeaderMode && co.runs.unstartedOfATermBefore(e.ID, t, co.currentTerm()) { // mutation:catch-up-term-before
		// Fired under the term before, it has not started, and cannot
		// now: its term is gone, and the run is given up as soon as its
		// goroutine learns it, which may be after this takeover.
		return t
	}
	return time.Time{}
}

// unclaimedTicks are the latest tick of each entry that this replica fired
// and gave up before its run started: its term ended (etcd out, a Stop)
// while the claim waited for etcd, for its jitter, or for its turn. The
// entry's Prev is that tick all the same, so without it this replica,
// leading again (the only one, after an outage of etcd), would not catch
// it up. Runs note them; the loop takes them at a takeover.
type unclaimedTicks struct {
	mu sync.Mutex
	m  map[EntryID]time.Time
}

// note records r's tick, given up before its run started.
func (u *unclaimedTicks) note(r *run) {
	if !r.scheduled() {
		return // a trigger or a backfill resumes from its request
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[EntryID]time.Time{}
	}
	if prev, ok := u.m[r.job.entry]; !ok || r.tick.After(prev) {
		u.m[r.job.entry] = r.tick
	}
}

// take reports whether tick is the latest tick of entry given up, and
// forgets every tick of entry given up up to it.
func (u *unclaimedTicks) take(entry EntryID, tick time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.m[entry]
	if !ok || t.After(tick) {
		return false
	}
	delete(u.m, entry)
	return t.Equal(tick)
}

// latestTick returns the latest activation of s in (now-window, now], or
// the zero time when there is none. It walks the first walkTicks ticks of
// the window, as robfig's schedules are asked; past them it searches for
// the largest time whose Next is not after now (Next is monotonic), which
// costs about log2 of the rest of the window in nanoseconds: a window of a
// year over a job of every second is under a hundred calls of Next, not
// thirty million. An @every schedule counts from the time it is asked
// from, so its latest tick in a long window is the one a second or so
// before now.
func latestTick(s Schedule, now time.Time, window time.Duration) time.Time {
	t := s.Next(now.Add(-window))
	if t.IsZero() || t.After(now) {
		return time.Time{}
	}
	for range walkTicks { // mutation:catch-up-search
		n := s.Next(t)
		if n.IsZero() || n.After(now) {
			return t
		}
		t = n
	}
	lo, hi := t, now // s.Next(lo) <= now < s.Next(hi)
	if n := s.Next(lo); n.IsZero() || n.After(now) {
		return lo
	}
	for hi.Sub(lo) > 1 {
		mid := lo.Add(hi.Sub(lo) / 2)
		if n := s.Next(mid); !n.IsZero() && !n.After(now) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return s.Next(lo)
}
