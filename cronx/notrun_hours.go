package cronx

import (
	"slices"
	"time"
)

// NotRunHour is one hour's count of a job's ticks that no replica ran, by
// reason (JobStatus.NotRunHours).
type NotRunHour struct {
	// Hour is the hour's start.
	Hour   time.Time
	Counts map[Reason]int
}

// hours are v's counts by hour over the last day before now, oldest
// first; hours with no tick are left out.
func (v notRunValue) hours(now time.Time) []NotRunHour {
	from := now.Add(-notRunWindow).Truncate(time.Hour).Unix()
	var out []NotRunHour
	for _, h := range v.Hours {
		if h.Hour < from {
			continue
		}
		var counts map[Reason]int
		for name, n := range h.Counts {
			if r := parseReason(name); r != 0 && n > 0 {
				if counts == nil {
					counts = map[Reason]int{}
				}
				counts[r] += n
			}
		}
		if counts != nil {
			out = append(out, NotRunHour{Hour: time.Unix(h.Hour, 0), Counts: counts})
		}
	}
	slices.SortFunc(out, func(a, b NotRunHour) int { return a.Hour.Compare(b.Hour) })
	return out
}
