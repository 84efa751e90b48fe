package main

import (
	"os"
	"runtime/pprof"
	"sync"
	"time"
)

// cpuProfile is a worker's CPU profile, written to one file at a time:
// the worker's whole run (path.cpu), or from a crowded tick's eve on
// (path.tick.cpu), where the start-up's and the spread jobs' samples
// would drown the tick's. A nil cpuProfile profiles nothing.
type cpuProfile struct {
	path string
	mu   sync.Mutex
	f    *os.File // the file being written; nil when none is
}

// start ends the profile being written, if any, and starts one in
// path+suffix.
func (p *cpuProfile) start(suffix string) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopLocked()
	f, err := os.Create(p.path + suffix)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	p.f = f
	return nil
}

// tick profiles from now until until in path.tick.cpu.
func (p *cpuProfile) tick(until time.Time) error {
	if p == nil {
		return nil
	}
	if err := p.start(".tick.cpu"); err != nil {
		return err
	}
	time.AfterFunc(time.Until(until), p.stop)
	return nil
}

// stop ends the profile being written.
func (p *cpuProfile) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopLocked()
}

func (p *cpuProfile) stopLocked() {
	if p.f != nil {
		pprof.StopCPUProfile()
		p.f.Close()
		p.f = nil
	}
}
