package ledger

import (
	"sort"
	"time"
)

// Fault is a signal the comparison sent to one replica.
type Fault struct {
	At       time.Time
	Instance string // the replica that got the signal
}

// Count is what a ledger says about one job over a window of nominal ticks.
type Count struct {
	Ticks      int // nominal ticks in the window
	Runs       int // runs of those ticks
	Duplicates int // ticks that ran more than once
	Extra      int // runs beyond the first of a tick
	Missed     int // ticks that never ran
	// Overlaps counts runs that were still going when another replica
	// started one: what a paused lock holder does after its lock expired.
	Overlaps int
	// Recovery is the time from the fault to the start of the next run by
	// another replica, or by the faulted one when no other ran; negative
	// when nothing ran after the fault.
	Recovery time.Duration
	// RecoveredBy is the replica that made that next run.
	RecoveredBy string
	// PerInstance is how many window runs each replica made.
	PerInstance map[string]int
}

// Tally counts the runs of job whose nominal tick falls in [from, to], one
// tick every period. A non-nil fault also measures the recovery time.
func Tally(runs []Run, job string, from, to time.Time, period time.Duration, fault *Fault) Count {
	c := Count{Recovery: -1, PerInstance: map[string]int{}}
	from, to = from.Truncate(period), to.Truncate(period)
	perTick := map[int64]int{}
	var mine []Run
	for _, r := range runs {
		if r.Job != job {
			continue
		}
		mine = append(mine, r)
		if r.Tick.Before(from) || r.Tick.After(to) {
			continue
		}
		perTick[r.Tick.UnixNano()]++
		c.Runs++
		c.PerInstance[r.Instance]++
	}
	for t := from; !t.After(to); t = t.Add(period) {
		c.Ticks++
		switch n := perTick[t.UnixNano()]; {
		case n == 0:
			c.Missed++
		case n > 1:
			c.Duplicates++
			c.Extra += n - 1
		}
	}
	for i, a := range mine {
		if a.End.IsZero() {
			continue
		}
		for j, b := range mine {
			if i != j && a.Instance != b.Instance && b.Start.After(a.Start) && b.Start.Before(a.End) {
				c.Overlaps++
				break
			}
		}
	}
	if fault != nil {
		sort.SliceStable(mine, func(i, j int) bool { return mine[i].Start.Before(mine[j].Start) })
		var self *Run
		for i, r := range mine {
			if !r.Start.After(fault.At) {
				continue
			}
			if r.Instance != fault.Instance {
				c.Recovery, c.RecoveredBy = r.Start.Sub(fault.At), r.Instance
				break
			}
			if self == nil {
				self = &mine[i]
			}
		}
		if c.Recovery < 0 && self != nil {
			c.Recovery, c.RecoveredBy = self.Start.Sub(fault.At), self.Instance
		}
	}
	return c
}
