package cronx

import (
	"time"

	"github.com/batonhq/baton/internal/notrun"
)

// NotRunHour is one hour's count of a job's ticks that no replica ran, by
// reason (JobStatus.NotRunHours).
type NotRunHour struct {
	// Hour is the hour's start.
	Hour   time.Time
	Counts map[Reason]int
}

// notRunCounts are v's counts over the last day before now, in all and by
// hour, oldest first, of the reasons this version knows; nil when there
// is none.
func notRunCounts(v notrun.Value, now time.Time) (total map[Reason]int, hours []NotRunHour) {
	for _, h := range v.Within(now) {
		var counts map[Reason]int
		for name, n := range h.Counts {
			if r := parseReason(name); r != 0 && n > 0 {
				if counts == nil {
					counts = map[Reason]int{}
				}
				if total == nil {
					total = map[Reason]int{}
				}
				counts[r] += n
				total[r] += n
			}
		}
		if counts != nil {
			hours = append(hours, NotRunHour{Hour: time.Unix(h.Hour, 0), Counts: counts})
		}
	}
	return total, hours
}

// parseReason is the Reason named name, 0 for none.
func parseReason(name string) Reason {
	for _, r := range Reasons() {
		if r.String() == name {
			return r
		}
	}
	return 0
}
