package cronx

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/nested"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A job's spec key holds its schedule, and its registrations (by/<lease>)
// say that a live replica has the job: Status lists a job while one is
// there, and Pause and Trigger accept its name. The replica that publishes
// (the leader, or every replica in claim mode) writes the spec and its own
// registration of each job it adds, bound to one of its runners' leases
// (session.go) and written once per process and lease, and
// deletes them for each job it removes (the spec only if the key still
// holds that spec). With the spec goes its publication mark (since): when
// the cluster first had the job, which a job that never ran is caught up
// and counted from. So a job that a deploy drops leaves the listing once
// the last replica of the old version that published it has stopped (its
// lease revoked) or died (its lease expired, within the TTL). A job's
// claim, history and pause flag stay: a job added again under its name goes
// on from its last claimed tick, and so never runs a tick twice.
//
// publisher holds the spec changes not yet written, the latest per job, and
// writes them in order from one goroutine, so that a Remove followed by an
// Add of the same name ends with the spec in etcd, and thousands of changes
// made at once are a few transactions. Changes made while this replica does
// not publish (a follower, a stopped Cron, etcd not reached yet) wait for
// the next time it does.
type publisher struct {
	co *coordinator

	mu      sync.Mutex
	pending map[string]specChange // by job name
	all     bool                  // publish every entry's spec first
	writing bool                  // the writer runs
}

type specChange struct {
	spec    string
	removed bool
}

// queueSpec records that job name was added with spec, or removed.
func (pb *publisher) queueSpec(name, spec string, removed bool) {
	if name == "" {
		return
	}
	q := pb
	q.mu.Lock()
	if q.pending == nil {
		q.pending = map[string]specChange{}
	}
	q.pending[name] = specChange{spec: spec, removed: removed}
	q.mu.Unlock()
	pb.writeSpecs()
}

// publishAll asks for every entry's spec to be written, as when this
// replica starts publishing.
func (pb *publisher) publishAll() {
	q := pb
	q.mu.Lock()
	q.all = true
	q.mu.Unlock()
	pb.writeSpecs()
}

// writeSpecs starts the writer, unless it runs, nothing waits, or this
// replica does not publish now.
func (pb *publisher) writeSpecs() {
	ctx, ok := pb.co.publishing()
	if !ok {
		return
	}
	q := pb
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.writing || len(q.pending) == 0 && !q.all {
		return
	}
	q.writing = true
	pb.co.work.add() // the client outlives the writer
	go func() {
		defer pb.co.work.done()
		pb.specWriter(ctx)
	}()
}

