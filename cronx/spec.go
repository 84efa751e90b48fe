package cronx

import "time"

// SpecSchedule is a schedule in crontab form, to the second: each field is a
// set of values, stored as bits (bit n set means value n matches).
type SpecSchedule struct {
	Second, Minute, Hour, Dom, Month, Dow uint64

	// Location is the schedule's time zone. time.Local means the zone of the
	// time given to Next, which for a Cron is its WithLocation zone.
	Location *time.Location
}

// Next returns the first time after t, to the second, that matches the
// schedule, in t's location; or the zero time if none comes within five
// years (a spec such as "0 0 30 2 *" never matches).
//
// Daylight saving time is taken as it comes: a time that a transition skips
// does not run (a 2:30 job misses the spring-forward night), a time that
// occurs twice runs twice, and a day whose midnight is skipped starts at the
// first hour it has.
func (s *SpecSchedule) Next(t time.Time) time.Time {
	orig := t.Location()
	loc := s.Location
	if loc == time.Local || loc == nil {
		loc = orig
	} else {
		t = t.In(loc)
	}

	// Start from the next whole second: Next is strictly after t.
	t = t.Add(time.Second - time.Duration(t.Nanosecond()))

	w := specWalk{s: s, t: t, loc: loc}
	for limit := t.Year() + 5; w.t.Year() <= limit; {
		if w.month() && w.day() && w.hour() && w.minute() && w.second() {
			return w.t.In(orig)
		}
	}
	return time.Time{}
}

// specWalk moves a time forward, field by field from the month down, until
// every field matches. A step that carries into a larger field (the last
// hour of a day rolls into the next day) makes that field's method report
// false, and the walk starts over from the month, whose match may be lost.
type specWalk struct {
	s   *SpecSchedule
	t   time.Time
	loc *time.Location
	// moved is set by the first step. Before it, t is the earliest candidate
	// and every field below the one being stepped must be kept; after it,
	// the first step has zeroed them, and steps only add.
	moved bool
}

// firstStep truncates t (with round) before the walk's first step, so that
// stepping a field starts from the beginning of it.
func (w *specWalk) firstStep(round func(time.Time) time.Time) {
	if !w.moved {
		w.moved = true
		w.t = round(w.t)
	}
}

func (w *specWalk) month() bool {
	for w.s.Month&(1<<uint(w.t.Month())) == 0 {
		w.firstStep(func(t time.Time) time.Time {
			return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, w.loc)
		})
		w.t = w.t.AddDate(0, 1, 0)
		if w.t.Month() == time.January {
			return false
		}
	}
	return true
}

func (w *specWalk) day() bool {
	for !w.s.dayMatches(w.t) {
		w.firstStep(func(t time.Time) time.Time {
			return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, w.loc)
		})
		w.t = w.t.AddDate(0, 0, 1)
		// Where a transition skips midnight, the day starts at another
		// hour: go back (or forward) to where the day begins.
		if h := w.t.Hour(); h > 12 {
			w.t = w.t.Add(time.Duration(24-h) * time.Hour)
		} else if h > 0 {
			w.t = w.t.Add(-time.Duration(h) * time.Hour)
		}
		if w.t.Day() == 1 {
			return false
		}
	}
	return true
}

func (w *specWalk) hour() bool {
	for w.s.Hour&(1<<uint(w.t.Hour())) == 0 {
		w.firstStep(func(t time.Time) time.Time {
			return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, w.loc)
		})
		// Add, not AddDate: an hour that occurs twice is stepped through
		// twice.
		w.t = w.t.Add(time.Hour)
		if w.t.Hour() == 0 {
			return false
		}
	}
	return true
}

func (w *specWalk) minute() bool {
	for w.s.Minute&(1<<uint(w.t.Minute())) == 0 {
		w.firstStep(func(t time.Time) time.Time { return t.Truncate(time.Minute) })
		w.t = w.t.Add(time.Minute)
		if w.t.Minute() == 0 {
			return false
		}
	}
	return true
}

func (w *specWalk) second() bool {
	for w.s.Second&(1<<uint(w.t.Second())) == 0 {
		w.firstStep(func(t time.Time) time.Time { return t.Truncate(time.Second) })
		w.t = w.t.Add(time.Second)
		if w.t.Second() == 0 {
			return false
		}
	}
	return true
}

// dayMatches reports whether t's day is in the schedule. As in crontab(5),
// when both day fields are restricted a day matching either one runs; when
// either is unrestricted ("*"), both must match.
func (s *SpecSchedule) dayMatches(t time.Time) bool {
	inDom := s.Dom&(1<<uint(t.Day())) != 0
	inDow := s.Dow&(1<<uint(t.Weekday())) != 0
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return inDom && inDow
	}
	return inDom || inDow
}
