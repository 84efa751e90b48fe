package cronx

import (
	"fmt"
	"time"
)

// DST is a job's rule for the nights its time zone's clocks change.
type DST int

const (
	// DSTAsRobfig is robfig/cron's rule, the default: a time the clocks
	// skip (02:30 on a night that goes from 02:00 to 03:00) does not run,
	// and a time that occurs twice (02:30 on a night that goes back from
	// 03:00 to 02:00) runs twice, an hour apart.
	DSTAsRobfig DST = iota
	// DSTOnce is the rule Vixie cron follows: a job whose time the clocks
	// skip runs at the transition (03:00 in the example), and a time that
	// occurs twice runs once, at its first occurrence. It applies to jobs
	// at given hours; a job whose hour field is * (every hour or more
	// often) runs by real time, every hour the clocks show, as under
	// DSTAsRobfig. Intervals (@every) are real durations and never change.
	DSTOnce
)

// WithDST sets the job's daylight-saving rule; the default is DSTAsRobfig.
// Every replica computes the same ticks from the same zone data, so a tick
// the rule moves is still claimed once in the cluster. Replicas whose
// zone databases (tzdata) disagree about a transition name ticks
// differently around it.
func WithDST(rule DST) JobOption {
	return func(p *policyDraft) {
		if rule != DSTAsRobfig && rule != DSTOnce {
			p.errs = append(p.errs, fmt.Errorf("WithDST(%d): not a daylight-saving rule", int(rule)))
			return
		}
		p.dst = rule
	}
}

// withDST wraps s in the rule, when the rule changes what s does.
func withDST(s Schedule, rule DST) Schedule {
	spec, ok := s.(*SpecSchedule)
	if rule != DSTOnce || !ok || spec == nil {
		return s
	}
	const allHours = 1<<24 - 1
	if spec.Hour&allHours == allHours {
		return s // every hour: real hours, as robfig counts them
	}
	wall := *spec
	wall.Location = time.UTC
	return &dstOnce{spec: spec, wall: &wall}
}

// dstOnce is a SpecSchedule under DSTOnce. It walks the schedule's wall
// times, the times its zone's clocks show, and maps each to an instant: a
// wall time that does not exist (skipped by the clocks going forward)
// becomes the transition, and one that exists twice becomes its first
// occurrence. An instant that is not after the time asked from (a wall time
// the transition already stood for, or the second pass through a repeated
// hour) is passed over.
type dstOnce struct {
	spec *SpecSchedule // as parsed, for its zone
	wall *SpecSchedule // the same fields in UTC, which has no transitions
}

// Next returns the first tick after t; it is a function of t alone, so
// every replica names the same ticks.
func (d *dstOnce) Next(t time.Time) time.Time {
	loc := d.spec.Location
	if loc == nil || loc == time.Local {
		loc = t.Location() // the Cron's zone, as robfig's SpecSchedule does
	}
	at := t.In(loc)
	w := time.Date(at.Year(), at.Month(), at.Day(), at.Hour(), at.Minute(), at.Second(), 0, time.UTC)
	// The wall times of up to six years: robfig's own search gives up after
	// five.
	for range 6 * 366 * 24 * 60 {
		w = d.wall.Next(w)
		if w.IsZero() {
			return time.Time{}
		}
		if tick := instantOf(w, loc); tick.After(t) {
			return tick.In(t.Location())
		}
	}
	return time.Time{}
}

// instantOf maps the wall time w (its fields, read in UTC) to an instant in
// loc: its only occurrence, its first when the clocks show it twice, or the
// transition that skips it.
func instantOf(w time.Time, loc *time.Location) time.Time {
	var first time.Time
	// An instant shows w in loc when loc's offset at that instant is the
	// one it was computed with; the offsets around w are those of the
	// instants a day either side.
	for _, probe := range []time.Time{w.Add(-24 * time.Hour), w.Add(24 * time.Hour)} {
		_, off := probe.In(loc).Zone()
		c := w.Add(-time.Duration(off) * time.Second)
		if _, got := c.In(loc).Zone(); got == off && (first.IsZero() || c.Before(first)) {
			first = c
		}
	}
	if !first.IsZero() {
		return first
	}
	// Skipped: read with the offset before the transition, w lands after
	// it, in the zone the transition began.
	_, before := w.Add(-24 * time.Hour).In(loc).Zone()
	start, _ := w.Add(-time.Duration(before) * time.Second).In(loc).ZoneBounds()
	return start
}
