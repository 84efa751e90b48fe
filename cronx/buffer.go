package cronx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/claims"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// BufferOne and BufferAll queue a tick that comes while a run of its job is
// in progress, on any replica, where Forbid skips it and Replace cancels
// the run. The queue lives in etcd, under the job: a key per waiting tick,
// buffer/<seq>, named by the tick's zero-padded sequence, so that etcd lists
// the ticks in their order, and without a lease, so that it outlives the
// replica that wrote it. A tick's life under a buffering policy:
//
//  1. It is claimed as under Forbid, and only while its job's buffer is
//     empty too, so that it never runs before a tick that waits (bufferTurn).
//  2. A claim that finds the job busy buffers the tick (bufferTick): one
//     transaction claims the tick, as a claim does (the job's last, under
//     the term in leader mode), and puts its buffer key, while the buffer
//     holds fewer than its bound (BufferOne one, BufferAll maxBuffered);
//     a tick that finds the buffer full is dropped, and reported as
//     ReasonBufferFull.
//  3. A buffered tick's run waits its turn (claimBuffered): one transaction,
//     while its buffer key is there (its create revision), no run of the
//     job is in progress, no earlier tick is buffered and, in leader mode,
//     the term holds, creates the run's marker; the key stays. Just before
//     the run starts, one transaction deletes the key while the marker is
//     still the run's (takeBuffered); a key that cannot be deleted so gives
//     the turn back. So the buffered ticks start in order, one at a time,
//     each once the run before it has ended (or its marker has lapsed with
//     its runner's lease), and each at most once: a run starts only once
//     it has deleted its key, and a run that finds its key gone is told
//     errBufferTaken. A runner that dies between the two transactions
//     never started the run: its marker lapses, the key is still there,
//     and the tick runs elsewhere, once.
//  4. A new leader fires a run for every tick in its jobs' buffers
//     (resumeBuffers), so a buffer survives a change of leader; in claim
//     mode every replica does so at its Start, and a replica whose claim
//     of a tick finds it buffered by another waits for its turn too
//     (joinBuffered), so that any live replica runs it. A buffered run
//     given up before it starts (Stop, Remove, the end of a term) leaves
//     its key as it found it, and deletes its marker if its turn's claim
//     held (giveBackBuffered): the runs that wait for the tick, here, on
//     other replicas or a successor's, find the same key, woken by the
//     marker's deletion.
//
// A waiting run watches one key: the buffered tick just before its own,
// whose deletion (that tick's start) makes it the head, or, at the head,
// the job's markers, whose deletion (the run in progress ending) gives it
// its turn. So each deletion wakes one run (one a replica waiting for the
// tick, in claim mode), and k waiting ticks drain in about three tries
// and one or two watches each, not k wake-ups at every step.
//
// Cost: nothing for a tick whose job is idle (two more compares in its
// claim); a tick buffered costs a read and a write; its turn a write per
// try (about three) and a watch between tries, and its start one write
// more. A new term reads the buffers of its buffering jobs,
// bufferReadBatch jobs to a read.

// errBufferFull is the outcome of a tick that came while its job's buffer
// held its bound: it is dropped.
var errBufferFull = errors.New("the buffer of ticks waiting for the run in progress is full")

// errBufferTaken is the outcome of a buffered tick's turn that another run
// took: it ran (or runs) elsewhere.
var errBufferTaken = errors.New("the buffered tick was taken by another run")

// TickBuffered is a tick of a BufferOne or BufferAll job that came while a
// run of the job was in progress and waits in its buffer: this replica put
// it there, once in the cluster. Its run, when its turn comes, is a
// RunStarted with Tick set to it.
type TickBuffered struct {
	Scheduler string
	Job       string
	Tick      time.Time
	Instance  string
}

// buffered is a tick that waits in its job's buffer.
type buffered struct {
	key string
	rev int64 // the key's create revision: the entry's identity
}

// buffering reports whether o queues the ticks that come while a run is in
// progress.
func buffering(o Overlap) bool { return o == BufferOne || o == BufferAll }

