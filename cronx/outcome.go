package cronx

import (
	"sync"
	"time"

	"github.com/batonhq/baton/internal/jobkeys"
)

// A job's outcome key (<job>/outcome) holds what its history, bounded to
// historyLen runs, forgets: when the job last succeeded and last failed,
// and how many of its runs have failed in a row since. The recorder writes
// it in the transaction that appends the run to the history, under the
// same condition (the history's revision, read with the outcome), so the
// two never disagree and a run is counted once: whichever replica ran the
// job, the key is the cluster's (writes.runEnd). It holds too the latest
// scheduled tick whose run was recorded: the history forgets it, and
// WithRecovery must not run it again (recovery.go).
//
// Only a run's last attempt counts: an attempt that is retried is neither
// a success nor a failure of the run (WithRetries).

// JobOutcome is a job's last success, last failure and consecutive
// failures, cluster-wide, as this replica wrote them in etcd with a run it
// recorded, or read them from etcd when it started (or the job was added
// while it ran). A job's outcomes are told in the order etcd has them.
type JobOutcome struct {
	Scheduler string
	Job       string
	// LastSuccess and LastFailure are the ends of the job's last
	// successful and last failed runs; zero when there was none.
	LastSuccess time.Time
	LastFailure time.Time
	// ConsecutiveFailures counts the runs that failed since the last
	// success.
	ConsecutiveFailures int
}

// outcomeAfter is o once the run of it has ended; an attempt that is
// retried (it.keep) changes nothing.
func outcomeAfter(o jobkeys.Outcome, it finishItem) jobkeys.Outcome {
	switch {
	case it.keep:
	case it.err == nil:
		o.LastSuccess, o.Failures = it.end, 0 // mutation:last-success
	default:
		o.LastFailure = it.end
		o.Failures++
	}
	return o
}

// outcomeRecorded tells the observers the outcome that the record of it
// wrote at revision rev.
func (rc *recorder) outcomeRecorded(it finishItem, o jobkeys.Outcome, rev int64) {
	if it.keep || !rc.co.rep.observed() {
		return
	}
	rc.co.rep.outcomes.tell(rc.co.rep, it.job, o, rev)
}

// loadOutcomes tells the observers the outcome etcd has of each of jobs,
// so that a replica that has just started, or a job just added, shows what
// the cluster recorded before rather than nothing: in the background, one
// read per outcomeLoadBatch jobs, at each Start and for a job added while
// the Cron runs; nothing when nobody observes. A job with no outcome yet is
// not told. names is read in the background too: the Cron's entries are
// behind the mutex that Start and Stop hold.
func (co *coordinator) loadOutcomes(names func() []string) {
	cli := co.conn.etcd()
	if !co.rep.observed() || cli == nil {
		return
	}
	ctx := co.runCtx()
	co.work.add() // the client outlives the read
	go func() {
		defer co.work.done()
		jobs := names()
		for len(jobs) > 0 && ctx.Err() == nil {
			batch := jobs[:min(len(jobs), outcomeLoadBatch)]
			jobs = jobs[len(batch):]
			resp, err := readWithin(ctx, cli, co.writes.outcomeGets(batch))
			if err != nil {
				if ctx.Err() == nil {
					co.logger.Error(err, "cronx: read the jobs' outcomes", "scheduler", co.name)
				}
				return
			}
			for i, job := range batch {
				if kvs := resp.Responses[i].GetResponseRange().GetKvs(); len(kvs) > 0 {
					co.rep.outcomes.tell(co.rep, job, jobkeys.DecodeOutcome(kvs), kvs[0].ModRevision)
				}
			}
		}
	}()
}

// outcomesTold holds, per job, the etcd revision of the last outcome told
// to the observers: a read at a Start that a record overtook must not tell
// an older outcome after a newer one.
type outcomesTold struct {
	mu  sync.Mutex
	rev map[string]int64
}

// tell tells the observers of rp job's outcome o, written at revision rev,
// unless a later one was told.
func (t *outcomesTold) tell(rp *reporter, job string, o jobkeys.Outcome, rev int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if rev < t.rev[job] {
		return
	}
	if t.rev == nil {
		t.rev = map[string]int64{}
	}
	t.rev[job] = rev
	// Emitted under the mutex, so that the observers get them in the
	// order of their revisions.
	rp.emit(JobOutcome{Scheduler: rp.sc.name, Job: job, LastSuccess: o.LastSuccess, LastFailure: o.LastFailure, ConsecutiveFailures: o.Failures})
}

// namesOf is the names of the named entries of h.
func namesOf(h host) []string {
	entries := h.Entries()
	var names []string
	for _, e := range entries {
		if e.name != "" {
			names = append(names, e.name)
		}
	}
	return names
}