// specWriter writes queued spec changes until none is left or ctx ends,
// retrying while etcd does not answer.
func (pb *publisher) specWriter(ctx context.Context) {
	q := pb
	backoff := retryBackoff
	for {
		q.mu.Lock()
		all, pending := q.all, q.pending
		if ctx.Err() != nil || !all && len(pending) == 0 {
			q.writing = false
			q.mu.Unlock()
			if ctx.Err() != nil {
				// Changes left wait for the next term, which may have
				// begun while this writer was at work.
				pb.writeSpecs()
			}
			return
		}
		q.all, q.pending = false, nil
		q.mu.Unlock()
		if all {
			// The entries, read after the changes were taken, hold every
			// job added; only removals are left to write.
			maps.DeleteFunc(pending, func(_ string, ch specChange) bool { return !ch.removed })
		}
		// A change made from now on is queued again, and written after
		// this round.
		starts := pb.startsOf(all, pending)
		err := pb.writeAllSpecs(ctx, all)
		if err == nil {
			err = pb.writeSpecChanges(ctx, pending)
		}
		if err == nil {
			err = pb.writeRoster(ctx)
		}
		if err == nil {
			pb.requestStarts(ctx, starts)
			backoff = retryBackoff
			continue
		}
		q.mu.Lock()
		q.all = q.all || all
		for name, ch := range pending {
			if _, newer := q.pending[name]; !newer {
				if q.pending == nil {
					q.pending = map[string]specChange{}
				}
				q.pending[name] = ch
			}
		}
		q.mu.Unlock()
		sleep(ctx, backoff)
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// writeAllSpecs records each entry's spec, and this replica's registration
// of it, when all is set. Of each publishBatch jobs it checks the specs and
// marks in a read-only transaction, writes, specBatch jobs a transaction,
// only the groups where one differs, then writes the registrations of
// regBatch jobs in one; so a new leader of fifty thousand unchanged jobs
// sends 25 reads, which etcd serves without a raft proposal, and 13
// registrations' writes, in maxPublishes goroutines.
func (pb *publisher) writeAllSpecs(ctx context.Context, all bool) error {
	if !all {
		return nil
	}
	specs := map[string]string{}
	for _, e := range pb.co.host.Entries() {
		if e.name != "" {
			specs[e.name] = e.spec
		}
	}
	names := slices.Sorted(maps.Keys(specs))
	batches := make(chan []string)
	errs := make(chan error, maxPublishes)
	var wg sync.WaitGroup
	for range maxPublishes {
		wg.Go(func() {
			var err error
			for batch := range batches {
				if err == nil {
					err = pb.checkSpecs(ctx, batch, specs)
				}
				if err == nil {
					err = pb.registerAll(ctx, batch)
				}
			}
			errs <- err
		})
	}
	for len(names) > 0 {
		n := pb.co.writes.termBatch(names, specs)
		batches <- names[:n]
		names = names[n:]
	}
	close(batches)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// registerAll writes this replica's registrations of jobs that are not in
// etcd already, regBatch to a transaction, each transaction's on a
// lease that held none before it. etcd with auth on checks, at each put
// that carries a lease, the keys already on the lease, and it checks a
// transaction's puts before it applies any of them: so none of these puts
// checks a key, where registrations written a spec batch at a time checked
// up to regLeaseKeys each. They follow the specs, as a job added later has
// its registration written after its spec (writeSpecChanges): a term's
// registrations of a batch of jobs follow that batch's specs (writeAllSpecs).
func (pb *publisher) registerAll(ctx context.Context, jobs []string) error {
	for len(jobs) > 0 {
		n := min(len(jobs), regBatch)
		ops, fresh, err := pb.register(ctx, jobs[:n], 1)
		if err != nil {
			return err
		}
		jobs = jobs[n:]
		if len(fresh) == 0 {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, etcdTimeout)
		_, err = pb.co.conn.etcd().Txn(pctx).Then(nested.Group(ops, regGroup)...).Commit()
		cancel()
		if err != nil {
			pb.forget(fresh)
			return err
		}
	}
	return nil
}

// checkSpecs checks the specs and marks of names, publishBatch to a read,
// and writes those of the groups of them where one differs, specBatch to
// a transaction.
func (pb *publisher) checkSpecs(ctx context.Context, names []string, specs map[string]string) error {
	for len(names) > publishBatch {
		if err := pb.checkSpecs(ctx, names[:publishBatch], specs); err != nil {
			return err
		}
		names = names[publishBatch:]
	}
	pctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	resp, err := pb.co.conn.etcd().Txn(pctx).Then(pb.co.writes.specsHeld(names, specs)...).Commit()
	cancel()
	if err != nil {
		return err
	}
	var stale []string
	for i, r := range resp.Responses {
		if !r.GetResponseTxn().GetSucceeded() { // mutation:spec-check-trusted
			stale = append(stale, names[i*specCheckJobs:min(len(names), (i+1)*specCheckJobs)]...)
		}
	}
	for len(stale) > 0 {
		n := min(len(stale), specBatch)
		if err := pb.writeSpecBatch(ctx, stale[:n], specs); err != nil {
			return err
		}
		stale = stale[n:]
	}
	return nil
}

// writeSpecBatch compares the specs of names and writes them if one
// differs.
func (pb *publisher) writeSpecBatch(ctx context.Context, names []string, specs map[string]string) error {
	cmps, marks, puts := pb.co.writes.termSpecs(names, specs, pb.sinceValue())
	pctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	_, err := pb.co.conn.etcd().Txn(pctx).If(cmps...).Then(marks...).Else(puts...).Commit() // mutation:mark-unchanged
	return err
}

// register is the puts of this replica's registrations of jobs that are
// not in etcd already (written this process's lease ago, and not lost with
// it), all bound to one lease of the runners' pool that holds fewer than
// open keys, and the jobs they register.
func (pb *publisher) register(ctx context.Context, jobs []string, open int) ([]clientv3.Op, []string, error) {
	lease, fresh, err := pb.co.claims.sessions.Register(ctx, jobs, open)
	if err != nil {
		return nil, nil, err
	}
	return pb.co.writes.registrations(fresh, lease), fresh, nil
}

// forget forgets the registrations of jobs not written, for the next
// round to write.
func (pb *publisher) forget(jobs []string) {
	for _, job := range jobs {
		pb.co.claims.sessions.Unregister(job)
	}
}

// writeSpecChanges writes changes, specChangeBatch to a transaction, with
// the registrations of the jobs added.
func (pb *publisher) writeSpecChanges(ctx context.Context, changes map[string]specChange) error {
	if len(changes) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(changes))
	since := pb.sinceValue()
	for len(names) > 0 {
		n := min(len(names), specChangeBatch)
		var ops []clientv3.Op
		var added, gone []string
		for _, name := range names[:n] {
			lease, ok := pb.co.claims.sessions.Registered(name)
			ops = append(ops, pb.co.writes.specChange(name, changes[name], since, lease, ok)...)
			if changes[name].removed {
				gone = append(gone, name)
			} else {
				added = append(added, name)
			}
		}
		regs, fresh, err := pb.register(ctx, added, regLeaseKeys)
		if err != nil {
			return err
		}
		ops = append(ops, regs...)
		pctx, cancel := context.WithTimeout(ctx, etcdTimeout)
		_, err = pb.co.conn.etcd().Txn(pctx).Then(ops...).Commit()
		cancel()
		if err != nil {
			pb.forget(fresh)
			return err // the changes left are queued again
		}
		pb.forget(gone)
		for _, name := range names[:n] {
			delete(changes, name)
		}
		names = names[n:]
	}
	return nil
}

// sinceValue is the mark of a publication now: this replica's clock and
// identity, as a claim value, so that a claim's compare orders it against
// a tick (claimcond.Known).
func (pb *publisher) sinceValue() string {
	return claimcond.Value(pb.co.clock.Now().UnixNano(), pb.co.identity)
}