// bufferBound is how many ticks a job's buffer holds under o.
func bufferBound(o Overlap) int {
	if o == BufferAll {
		return maxBuffered // mutation:buffer-all-bound
	}
	return 1
}

// bufferTick buffers r, whose claim found its job busy, and then claims its
// turn: it returns once the run may start, or why it does not (dropped:
// errBufferFull; claimed already; paused; its context's end). It retries
// while etcd does not answer until r's misfire deadline.
func (cl *claimer) bufferTick(r *run) (held, error) {
	co := cl.co
	job := r.job.name
	seq := r.tick.UnixNano()
	r.rs.unsend(r) // waiting again: etcd, then its turn
	latest := co.deadline(r)
	backoff := retryBackoff
	// A bounded job's tick is counted as it is buffered, as a claim counts
	// it (runsCounter): its run comes later, under that claim.
	var counter *claimcond.Counter
	if b := r.job.policy.bounds; b.bounded() {
		c := co.writes.runsCounter(job, b)
		counter = &c
	}
	for {
		last, reads := co.writes.bufferReads(job, counter)
		read, err := readWithin(r.ctx, co.conn.etcd(), reads)
		var resp *clientv3.TxnResponse
		if err == nil {
			var lastRev int64
			if kvs := read.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
				done, holder, perr := claimcond.Parse(string(kvs[0].Value))
				if perr == nil && done >= seq {
					return cl.joinBuffered(r, &election.ClaimedError{Key: last, Want: seq, Seq: done, Holder: holder})
				}
				lastRev = kvs[0].ModRevision
			} else if r.catchUp {
				return held{}, claims.ErrNeverClaimed // a catch-up resumes only a job that ran
			}
			if read.Responses[2].GetResponseRange().Count > 0 {
				return held{}, ErrPaused
			}
			if counter != nil {
				if kvs := read.Responses[3].GetResponseRange().Kvs; len(kvs) > 0 && counter.Reached(kvs[0].Version) {
					return held{}, counter.Err
				}
			}
			if read.Responses[1].GetResponseRange().Count >= int64(bufferBound(r.job.policy.overlap)) { // mutation:buffer-bound
				return held{}, errBufferFull
			}
			conds, puts, orElse := co.writes.bufferPut(r, lastRev, read.Header.Revision, counter)
			if !r.rs.send(r) {
				return held{}, fmt.Errorf("%w (%v)", context.Cause(r.ctx), errNotSent)
			}
			wctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), etcdTimeout)
			resp, err = co.conn.etcd().Txn(wctx).If(conds...).Then(puts...).Else(orElse...).Commit()
			cancel()
			r.rs.unsend(r)
		}
		switch {
		case err == nil && resp.Succeeded:
			co.rep.refusals.accepted()
			co.logger.Info("cronx: buffered: a run is in progress", "job", job, "tick", r.tick)
			if co.rep.observed() {
				co.rep.emit(TickBuffered{Scheduler: co.name, Job: job, Tick: r.tick, Instance: co.identity})
			}
			r.buf = &buffered{key: co.writes.bufferEntry(r), rev: resp.Header.Revision}
			return cl.claimBuffered(r) // mutation:buffer-turn
		case err == nil && r.term != nil && !termHolds(resp, r.term):
			co.rep.refusals.accepted()
			return held{}, election.ErrNotLeader
		case err == nil:
			co.rep.refusals.accepted()
			continue // the buffer or the job's last changed: read again
		}
		if err := retry(r, err, &backoff, latest, "buffering"); err != nil {
			return held{}, err
		}
	}
}

// joinBuffered waits for the turn of r's tick if another replica buffered
// it (claim mode: every replica that fired the tick waits, so that any live
// one runs it); otherwise it returns claimed, the claim's outcome.
func (cl *claimer) joinBuffered(r *run, claimed error) (held, error) {
	co := cl.co
	var ce *election.ClaimedError
	if r.term != nil || !errors.As(claimed, &ce) || ce.Seq != ce.Want {
		return held{}, claimed
	}
	key := co.writes.bufferEntry(r)
	ctx, cancel := context.WithTimeout(r.ctx, etcdTimeout)
	resp, err := co.conn.etcd().Get(ctx, key, clientv3.WithKeysOnly())
	cancel()
	if err != nil || len(resp.Kvs) == 0 {
		return held{}, claimed
	}
	r.buf = &buffered{key: key, rev: resp.Kvs[0].CreateRevision} // mutation:buffer-join
	return cl.claimBuffered(r)
}

