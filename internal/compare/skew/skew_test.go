package skew

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func TestScheduleFiresWhenTheSkewedClockReadsTheTick(t *testing.T) {
	every, err := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse("* * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	real := time.Date(2026, 1, 2, 3, 4, 5, 100e6, time.UTC) // 03:04:05.100
	for _, tc := range []struct {
		offset   time.Duration
		fireAt   time.Time // real time
		nominal  time.Time // what the replica believes it runs
		scenario string
	}{
		{0, time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), "no skew"},
		{200 * time.Millisecond, time.Date(2026, 1, 2, 3, 4, 5, 800e6, time.UTC), time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), "clock ahead fires early"},
		{-200 * time.Millisecond, time.Date(2026, 1, 2, 3, 4, 5, 200e6, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "clock behind: it reads 04.900, so 05 is still ahead"},
		{2 * time.Second, time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), time.Date(2026, 1, 2, 3, 4, 8, 0, time.UTC), "two seconds ahead"},
	} {
		s := Schedule(every, tc.offset)
		next := s.Next(real)
		if !next.Equal(tc.fireAt) {
			t.Errorf("%s: fires at %v, want %v", tc.scenario, next, tc.fireAt)
		}
		if got := Tick(next, tc.offset); !got.Equal(tc.nominal) {
			t.Errorf("%s: tick %v, want %v", tc.scenario, got, tc.nominal)
		}
	}
}

func TestClockShiftsNowNotDurations(t *testing.T) {
	c := Clock(2 * time.Second)
	if d := time.Until(c.Now()); d < 1900*time.Millisecond || d > 2100*time.Millisecond {
		t.Errorf("Now is off by %v, want about 2s", d)
	}
	if d := c.Until(c.Now().Add(time.Minute)); d < 59*time.Second || d > time.Minute {
		t.Errorf("Until a minute ahead = %v", d)
	}
	fired := make(chan struct{})
	due := c.Now().Add(time.Millisecond)
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired
	if got := c.LastFired(); got.Before(due.Add(-time.Millisecond)) || got.After(due.Add(10*time.Millisecond)) {
		t.Errorf("LastFired = %v, want about %v (the instant the timer was set for)", got, due)
	}
}
