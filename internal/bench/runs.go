package main

import (
	"context"
	"sync"
	"time"

	"github.com/batonhq/baton/cronx"
)

// runRecorder records when each run of a job started and for which tick.
type runRecorder struct {
	// nominal gives the tick of a run that has no cronx.Info, that is, of
	// a Cron without etcd.
	nominal func(started time.Time) time.Time

	mu      sync.Mutex
	runs    []runRecord
	ran     map[tickOf]bool         // the ticks among runs
	notRun  map[tickOf]cronx.Reason // ticks a replica reported not run
	settled int                     // ticks that ran or were reported not run, each once
	dropped int                     // events the observers dropped
}

// tickOf names a job's tick.
type tickOf struct {
	job  string
	tick int64
}

type runRecord struct {
	job           string // "" without etcd
	tick, started time.Time
}

// job returns a job that records its runs.
func (r *runRecorder) job() cronx.Job {
	return cronx.ContextFunc(func(ctx context.Context) error {
		started := time.Now()
		var tick time.Time
		var job string
		if info, ok := cronx.InfoFrom(ctx); ok {
			tick, job = info.Tick, info.Job
		} else {
			tick = r.nominal(started)
		}
		t := tickOf{job, tick.UnixNano()}
		r.mu.Lock()
		r.runs = append(r.runs, runRecord{job: job, tick: tick, started: started})
		if !r.ran[t] {
			if r.ran == nil {
				r.ran = map[tickOf]bool{}
			}
			r.ran[t] = true
			if _, reported := r.notRun[t]; !reported {
				r.settled++
			}
		}
		r.mu.Unlock()
		return nil
	})
}

// lastStart is when the latest run started.
func (r *runRecorder) lastStart() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last time.Time
	for _, x := range r.runs {
		if x.started.After(last) {
			last = x.started
		}
	}
	return last
}

func (r *runRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs)
}

// observer is told the ticks its Cron did not run.
func (r *runRecorder) observer() cronx.Observer {
	return cronx.Observer{
		OnTickNotRun: func(ev cronx.TickNotRun) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.notRun == nil {
				r.notRun = map[tickOf]cronx.Reason{}
			}
			t := tickOf{ev.Job, ev.Tick.UnixNano()}
			if _, reported := r.notRun[t]; !reported && !r.ran[t] {
				r.settled++
			}
			r.notRun[t] = ev.Reason
		},
		OnDropped: func(n int) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.dropped += n
		},
		QueueSize: 1 << 16, // a crowded tick's reports, each one
	}
}

// droppedEvents is how many events the observers dropped.
func (r *runRecorder) droppedEvents() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}

// ticks counts the distinct ticks (a job's name and its tick) among the
// runs.
func (r *runRecorder) ticks() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ran)
}

// settledTicks counts the ticks that ran or were reported not run, each
// once: kept as runs and reports come, since the burst polls it every
// millisecond beside the runs it counts.
func (r *runRecorder) settledTicks() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.settled
}

// lost counts the ticks reported not run and never run, by reason.
func (r *runRecorder) lost() map[cronx.Reason]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	lost := map[cronx.Reason]int{}
	for t, reason := range r.notRun {
		if !r.ran[t] {
			lost[reason]++
		}
	}
	return lost
}

// lateness is how long after their nominal ticks runs started.
type lateness struct {
	Runs          int
	P50, P99, Max time.Duration
}

// lateness summarises the runs whose ticks fall in [from, to).
func (r *runRecorder) lateness(from, to time.Time) lateness {
	return r.summarise(func(x runRecord) bool { return !x.tick.Before(from) && x.tick.Before(to) })
}

// latenessStarted summarises the runs that started in [from, to), whatever
// their ticks: what a window saw run.
func (r *runRecorder) latenessStarted(from, to time.Time) lateness {
	return r.summarise(func(x runRecord) bool { return !x.started.Before(from) && x.started.Before(to) })
}

func (r *runRecorder) summarise(keep func(runRecord) bool) lateness {
	r.mu.Lock()
	var late []time.Duration
	for _, x := range r.runs {
		if keep(x) {
			late = append(late, x.started.Sub(x.tick))
		}
	}
	r.mu.Unlock()
	return lateness{Runs: len(late), P50: quantile(late, 0.5), P99: quantile(late, 0.99), Max: maxOf(late)}
}

// secondOf is the nominal tick of a job that runs every second and starts
// less than a second late.
func secondOf(t time.Time) time.Time { return t.Truncate(time.Second) }

// untilFraction sleeps until the given fraction of the next whole second.
func untilFraction(ctx context.Context, frac float64) bool {
	now := time.Now()
	at := now.Truncate(time.Second).Add(time.Duration(frac * float64(time.Second)))
	if !at.After(now) {
		at = at.Add(time.Second)
	}
	return sleepCtx(ctx, time.Until(at))
}
