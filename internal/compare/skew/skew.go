// Package skew gives each contender's scheduler a clock that is off by a
// fixed offset, as a replica on a machine whose clock is off would have.
// Only the reading of the time is shifted; durations (timers, TTLs, sleeps)
// are not, as on a real machine whose clock is merely set wrong.
//
// The schedulers need different hooks. robfig/cron has no clock option (its
// WithLocation changes the zone, not the instant), so Schedule shifts the
// schedule instead: the entry fires when the skewed clock reads the scheduled
// time. gocron v2 takes a clockwork.Clock, so Clock shifts Now. baton's
// command, built with the "faults" tag, reads BATON_FAULTS_CLOCK_OFFSET,
// which shifts the clock its scheduler reads.
package skew

import (
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/robfig/cron/v3"
)

// Schedule wraps a robfig schedule so that it fires when a clock offset by d
// reads the scheduled time: at real time t the skewed clock reads t+d, so the
// next activation in skewed time is inner.Next(t+d), which happens at real
// time inner.Next(t+d)-d. robfig keeps Entry.Next and Entry.Prev in real time;
// Tick turns them back into the nominal time the replica believes it ran.
func Schedule(inner cron.Schedule, d time.Duration) cron.Schedule {
	if d == 0 {
		return inner
	}
	return shifted{inner, d}
}

type shifted struct {
	inner cron.Schedule
	d     time.Duration
}

func (s shifted) Next(t time.Time) time.Time { return s.inner.Next(t.Add(s.d)).Add(-s.d) }

// Tick is the nominal tick of a robfig entry run at real time prev (its
// Entry.Prev) under a schedule built by Schedule with offset d.
func Tick(prev time.Time, d time.Duration) time.Time { return prev.Add(d) }

// Clock is a real clock whose Now is off by d. It also remembers the
// instant the last AfterFunc timer was set for: gocron arms one such timer
// per scheduled run, for the run's nominal time, so when a run starts that
// instant is the tick it runs, however late the timer fired.
func Clock(d time.Duration) *OffsetClock {
	return &OffsetClock{Clock: clockwork.NewRealClock(), d: d}
}

// OffsetClock is the clock Clock returns.
type OffsetClock struct {
	clockwork.Clock // timers, tickers and sleeps measure durations: unshifted
	d               time.Duration
	fired           atomic.Int64
}

// Now is the real time plus the offset.
func (c *OffsetClock) Now() time.Time { return time.Now().Add(c.d) }

// Since is measured on the offset clock, as Now is.
func (c *OffsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until is measured on the offset clock, as Now is.
func (c *OffsetClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// AfterFunc runs f after d, and records the instant (on this clock) it was
// set for before calling f.
func (c *OffsetClock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	due := c.Now().Add(d)
	return c.Clock.AfterFunc(d, func() {
		c.fired.Store(due.UnixNano())
		f()
	})
}

// LastFired is the instant the most recently fired AfterFunc timer was set
// for, on this clock.
func (c *OffsetClock) LastFired() time.Time { return time.Unix(0, c.fired.Load()) }
