package cronx

import (
	"slices"
	"time"
)

// Entry is a job with its schedule, as Entries and Entry report it. Its
// exported fields are cron.Entry's, but it is a type of its own rather than
// an alias: it also carries the job's cluster-wide name and published spec,
// which a cron.Entry has no room for.
type Entry struct {
	// ID identifies the entry to Entry and Remove.
	ID EntryID

	// Schedule says when the job runs.
	Schedule Schedule

	// Next is the nominal time of the next run: the zero time before the
	// Cron is started, or when the schedule has no further activation.
	Next time.Time

	// Prev is the nominal time of the last run, or the zero time if the job
	// has not run.
	Prev time.Time

	// WrappedJob is what runs: Job wrapped by the Cron's chain.
	WrappedJob Job

	// Job is the job as it was added, kept so that callers can find their
	// own value again through Entries.
	Job Job

	// name identifies the job across the replicas of a cluster, where an
	// EntryID (a counter local to one process) cannot. Empty means unnamed.
	name string
	// spec is the schedule as given, published for status under coordination.
	spec string
	// policy is the job's overlap, timeout, retry, jitter and daylight-saving
	// rules (policy.go).
	policy *jobPolicy
	// caughtUp is the latest tick a new term's catch-up fired, which is not
	// Prev: its claim is refused when the tick ran elsewhere or the job
	// never ran, and robfig's Prev is a run.
	caughtUp time.Time
}

// given is the tick the job's claim key goes back to when a run of e does
// not start: the latest tick fired before.
func (e *Entry) given() time.Time {
	if e.caughtUp.After(e.Prev) {
		return e.caughtUp
	}
	return e.Prev
}

// Valid reports whether e is an entry rather than the zero Entry.
func (e Entry) Valid() bool { return e.ID != 0 }

// sortByNext orders entries by their next run, entries that never run again
// (a zero Next) last. The sort is stable so that entries due together run
// in the order they were added.
func sortByNext(entries []*Entry) {
	slices.SortStableFunc(entries, func(a, b *Entry) int {
		switch az, bz := a.Next.IsZero(), b.Next.IsZero(); {
		case az && bz:
			return 0
		case az:
			return 1
		case bz:
			return -1
		}
		return a.Next.Compare(b.Next)
	})
}
