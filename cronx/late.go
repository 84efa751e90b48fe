package cronx

import "time"

// lateTick is the tick of e that a leader's loop, waking up at now, fires
// when more than one of e's ticks came due meanwhile. robfig/cron's loop
// fires the earliest, e.Next, and lets the others pass unseen. A leader is
// the only replica that schedules, so the others came due while it
// stalled (a paused process, a clock that jumped), and it counts them
// misfire_skipped. It fires the earliest, as robfig does, while that one
// is within its misfire deadline, so that after a handover a successor's
// catch-up, which takes the latest tick of a gap, runs the latest; past
// it, the latest, which runs if it is within its own, as Misfire says. In
// claim mode another replica may have run the others, and the earliest
// fires, as alone.
//
// Cost: nothing for a loop less than lateWake late; else a Next of e's
// schedule for each tick skipped, up to maxGapTicks of them, then a search
// (latestTick).
func (co *coordinator) lateTick(e *Entry, now time.Time) time.Time {
	if co.mode != LeaderMode || now.Sub(e.Next) < lateWake {
		return e.Next
	}
	if ts := co.currentTerm(); ts == nil || ts.ctx.Err() != nil {
		return e.Next // fireTick notes it for the next term
	}
	var skipped []time.Time
	latest := e.Next
	for next := e.Schedule.Next(latest); !next.IsZero() && !next.After(now); next = e.Schedule.Next(latest) {
		if len(skipped) == maxGapTicks {
			// The ticks between are logged, not counted one by one.
			latest = latestTick(e.Schedule, now, now.Sub(latest))
			co.logger.Info("cronx: the loop woke up late; ticks past the first ones skipped are not counted",
				"job", e.name, "counted", len(skipped), "from", skipped[0], "to", latest)
			break
		}
		skipped, latest = append(skipped, latest), next
	}
	fired := latest
	if len(skipped) > 0 && !now.After(co.deadline(&run{tick: e.Next, job: refOf(e), delay: jitterOf(e.name, e.Next, e.policy.jitter)})) { // mutation:late-wake-latest
		// The earliest is still within its deadline: it fires, and the
		// latest is counted in its stead.
		fired, skipped = e.Next, append(skipped[1:], latest)
	}
	for _, t := range skipped {
		co.rep.notRun(e.name, t, ReasonMisfireSkipped, nil) // mutation:late-wake-skipped
	}
	return fired
}
