package cronx

import (
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/jobkeys"
)

// layout names the etcd keys of one scheduler's jobs (internal/jobkeys).
type layout = jobkeys.Layout

// scope is what every part of a scheduler's coordination knows of it: its
// name, mode and misfire policy, this replica's identity, its keys, clock
// and logger. It is set by New and never written again, so it needs no
// lock.
type scope struct {
	name     string // scheduler name
	mode     Mode
	misfire  Misfire
	grace    time.Duration
	ttl      time.Duration // the sessions' lease TTL
	eopts    []election.Option
	identity string
	prefix   string // P
	keys     layout
	release  string // the app's release, for runs at start (atstart.go)
	logger   Logger
	clock    clock.Clock
}

// deadline is the last moment at which r may still be claimed: under Skip
// its tick plus skipTolerance, under RunOnce the misfire grace, for a job
// WithCatchUp its window (catchup.go); a trigger has the grace from when it
// fired.
func (sc *scope) deadline(r *run) time.Time {
	latest := r.tick.Add(r.delay + skipTolerance)
	if sc.misfire == RunOnce { // mutation:misfire-grace
		latest = r.tick.Add(r.delay + max(sc.grace, skipTolerance))
	}
	if p := r.job.policy; p != nil && p.catchUp.set && !r.triggered() { // mutation:catch-up-deadline
		latest = r.tick.Add(r.delay + max(p.catchUp.window, skipTolerance))
	}
	return latest
}
