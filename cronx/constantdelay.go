package cronx

import "time"

// ConstantDelaySchedule runs a job at a fixed interval, such as every five
// minutes, counted from when the Cron starts (or the entry is added) rather
// than from the clock's round times. It has a resolution of one second.
type ConstantDelaySchedule struct {
	Delay time.Duration
}

// Every returns a schedule that runs every d. The interval is whole seconds:
// d is cut down to the second, and raised to one second if shorter.
func Every(d time.Duration) ConstantDelaySchedule {
	if d < time.Second {
		d = time.Second
	}
	return ConstantDelaySchedule{Delay: d.Truncate(time.Second)}
}

// Next returns t plus the delay, on the whole second: the fraction of a
// second in t is dropped, so that runs stay on second boundaries.
func (schedule ConstantDelaySchedule) Next(t time.Time) time.Time {
	return t.Add(schedule.Delay - time.Duration(t.Nanosecond()))
}
