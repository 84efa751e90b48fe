package cronx

import "time"

// latestDue is the tick of e that a leader's loop, waking up at now, fires:
// the latest of e's ticks due by now. robfig/cron's loop fires the
// earliest, e.Next, and lets the others pass unseen; a leader is the only
// replica that schedules, so the ticks before the latest came due while it
// stalled (a paused process, a clock that jumped), and it reports them
// misfire_skipped. The latest runs if it is within the misfire deadline
// (RunOnce's grace; fireTick), as Misfire says. In claim mode another
// replica may have run the others, and the earliest fires, as alone.
//
// Cost: nothing for a loop less than lateWake late; else a Next of e's
// schedule for each tick skipped, up to maxGapTicks of them, then a search
// (latestTick).
func (co *coordinator) latestDue(e *Entry, now time.Time) time.Time {
	if co.mode != LeaderMode || now.Sub(e.Next) < lateWake {
		return e.Next
	}
	if ts := co.currentTerm(); ts == nil || ts.ctx.Err() != nil {
		return e.Next // fireTick notes it for the next term
	}
	skipped, latest := []time.Time{}, e.Next
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
	for _, t := range skipped {
		co.rep.notRun(e.name, t, ReasonMisfireSkipped, nil) // mutation:late-wake-skipped
	}
	return latest // mutation:late-wake-latest
}
