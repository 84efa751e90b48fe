package cronx

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"time"
)

// WithJitter lets each run of the job start up to max after its tick, to
// spread jobs due on the same minute: the delay is a hash of the job's name
// and the tick, so every replica computes the same one, and the run is
// claimed, at its tick plus the delay, under its nominal tick, once. Info's
// Tick stays the nominal time. A jitter longer than the time between two
// ticks of the job can delay a tick past the next one, which then runs
// first and makes the earlier one too old to claim; keep it shorter. The
// default, 0, is none. A trigger runs at once.
func WithJitter(max time.Duration) JobOption {
	return func(p *policyDraft) {
		if max < 0 {
			p.errs = append(p.errs, fmt.Errorf("WithJitter(%s): want a duration of 0 (none) or more", max))
			return
		}
		p.jitter = max
	}
}

// jitterOf is the delay of job's run of tick, in [0, max): a hash of the
// name and the tick, so that every replica derives the same one.
func jitterOf(job string, tick time.Time, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(job))
	h.Write(binary.BigEndian.AppendUint64([]byte{0}, uint64(tick.UnixNano())))
	return time.Duration(h.Sum64() % uint64(max))
}

// awaitJitter is the jitter step of a run's life: it waits, on the Cron's
// clock, until r's tick plus its delay, and reports false if r was given up
// first (Stop, Remove, or the end of its term): the tick is then not
// claimed here, and a successor's catch-up or another replica of claim mode
// claims it.
func awaitJitter(r *run) bool {
	d := r.tick.Add(r.delay).Sub(r.co.clock.Now())
	if r.delay <= 0 || d <= 0 {
		return r.ctx.Err() == nil
	}
	t := r.co.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-r.ctx.Done():
		return false
	}
}