// claimBuffered claims the turn of r, a buffered tick: it waits until no
// run of the job is in progress and no earlier tick of it is buffered, then
// creates its marker in one transaction, while its buffer key is there.
// The key stays until the run starts (takeBuffered), so that a turn given
// back leaves the tick where every waiter finds it. It retries while etcd
// does not answer, for as long as r's context lives: the key stays in etcd
// meanwhile, for a successor. A job paused meanwhile drops the tick
// (ReasonPaused).
func (cl *claimer) claimBuffered(r *run) (held, error) {
	co := cl.co
	_, seq, marker := co.writes.tick(r)
	backoff := retryBackoff
	// A try sent and not answered may have committed (unanswered.go): its
	// marker would then keep the tick waiting for itself.
	unanswered := false
	var floor int64
	if r.term != nil {
		floor = r.term.term.Revision
	}
	for {
		sess, _, err := cl.sessions.Reserve(r.ctx, markerLeaseKeys, 1)
		var resp *clientv3.TxnResponse
		if err == nil {
			conds, then, orElse := co.writes.bufferTurnClaim(r, sess)
			if !r.rs.send(r) {
				cl.sessions.Put(sess)
				cl.sessions.Landed(sess, 1)
				cl.releaseIfUnanswered(r, unanswered, marker, seq, floor, 0)
				return held{}, fmt.Errorf("%w (%v)", context.Cause(r.ctx), errNotSent)
			}
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), etcdTimeout)
			resp, err = co.conn.etcd().Txn(ctx).If(conds...).Then(then...).Else(orElse...).Commit()
			cancel()
			cl.sessions.Landed(sess, 1)
			if err == nil && resp.Succeeded {
				co.rep.refusals.accepted()
				rev := resp.Header.Revision
				return held{claim: election.Claim{Seq: seq, Revision: rev, Fence: election.Fence{Key: marker, Revision: rev}}, sess: sess}, nil
			}
			cl.sessions.Put(sess) // no marker was written
			r.rs.unsend(r)        // waiting again: its turn, or etcd
			if err != nil {
				unanswered = true // mutation:unanswered-buffer-not-adopted
			} else if h, ok := cl.adoptIfUnanswered(r, unanswered, marker, seq, floor); ok {
				return h, nil
			}
		}
		if err == nil {
			co.rep.refusals.accepted()
			rs := resp.Responses
			mine := rs[0].GetResponseRange().Kvs
			switch {
			case len(mine) == 0 || mine[0].CreateRevision != r.buf.rev:
				return held{}, errBufferTaken // its run started elsewhere
			case r.term != nil && !termHolds(resp, r.term):
				return held{}, election.ErrNotLeader
			case rs[1].GetResponseRange().Count > 0:
				cl.dropPaused(r)
				return held{}, ErrPaused
			}
			// The tick before r's, while there is one, goes first; only
			// the head of the buffer waits for the run in progress.
			awaited, prefix := co.writes.running(r.job.name), true
			if before := rs[2].GetResponseRange().Kvs; len(before) > 0 {
				awaited, prefix = string(before[0].Key), false // mutation:buffer-wake-one
			}
			var opts []clientv3.OpOption
			if prefix {
				opts = append(opts, clientv3.WithPrefix())
			}
			if err := awaitDeleted(r, awaited, resp.Header.Revision, opts...); err != nil {
				return held{}, err
			}
			backoff = retryBackoff
			continue
		}
		if err := retry(r, err, &backoff, time.Time{}, "turn"); err != nil {
			cl.releaseIfUnanswered(r, unanswered, marker, seq, floor, 0)
			return held{}, err
		}
	}
}

