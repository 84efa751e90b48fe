package cronx

import (
	"errors"
	"sync"

	"github.com/batonhq/baton/election"
)

// A TTL shorter than the etcd server's minimum lease TTL is refused for
// good: etcd grants a longer lease than the one asked for, which election
// gives back (election.ErrTTLBelowMinimum), and no lease of that TTL will
// ever do. In leader mode the campaign ends on it, logged as an error. In
// claim mode no tick can be claimed without the runners' session, so the
// first refusal is logged as an error, naming the TTL and the server's
// minimum, and no lease is asked for again until the Cron is started again:
// each tick is then not run, with ReasonEtcdRefused, and nothing more is
// logged.

// ttlRefusal remembers the server's refusal of the Cron's TTL.
type ttlRefusal struct {
	scheduler string
	logger    Logger

	mu  sync.Mutex
	err error // the refusal; nil until etcd refuses the TTL
}

func newTTLRefusal(co *coordinator) *ttlRefusal {
	return &ttlRefusal{scheduler: co.name, logger: co.logger}
}

// refusal returns the refusal, nil when there has been none.
func (r *ttlRefusal) refusal() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// note keeps err if it is the server's refusal of the TTL, logging the
// first, and returns err.
func (r *ttlRefusal) note(err error) error {
	if !errors.Is(err, election.ErrTTLBelowMinimum) {
		return err
	}
	r.mu.Lock()
	first := r.err == nil
	r.err = err
	r.mu.Unlock()
	if first {
		r.logger.Error(err, "cronx: etcd grants no lease this short; no tick is claimed until the Cron starts again with a longer TTL",
			"scheduler", r.scheduler)
	}
	return err
}

// reset forgets the refusal, when the Cron stops: a Start asks again.
func (r *ttlRefusal) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = nil
}
