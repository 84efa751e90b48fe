package cronx

import (
	"errors"
	"sync"
	"time"
)

// errSuperseded is the outcome of a claim-mode tick given up because a later
// tick of its job came due while its claim waited for etcd.
var errSuperseded = errors.New("a later tick of the job came due while this one waited for etcd")

// firedTicks remembers the latest tick each job fired in claim mode.
//
// While etcd is out, every replica keeps firing ticks, and each tick's claim
// is retried until its misfire grace runs out. Were every one of them sent
// when etcd came back, they would commit oldest first, each later than the
// last claimed tick, and a job would run once for every tick it missed, in a
// burst. Instead a claim not yet sent gives way to a later tick of its job:
// only the latest tick is claimed, as a leader claims only the latest missed
// tick when it takes over (misfire RunOnce).
type firedTicks struct {
	mu     sync.Mutex
	latest map[string]time.Time // by job name
}

// note records that job fired tick.
func (f *firedTicks) note(job string, tick time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.latest == nil {
		f.latest = map[string]time.Time{}
	}
	if tick.After(f.latest[job]) {
		f.latest[job] = tick
	}
}

// superseded reports whether a tick of job later than tick has fired.
func (f *firedTicks) superseded(job string, tick time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latest[job].After(tick)
}

// forget drops a removed job.
func (f *firedTicks) forget(job string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.latest, job)
}
