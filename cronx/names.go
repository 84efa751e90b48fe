package cronx

import (
	"errors"
	"fmt"
	"sync"
)

// ErrDuplicateName means a job was added under a name that another job of
// the same Cron holds.
var ErrDuplicateName = errors.New("cronx: job name already in use")

// jobNames holds the names of a Cron's jobs. A name is taken when its job is
// added and given back when Remove returns, so that a job removed and added
// again gets its name back at once.
type jobNames struct {
	mu sync.Mutex
	// held maps each name in use to the base it was derived from, or to ""
	// for a name given with Named.
	held map[string]string
}

// take registers the name a job is added under: name when the job was
// Named, else a name derived from base, the job's function and spec.
//
// Copies of one function on one spec are numbered: the first is base, the
// k-th "base-k", with k the lowest number no copy holds. So the name of a
// copy depends only on how many copies the Cron has, never on how many were
// removed before, and replicas that hold the same jobs hold the same names,
// however often each one removed and re-added them.
func (n *jobNames) take(name, base string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.held == nil {
		n.held = map[string]string{}
	}
	if base == "" {
		if other, ok := n.held[name]; ok {
			if other != "" {
				return "", fmt.Errorf("%w: %q is the derived name of an unnamed job; name that job with Named", ErrDuplicateName, name)
			}
			return "", fmt.Errorf("%w: %q", ErrDuplicateName, name)
		}
		n.held[name] = ""
		return name, nil
	}
	for k := 1; ; k++ {
		name = base
		if k > 1 {
			name = fmt.Sprintf("%s-%d", base, k)
		}
		other, ok := n.held[name]
		if !ok {
			n.held[name] = base
			return name, nil
		}
		if other != base {
			// Skipping it would give this copy another number on a
			// replica that added its jobs in another order: two names for
			// one job, each claimed apart, and the job run twice a tick.
			return "", fmt.Errorf("%w: %q, derived for copy %d of an unnamed job, is a Named job's; name the unnamed job with Named", ErrDuplicateName, name, k)
		}
	}
}

// release gives a name back; an empty name is ignored.
func (n *jobNames) release(name string) {
	if name == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.held, name)
}