// dropPaused deletes r's buffer key, its job paused: a paused job runs no
// tick, and one buffered is not kept for its resumption.
func (cl *claimer) dropPaused(r *run) {
	ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
	defer cancel()
	key := r.buf.key
	_, err := cl.co.conn.etcd().Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", r.buf.rev)).
		Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		cl.co.logger.Error(err, "cronx: drop the buffered tick of a paused job", "job", r.job.name, "tick", r.tick)
	}
}

// takeBuffered deletes the buffer key of r, whose turn's claim c holds,
// before its run starts, while c's marker is there; it does nothing for a
// run that is not a buffered tick's. A run whose key is not deleted does
// not start (its claim is given back): a runner that dies between its
// turn's claim and this deletion leaves the key and its marker lapses, so
// the tick runs once, elsewhere, and never twice.
func (cl *claimer) takeBuffered(r *run, c held) error {
	if r.buf == nil { // mutation:buffer-taken
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), etcdTimeout)
	defer cancel()
	f := c.claim.Fence
	resp, err := cl.co.conn.etcd().Txn(ctx).If(f.Cmp(), clientv3.Compare(clientv3.CreateRevision(r.buf.key), "=", r.buf.rev)).
		Then(clientv3.OpDelete(r.buf.key)).Commit()
	switch {
	case err != nil:
		return fmt.Errorf("take the buffered tick %s: %w", r.buf.key, err)
	case !resp.Succeeded:
		return fmt.Errorf("take the buffered tick %s: %w", r.buf.key, errBufferTaken)
	}
	return nil
}

// giveBackBuffered deletes the marker of a buffered run whose turn's claim
// held but which did not start, while the marker is its: its buffer key was
// never deleted, so the tick waits still, first in its job's buffer, and
// the runs that wait for it (here, on other replicas, a successor's) are
// woken by the marker's deletion.
func (cl *claimer) giveBackBuffered(ctx context.Context, r *run, c held) error {
	f := c.claim.Fence
	_, err := cl.co.conn.etcd().Txn(ctx).If(f.Cmp()).Then(clientv3.OpDelete(f.Key)).Commit()
	if err != nil {
		return fmt.Errorf("give back the buffered tick %s: %w", r.buf.key, err)
	}
	return nil
}

// termHolds reports whether the last read of a failed transaction, of the
// term's key, found the term still current.
func termHolds(resp *clientv3.TxnResponse, ts *termState) bool {
	kvs := resp.Responses[len(resp.Responses)-1].GetResponseRange().Kvs
	return len(kvs) > 0 && kvs[0].CreateRevision == ts.term.Revision
}

// resumeBuffers fires a run for every tick waiting in the buffers of this
// replica's buffering jobs, in the background: at the start of a term in
// leader mode (ts its term), at Start in claim mode (ts nil). Each run then
// waits for its turn.
func (co *coordinator) resumeBuffers(ctx context.Context, ts *termState) {
	var refs []jobRef
	for _, e := range co.host.Entries() {
		if e.name != "" && e.policy != nil && buffering(e.policy.overlap) {
			refs = append(refs, refOf(&e))
		}
	}
	if len(refs) == 0 {
		return
	}
	co.work.add() // the client outlives the read
	go func() {
		defer co.work.done()
		cli := co.conn.etcd()
		for len(refs) > 0 && ctx.Err() == nil {
			batch := refs[:min(len(refs), bufferReadBatch)]
			resp, err := readWithin(ctx, cli, co.writes.buffers(batch))
			if err != nil {
				sleep(ctx, retryBackoff)
				continue
			}
			refs = refs[len(batch):]
			for i, ref := range batch {
				for _, kv := range resp.Responses[i].GetResponseRange().Kvs {
					seq, ok := co.writes.bufferSeq(string(kv.Key))
					if !ok {
						continue
					}
					r := newRun(co.runs, co, ref, time.Unix(0, seq).In(co.host.now().Location()))
					r.buf, r.term = &buffered{key: string(kv.Key), rev: kv.CreateRevision}, ts
					r.prev = seq - 1
					r.goCoordinated()
				}
			}
		}
	}()
}
