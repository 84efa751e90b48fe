package cronx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/jobkeys"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The replica that schedules runs the backfills (backfill.go) of the jobs
// it has: a backfiller per term in leader mode (per Start in claim mode)
// watches the backfill directory, and drives each job's requests from a
// goroutine of the job's own, one request after another, oldest first, and
// one tick at a time: it fires a run of the next tick and waits for the
// run's end before it fires the one after. The run claims its tick itself
// (claimBackfill), as a trigger's run claims its request.
//
// Cost: a backfilled tick costs a read of its request and one transaction
// that moves the progress on and creates the run's marker, then the run's
// record, as a tick's; the watch costs etcd one watcher per scheduling
// replica, and a new term one read of the directory's keys.

// backfillClaim is what a run of a backfill's tick claims it by.
type backfillClaim struct {
	key  string // the request
	base int64  // the request's Last the tick follows: the claim needs it unchanged
	last bool   // the tick is the request's last: its claim finishes it
	// Set by the claim for its give back, on the run's goroutine.
	prev    string // the request's value before the claim
	claimed int64  // the claim's revision
	// sent is the request's value before the last claim sent, and next
	// the one that claim wrote: what a claim whose reply was lost had
	// done, if it committed (unanswered.go).
	sent string
	next jobkeys.Backfill
}

// errBackfillMoved is the outcome of a claim of a backfill's tick whose
// request moved on meanwhile: another replica claimed the tick, or the
// request is gone or finished. The driver reads it again.
var errBackfillMoved = errors.New("the backfill moved on")

// backfiller drives the backfills of one term (or Start, in claim mode).
type backfiller struct {
	co  *coordinator
	ctx context.Context // the term's
	ts  *termState      // nil in claim mode

	mu      sync.Mutex
	active  map[string]bool // jobs whose driver runs
	pending map[string]bool // jobs whose requests changed since their driver read them
}

// watchBackfills drives the backfills of the jobs this replica has until
// ctx ends, from goroutines the coordinator's work counts.
func (co *coordinator) watchBackfills(ctx context.Context, ts *termState) {
	b := &backfiller{co: co, ctx: ctx, ts: ts, active: map[string]bool{}, pending: map[string]bool{}}
	co.work.add()
	go func() {
		defer co.work.done()
		b.watch()
	}()
}

// watch kicks the driver of each job with a request: those there when it
// starts, then each one written.
func (b *backfiller) watch() {
	watchPuts(b.ctx, b.co.conn.etcd(), b.co.writes.backfills(), func(kv *mvccpb.KeyValue, _ bool) {
		b.kick(b.co.writes.backfillJob(string(kv.Key)))
	}, clientv3.WithKeysOnly())
}

