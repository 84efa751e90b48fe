package cronx

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// jobPolicy is what a job does beyond running on its schedule: whether its
// runs may overlap, how long a run may take, how a failed run is retried,
// how far its start is spread, what it does on the nights the clocks
// change, what is called at a run's end, and after how many failures in a row it pauses. The Cron's WithJobOptions set it for every job; a job's own
// options, given to Named, are applied after them and win.
//
// A policy does not change once made, and the entries with the same policy
// share one copy of it (policies), so a job costs a pointer's worth of
// policy.
type jobPolicy struct {
	overlap Overlap
	timeout time.Duration // 0: none
	dst     DST
	jitter  time.Duration // 0: none
	retry   retryPolicy
	hooks   *hooks // nil: none (hooks.go)
	// pauseAfter is WithPauseAfter's failures; 0: never (pauseafter.go).
	pauseAfter int
	catchUp    catchUpPolicy // WithCatchUp (catchup.go)
	// recovery is WithRecovery's runs again of a tick whose runner died;
	// 0: none (recovery.go).
	recovery int
	// runAtStart is WithRunAtStart (atstart.go).
	runAtStart bool
	bounds     boundsPolicy // WithStartAt, WithEndAt, WithMaxRuns (bounds.go)
}

// policyDraft is a policy while options are applied to it.
type policyDraft struct {
	jobPolicy
	errs []error // options given values they cannot take
}

// JobOption sets a part of a job's policy: given to Named for one job, or
// to WithJobOptions for every job of a Cron.
type JobOption func(*policyDraft)

// WithOverlap sets the job's overlap policy; the default is Allow.
func WithOverlap(o Overlap) JobOption {
	return func(p *policyDraft) {
		if o < Allow || o > BufferAll {
			p.errs = append(p.errs, fmt.Errorf("WithOverlap(%d): not an overlap policy", int(o)))
			return
		}
		p.overlap = o
	}
}

// WithJobOptions sets the policy of every job of the Cron, named or not;
// the options a job is given in Named are applied after these, so they win:
//
//	c := cronx.New(cronx.WithEtcd(cli), cronx.WithJobOptions(cronx.WithTimeout(10*time.Minute)))
func WithJobOptions(opts ...JobOption) Option {
	return func(c *Cron) { c.jobOpts = append(c.jobOpts, opts...) }
}

// of resolves the policy of job, under the Cron's jobOpts. An option given a
// value it cannot take is an error naming the job (or, for an unnamed job,
// its schedule).
func (ps *policies) of(jobOpts []JobOption, job Job, spec string) (*jobPolicy, error) {
	var p policyDraft
	apply := func(opts []JobOption) {
		for _, opt := range opts {
			if opt != nil {
				opt(&p)
			}
		}
	}
	apply(jobOpts)
	if nj, ok := job.(*namedJob); ok {
		apply(nj.opts)
	}
	if len(p.errs) > 0 {
		return nil, fmt.Errorf("cronx: %s: %w", jobLabel(job, spec), errors.Join(p.errs...))
	}
	return ps.intern(p.jobPolicy), nil
}

// jobLabel names job in errors: by its name, or an unnamed job by its
// schedule.
func jobLabel(job Job, spec string) string {
	if nj, ok := job.(*namedJob); ok {
		return fmt.Sprintf("job %q", nj.name)
	}
	return fmt.Sprintf("job for %q", spec)
}

// policies holds one copy of each distinct policy of a Cron's jobs, for
// their entries to share. Jobs mostly have none of their own, or the
// Cron's, so it holds a few.
type policies struct {
	mu   sync.Mutex
	seen map[jobPolicy]*jobPolicy
}

// intern returns the shared copy of p.
func (ps *policies) intern(p jobPolicy) *jobPolicy {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if shared, ok := ps.seen[p]; ok {
		return shared
	}
	if ps.seen == nil {
		ps.seen = map[jobPolicy]*jobPolicy{}
	}
	ps.seen[p] = &p
	return &p
}
