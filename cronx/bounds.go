package cronx

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// boundsPolicy is a job's WithStartAt, WithEndAt and WithMaxRuns.
type boundsPolicy struct {
	start, end time.Time // zero: none
	maxRuns    int       // 0: no limit
}

// bounded reports whether p bounds the job at all.
func (p boundsPolicy) bounded() bool { return !p.start.IsZero() || !p.end.IsZero() || p.maxRuns > 0 }

// WithStartAt makes the job's ticks start at t: none before it runs, nor is
// counted as not run. Every replica computes the same ticks from it.
func WithStartAt(t time.Time) JobOption {
	return func(p *policyDraft) {
		if t.IsZero() {
			p.errs = append(p.errs, errors.New("WithStartAt: want a time, not the zero time"))
			return
		}
		p.bounds.start = t
	}
}

// WithEndAt makes the job's ticks end before t: the tick at t and every
// later one does not run, nor is counted as not run, and Status shows the
// job as ended once a run of it was claimed (JobStatus.EndAt).
func WithEndAt(t time.Time) JobOption {
	return func(p *policyDraft) {
		if t.IsZero() {
			p.errs = append(p.errs, errors.New("WithEndAt: want a time, not the zero time"))
			return
		}
		p.bounds.end = t
	}
}

// WithMaxRuns runs the job's ticks n times in all, cluster-wide: each
// tick's claim counts itself in the job's runs key in etcd, in the claim's
// own transaction, and commits only while fewer than n were counted, so two
// replicas, a failover or a restart of every replica still make n runs in
// all. Once the limit is reached the replica that finds it fires no more
// ticks of the job, and its refused tick is not counted as not run; Status
// shows the job as done (JobStatus.Runs, JobStatus.MaxRuns). A trigger
// runs whatever the count, and does not count. The default, 0, is no
// limit. Limit: a tick claimed and given back (a Stop before its run
// started) is counted all the same, so a job may run fewer than n times,
// never more.
func WithMaxRuns(n int) JobOption {
	return func(p *policyDraft) {
		if n < 0 {
			p.errs = append(p.errs, fmt.Errorf("WithMaxRuns(%d): want a number of runs of 0 (no limit) or more", n))
			return
		}
		p.bounds.maxRuns = n
	}
}

// ErrMaxRuns is the outcome of a claim refused because the job has run
// WithMaxRuns times.
var ErrMaxRuns = errors.New("cronx: the job has run its WithMaxRuns times")

// boundedSchedule is a job's schedule within its start and end, and
// without ticks once its runs reached their limit.
type boundedSchedule struct {
	Schedule
	start, end time.Time
	done       atomic.Bool // the job reached WithMaxRuns
}

// withBounds returns s within p's start and end; s itself for a job with
// no bounds.
func withBounds(s Schedule, p boundsPolicy) Schedule {
	if !p.bounded() {
		return s
	}
	return &boundedSchedule{Schedule: s, start: p.start, end: p.end}
}

// Next is the schedule's next tick after t from the start on, or the zero
// time (never) at or past the end or once the job is done.
func (b *boundedSchedule) Next(t time.Time) time.Time {
	if b.done.Load() {
		return time.Time{}
	}
	if !b.start.IsZero() && t.Before(b.start) { // mutation:start-at
		t = b.start.Add(-time.Nanosecond) // a tick at the start is the first
	}
	next := b.Schedule.Next(t)
	if !b.end.IsZero() && !next.Before(b.end) { // mutation:end-at
		return time.Time{}
	}
	return next
}

// boundsOf returns the bounded schedule of s, or nil.
func boundsOf(s Schedule) *boundedSchedule {
	b, _ := s.(*boundedSchedule)
	return b
}

// reachedMaxRuns ends the ticks of r's job on this replica: its claim found
// the job's runs at their limit. Its next tick, computed already, is
// refused the same way; none follows.
func reachedMaxRuns(r *run) {
	if r.job.bounds == nil || !r.job.bounds.done.CompareAndSwap(false, true) { // mutation:max-runs-done
		return // found already
	}
	co := r.co
	co.logger.Info("cronx: done: the job has run its maximum of runs", "job", r.job.name, "max", r.job.policy.bounds.maxRuns)
	co.rep.emit(JobEnded{Scheduler: co.name, Job: r.job.name, Time: co.clock.Now(), MaxRuns: r.job.policy.bounds.maxRuns})
}