// kick has job's driver read its requests again, starting it if none runs.
func (b *backfiller) kick(job string) {
	if checkJobName(job) != nil {
		return // a stray key
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending[job] = true
	if b.active[job] {
		return
	}
	b.active[job] = true
	b.co.work.add()
	go func() {
		defer b.co.work.done()
		b.drive(job)
	}()
}

// drive runs job's requests while kicks come, until the term ends.
func (b *backfiller) drive(job string) {
	for {
		b.mu.Lock()
		if !b.pending[job] || b.ctx.Err() != nil {
			delete(b.active, job)
			delete(b.pending, job)
			b.mu.Unlock()
			return
		}
		b.pending[job] = false
		b.mu.Unlock()
		b.runRequests(job)
	}
}

// runRequests runs job's requests, oldest first, each to its end; it
// returns early when the term ends or this replica does not have the job.
func (b *backfiller) runRequests(job string) {
	co := b.co
	if _, ok := co.host.entryByName(job); !ok {
		return // another version of the app may have it
	}
	resp, err := co.conn.etcd().Get(b.ctx, co.writes.backfillsOf(job), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		b.mu.Lock()
		b.pending[job] = true // read again
		b.mu.Unlock()
		sleep(b.ctx, watchRetry)
		return
	}
	for _, kv := range resp.Kvs {
		if !b.runRequest(job, string(kv.Key)) {
			return
		}
	}
}

// runRequest runs the request key of job to its end, and reports whether
// the driver goes on with the job's next one: false when the term ended,
// the Cron stopped, or this replica no longer has the job.
func (b *backfiller) runRequest(job, key string) bool {
	co := b.co
	for b.ctx.Err() == nil {
		resp, err := co.conn.etcd().Get(b.ctx, key)
		if err != nil {
			sleep(b.ctx, watchRetry)
			continue
		}
		if len(resp.Kvs) == 0 {
			return true // removed by hand
		}
		kv := resp.Kvs[0]
		v := jobkeys.ParseBackfill(kv.Value)
		if v.Finished || v.Refused != "" {
			return true
		}
		e, ok := co.host.entryByName(job)
		if !ok {
			return false
		}
		loc := co.host.now().Location()
		if v.Ticks == 0 || v.Ticks > v.Max {
			// Asked through a Control, which has no schedule: counted here.
			n, err := countBackfill(job, e.Schedule, time.Unix(0, v.From).In(loc), time.Unix(0, v.To).In(loc), v.Max)
			switch {
			case err != nil:
				v.Refused = err.Error()
				co.logger.Error(err, "cronx: backfill refused", "job", job)
			case n == 0:
				v.Finished = true
			default:
				v.Ticks = n
			}
			b.update(job, key, kv.ModRevision, v)
			continue
		}
		tick, following := nextBackfillTick(e.Schedule, v, loc)
		if tick.IsZero() || v.Done >= v.Ticks {
			// The schedule changed since the count: what is left of the
			// range has no tick, or more than were counted.
			v.Finished = true
			b.update(job, key, kv.ModRevision, v)
			continue
		}
		r := newRun(co.runs, co, refOf(&e), tick)
		r.bf = &backfillClaim{key: key, base: v.Last,
			last: following.IsZero() || !following.Before(time.Unix(0, v.To)) || v.Done+1 >= v.Ticks}
		r.term = b.ts
		if !r.goCoordinated() {
			return false // Stop came
		}
		select {
		case <-r.ctx.Done():
		case <-b.ctx.Done():
			return false
		}
	}
	return false
}

// update writes v, the request key's value read at rev, unless the request
// changed since (or, in leader mode, the term ended), and tells the
// observers.
func (b *backfiller) update(job, key string, rev int64, v jobkeys.Backfill) {
	co := b.co
	conds := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)}
	if b.ts != nil {
		conds = append(conds, b.ts.term.Cmp())
	}
	ctx, cancel := context.WithTimeout(b.ctx, etcdTimeout)
	defer cancel()
	tr, err := co.conn.etcd().Txn(ctx).If(conds...).Then(clientv3.OpPut(key, v.Encode())).Commit()
	if err != nil {
		sleep(b.ctx, retryBackoff)
		return
	}
	if tr.Succeeded {
		co.rep.backfillProgressed(job, v)
	}
}

// claimBackfill claims r's tick of its backfill: in one transaction, while
// the request's progress is the one r's tick follows (and, in leader mode,
// the term holds, the job is not paused and, under Forbid or Replace, no
// run of it is in progress), it moves the progress on to r's tick and
// creates r's marker. A busy job is waited for, as a paused one, until
// its marker is gone or it is resumed; etcd not answering is retried until
// r's context ends: a backfilled tick has no misfire deadline.
func (cl *claimer) claimBackfill(r *run) (held, error) {
	co := cl.co
	job := r.job.name
	backoff := retryBackoff
	// A try sent and not answered may have claimed the tick (unanswered.go).
	unanswered := false
	seq := r.tick.UnixNano()
	marker := co.writes.backfillMarker(job, seq)
	giveUp := func(err error) (held, error) {
		cl.releaseIfUnanswered(r, unanswered, marker, seq, 0, 0)
		return held{}, err
	}
	for {
		sess, _, err := cl.sessions.Reserve(r.ctx, markerLeaseKeys, 1) // mutation:backfill-marker-counted
		if err == nil {
			var c held
			var rev int64
			c, rev, err = cl.sendBackfill(r, sess)
			cl.sessions.Landed(sess, 1)
			if err != nil {
				cl.sessions.Put(sess) // no marker was written, or it is adopted and counted again
			}
			switch {
			case err == nil:
				co.rep.refusals.accepted()
				return c, nil
			case errors.Is(err, errNotSent):
				return giveUp(fmt.Errorf("%w (%v)", context.Cause(r.ctx), err))
			case errors.Is(err, election.ErrBusy):
				co.rep.refusals.accepted()
				if err := awaitDeleted(r, co.writes.backfillGuard(r), rev, clientv3.WithPrefix()); err != nil {
					return held{}, err
				}
				backoff = retryBackoff
				continue
			case errors.Is(err, ErrPaused):
				co.rep.refusals.accepted()
				if err := awaitDeleted(r, co.writes.paused(job), rev); err != nil {
					return held{}, err
				}
				backoff = retryBackoff
				continue
			case errors.Is(err, errBackfillMoved), errors.Is(err, election.ErrNotLeader):
				co.rep.refusals.accepted()
				if h, ok := cl.adoptIfUnanswered(r, unanswered, marker, seq, 0); ok {
					r.bf.prev, r.bf.claimed = r.bf.sent, h.claim.Revision
					co.rep.backfillProgressed(job, r.bf.next)
					return h, nil
				}
				return held{}, err
			default:
				unanswered = true // mutation:unanswered-backfill-not-adopted
			}
		}
		if err := retry(r, err, &backoff, time.Time{}, "backfill"); err != nil {
			return giveUp(err)
		}
	}
}

