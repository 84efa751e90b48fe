package cronx

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"time"

	"github.com/batonhq/baton/internal/jobkeys"
)

// A job's registrations go with its replicas' leases, so with every
// replica down no job would be listed, though their specs, claims and
// histories stay. The roster keeps what the listing needs then, in keys of
// the scheduler's own that no lease holds:
//
//	.roster/sum      a hash of the names of the jobs the publisher has
//	.roster/jobs     those names, when and by whom they were written
//	.roster/stopped  the last replica to stop, and when
//
// The replica that publishes writes the names at the end of each round of
// specs, in one transaction that compares the hash and writes only when it
// differs: a term whose jobs are those of the term before costs a compare
// of one small key, and a deploy that adds or drops jobs one write. Each
// replica writes the stop key when it stops, with its sessions' close. So
// Status, while no replica registers any job, lists the jobs of the latest
// roster (NotScheduledSince), and a job that a deploy dropped, absent from
// the new release's roster, leaves the listing as it did.

// rosterLimit bounds the roster's names: a scheduler whose names take more
// (tens of thousands of jobs) writes none, and its jobs leave the listing
// with their replicas, as they did before there was a roster.
const rosterLimit = 1 << 20

// writeRoster records the names of this replica's jobs unless the roster
// holds them already.
func (pb *publisher) writeRoster(ctx context.Context) error {
	co := pb.co
	names := namesOf(co.host)
	slices.Sort(names)
	sum := rosterSum(names)
	v := jobkeys.Roster{Jobs: names, By: co.identity, At: co.clock.Now()}.Encode()
	if len(v) > rosterLimit {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	same, write := co.writes.roster(sum, v)
	_, err := co.conn.etcd().Txn(rctx).If(same).Else(write...).Commit()
	if err != nil {
		return fmt.Errorf("write the roster: %w", err)
	}
	return nil
}

// rosterSum is the hash of sorted names.
func rosterSum(names []string) string {
	h := fnv.New64a()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 16) + "/" + strconv.Itoa(len(names))
}

// markStopped starts the write of the stop key, and returns the wait for
// it: bounded by closeTimeout, as the sessions' close beside it is.
func (co *coordinator) markStopped() (wait func()) {
	cli := co.conn.etcd()
	if cli == nil {
		return func() {}
	}
	stop := co.writes.stopped()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		cli.Do(ctx, stop) // mutation:stop-unmarked
	}()
	return func() { <-done }
}

// roster is what Status reads of the roster keys.
type roster struct {
	jobs   map[string]bool // nil: no roster
	latest time.Time       // the latest time a replica was heard of
}

// heard notes that a replica was at work at t.
func (r *roster) heard(t time.Time) {
	if t.After(r.latest) {
		r.latest = t
	}
}

// heardOf notes the latest claim and run end of j.
func (r *roster) heardOf(j *JobStatus) {
	r.heard(j.LastTick)
	for _, h := range j.History {
		r.heard(h.Start.Add(h.Duration)) // mutation:roster-unheard
	}
}

// unscheduled reports whether Status lists job although no replica
// registers it: no replica registers any job (live is empty), and job is
// in the roster.
func (r *roster) unscheduled(live map[string]bool, job string) bool {
	return len(live) == 0 && r.jobs[job] // mutation:roster-unread
}
