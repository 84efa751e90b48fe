package cronx

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	// from maps a base to the lowest copy number that may be free: every
	// lower one is held by a copy of that base. Adding N copies then costs
	// N steps, not N²/2.
	from map[string]int
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
		n.held, n.from = map[string]string{}, map[string]int{}
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
	for k := max(n.from[base], 1); ; k++ {
		name = copyName(base, k)
		other, ok := n.held[name]
		if !ok {
			n.held[name] = base
			n.from[base] = k + 1
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
	base, ok := n.held[name]
	delete(n.held, name)
	if !ok || base == "" {
		return
	}
	k := 1
	if name != base {
		k, _ = strconv.Atoi(strings.TrimPrefix(name, base+"-"))
	}
	if k < n.from[base] {
		n.from[base] = k
	}
	if n.from[base] == 1 {
		delete(n.from, base) // no copy left below: forget the base
	}
}

// copyName is the name of the k-th copy of the jobs derived from base.
func copyName(base string, k int) string {
	if k == 1 {
		return base
	}
	return base + "-" + strconv.Itoa(k)
}