// sendBackfill reads r's request and sends one claim of its tick. A busy
// or paused job's claim returns ErrBusy or ErrPaused and the revision that
// found it so.
func (cl *claimer) sendBackfill(r *run, sess *election.Session) (held, int64, error) {
	co := cl.co
	bf := r.bf
	job := r.job.name
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), etcdTimeout)
	defer cancel()
	resp, err := co.conn.etcd().Get(ctx, bf.key)
	if err != nil {
		return held{}, 0, fmt.Errorf("read the backfill %s: %w", bf.key, err)
	}
	if len(resp.Kvs) == 0 {
		return held{}, 0, errBackfillMoved
	}
	kv := resp.Kvs[0]
	v := jobkeys.ParseBackfill(kv.Value)
	seq := r.tick.UnixNano()
	if v.Finished || v.Refused != "" || v.Last != bf.base {
		return held{}, 0, errBackfillMoved
	}
	next := v
	next.Done++
	next.Last = seq // mutation:backfill-progress
	next.Finished = bf.last
	if !r.rs.send(r) {
		return held{}, 0, errNotSent
	}
	bf.sent, bf.next = string(kv.Value), next
	marker, conds, then, orElse := co.writes.backfillClaim(r, kv, sess.Lease())
	tr, err := co.conn.etcd().Txn(ctx).If(conds...).Then(then...).Else(orElse...).Commit()
	if err == nil && tr.Succeeded {
		rev := tr.Header.Revision
		bf.prev, bf.claimed = string(kv.Value), rev
		co.rep.backfillProgressed(job, next)
		return held{claim: election.Claim{Seq: seq, Revision: rev, Fence: election.Fence{Key: marker, Revision: rev}}, sess: sess}, 0, nil
	}
	r.rs.unsend(r) // waiting again: its turn, or etcd
	if err != nil {
		return held{}, 0, fmt.Errorf("claim the backfilled tick %s of %s: %w", stamp(r.tick), bf.key, err)
	}
	rs := tr.Responses
	switch kvs := rs[0].GetResponseRange().Kvs; {
	case len(kvs) == 0 || kvs[0].ModRevision != kv.ModRevision:
		return held{}, 0, errBackfillMoved
	case rs[1].GetResponseRange().Count > 0:
		return held{}, tr.Header.Revision, ErrPaused
	case rs[2].GetResponseRange().Count > 0:
		return held{}, tr.Header.Revision, election.ErrBusy
	default:
		return held{}, 0, election.ErrNotLeader
	}
}

// giveBackBackfill gives back the claim of a backfilled tick whose run
// does not start: the request's progress goes back to what it was, while
// no later claim moved it on, so that the tick is claimed again; and the
// run's marker goes.
func (cl *claimer) giveBackBackfill(ctx context.Context, r *run, c held) error {
	bf := r.bf
	f := c.claim.Fence
	dropMarker := clientv3.OpTxn([]clientv3.Cmp{f.Cmp()}, []clientv3.Op{clientv3.OpDelete(f.Key)}, nil)
	tr, err := cl.co.conn.etcd().Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(bf.key), "=", bf.claimed)).
		Then(clientv3.OpPut(bf.key, bf.prev), clientv3.OpDelete(f.Key)). // mutation:backfill-give-back
		Else(dropMarker).Commit()
	if err != nil {
		return fmt.Errorf("give back the backfilled tick %s of %s: %w", stamp(r.tick), bf.key, err)
	}
	if tr.Succeeded {
		cl.co.rep.backfillProgressed(r.job.name, jobkeys.ParseBackfill([]byte(bf.prev)))
	}
	return nil
}
