package cronx

import (
	"context"
	"sync"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
)

// A leader with many jobs due on one tick, or a new term's catch-up of
// them, claims them in batches: one transaction claims up to
// claims.MaxEach ticks, each on its own, under the same conditions as a
// single claim, and tells each one's outcome (claims.ClaimEach). The
// batch's markers go on one lease (session.go), so that none of its puts
// checks more than markerLeaseKeys keys. A batch etcd does not take is
// claimed again one tick at a time.
//
// Cost: a crowded tick of N jobs is N/256 claim transactions (a few in
// flight at once, maxFlushers), and one more for each batch that holds a
// paused or a busy job or a tick claimed already. A term's catch-up of N
// jobs is N/1024 reads, and the claims of the ticks the read finds not
// claimed (sendCatchUp).

type claimReq struct {
	run    *run
	key    string
	seq    int64
	marker string // the run's marker, bound to the batch's lease
	opts   []election.ClaimOption
	term   election.Fence
	res    chan claimRes
}

type claimRes struct {
	claim election.Claim
	sess  *election.Session // the lease of the marker, counted on it; nil if none was taken
	share *tickShare        // the record that claimed it (tickrecord.go); nil for none
	index int               // its place in the record
	err   error
}

// batcher queues claims made under a leader term and sends them in batches.
type batcher struct {
	cl *claimer

	mu       sync.Mutex
	pending  []*claimReq
	flushers int
	records  int // tick records sent, for their ids
	// busy holds the claim keys of the claims in flight and of the
	// records not yet settled (done).
	busy map[string]bool
	// sending counts the batches on the wire; quietCh is closed when none
	// is (quiet).
	sending int
	quietCh chan struct{}
	// firing: the loop fires a tick's entries (firingTick); filled is
	// signalled when it stops, and when claims.MaxTickJobs claims wait.
	firing bool
	filled *sync.Cond
}

func newBatcher(cl *claimer) *batcher {
	quiet := make(chan struct{})
	close(quiet)
	b := &batcher{cl: cl, busy: map[string]bool{}, quietCh: quiet}
	b.filled = sync.NewCond(&b.mu)
	return b
}

// claim queues req and waits for its outcome, the session of its marker's
// lease and, claimed by a tick's record, that record's share.
func (b *batcher) claim(req *claimReq) claimRes {
	req.res = make(chan claimRes, 1)
	b.mu.Lock()
	b.pending = append(b.pending, req)
	if len(b.pending) == claims.MaxTickJobs {
		b.filled.Broadcast()
	}
	start := b.flushers < maxFlushers
	if start {
		b.flushers++
	}
	b.mu.Unlock()
	if start {
		go b.flush()
	}
	// The outcome is awaited even when the run is given up meanwhile (send
	// bounds the wait): a claim that commits must be given back, or its tick
	// is lost.
	return <-req.res
}

// flush sends batches until nothing is pending.
func (b *batcher) flush() {
	for {
		b.mu.Lock()
		// The first claim whose key no claim in flight holds heads the
		// batch; with none, the flusher ends, and the end of a claim in
		// flight starts one again (done).
		head := -1
		for i, r := range b.pending {
			if !b.busy[r.key] { // mutation:batch-busy-head
				head = i
				break
			}
		}
		if head < 0 {
			b.flushers--
			b.mu.Unlock()
			return
		}
		// One batch: one term, one tick per key; or, for a tick's
		// record, recordable runs of one tick.
		// A term's catch-up goes in batches of its own, which a read
		// answers where the ticks were claimed already (sendCatchUp).
		term, seq := b.pending[head].term, b.pending[head].seq
		record, catchUp := b.pending[head].run.recordable(), b.pending[head].run.catchUp
		limit := claims.MaxEach
		switch {
		case record:
			limit = claims.MaxTickJobs
		case catchUp:
			limit = claims.MaxRefusals
		}
		if record && b.firing && len(b.pending) < limit { // mutation:claims-sent-as-fired
			// The loop still fires the tick: its claims go in full
			// records, not in the small ones that came first, which
			// took every flusher while the rest of the tick waited.
			b.filled.Wait()
			b.mu.Unlock()
			continue
		}
		var batch, rest []*claimReq
		for _, r := range b.pending {
			if len(batch) < limit && r.term == term && !b.busy[r.key] && r.run.recordable() == record && r.run.catchUp == catchUp && (!record || r.seq == seq) { // mutation:batch-busy-join
				if !r.run.rs.send(r.run) {
					// Given up before it was sent: nothing to learn.
					r.res <- claimRes{err: errNotSent}
					continue
				}
				batch = append(batch, r)
				b.busy[r.key] = true
			} else {
				rest = append(rest, r)
			}
		}
		b.pending = rest
		if len(batch) > 0 {
			if b.sending == 0 {
				b.quietCh = make(chan struct{})
			}
			b.sending++
		}
		b.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		switch {
		case record && len(batch) >= recordMin: // mutation:tick-records-unused
			b.sendRecord(batch) // its keys stay busy until it is settled
		case catchUp:
			b.sendCatchUp(batch)
		default:
			b.sendEach(batch)
		}
		b.mu.Lock()
		if b.sending--; b.sending == 0 {
			close(b.quietCh)
		}
		b.mu.Unlock()
	}
}

// firingTick tells the batcher that the loop fires a tick's entries, until
// the function it returns is called: meanwhile a record's claims wait until
// claims.MaxTickJobs of them have come. The loop's pass does not wait on
// etcd, so neither do they for long.
func (b *batcher) firingTick() (done func()) {
	b.mu.Lock()
	b.firing = true
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.firing = false
		b.filled.Broadcast()
		b.mu.Unlock()
	}
}

// quiet waits until no batch of claims is on the wire, for up to d: the
// writes that follow a crowded tick's runs (their records, the records'
// settles) yield to the tick's claims, which the tick's lateness waits
// for, while etcd is busy with them.
func (b *batcher) quiet(d time.Duration) {
	b.mu.Lock()
	ch := b.quietCh
	b.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// done frees the keys of batch, whose claims have been answered or, for a
// tick's record, settled: a claim of one of them that waits goes next.
// Until then, no other claim of a key goes out: a record does not compare
// its jobs' claim keys, which it moves only when settled, so a claim of
// the same tick beside it (a catch-up, or a tick fired again) must see
// them moved.
func (b *batcher) done(batch []*claimReq) {
	b.mu.Lock()
	for _, r := range batch {
		delete(b.busy, r.key)
	}
	start := len(b.pending) > 0 && b.flushers < maxFlushers
	if start {
		b.flushers++
	}
	b.mu.Unlock()
	if start {
		go b.flush()
	}
}

// sendEach sends batch, claims.MaxEach claims to a transaction.
func (b *batcher) sendEach(batch []*claimReq) {
	for len(batch) > 0 {
		n := min(len(batch), claims.MaxEach)
		b.send(batch[:n])
		b.done(batch[:n])
		batch = batch[n:]
	}
}

// sendCatchUp answers the claims of a term's catch-up whose ticks were
// claimed already (by the term before, as after a handover) from one read
// of their claim keys, with the refusal their claims would get, and sends
// the others. Cost: one read-only transaction per claims.MaxRefusals
// claims, and the claims of the ticks not claimed.
func (b *batcher) sendCatchUp(batch []*claimReq) {
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	items := make([]claims.ClaimItem, len(batch))
	for i, r := range batch {
		items[i] = claims.ClaimItem{Key: r.key, Seq: r.seq, Opts: r.opts}
	}
	refusals, ok, err := claims.Refusals(ctx, b.cl.co.conn.etcd(), items)
	cancel()
	if err != nil || !ok {
		b.sendEach(batch) // the claims tell what the read could not
		return
	}
	var refused, rest []*claimReq
	for i, r := range batch {
		if refusals[i] != nil { // mutation:catch-up-read-ignored
			r.res <- claimRes{err: refusals[i]}
			refused = append(refused, r)
		} else {
			rest = append(rest, r)
		}
	}
	b.done(refused)
	b.sendEach(rest)
}

func (b *batcher) send(batch []*claimReq) {
	// Not cancelled with the term or the runs: the term's compare keeps a
	// deposed leader from claiming, and a claim that commits as its run is
	// given up is given back.
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	sess, _, err := b.cl.sessions.Reserve(ctx, markerLeaseKeys, len(batch))
	if err != nil {
		for _, r := range batch {
			r.res <- claimRes{err: err}
		}
		return
	}
	defer b.cl.sessions.Landed(sess, len(batch))
	items := make([]claims.ClaimItem, len(batch))
	for i, r := range batch {
		r.opts = append(r.opts[:len(r.opts):len(r.opts)], claims.WithMarker(r.marker, sess.Lease()))
		items[i] = claims.ClaimItem{Key: r.key, Seq: r.seq, Opts: r.opts, Held: r.run.fired} // mutation:batch-held
	}
	claimed, errs, err := claims.ClaimEach(ctx, b.cl.co.conn.etcd(), items)
	if err == nil {
		for i, r := range batch {
			r.res <- claimRes{claim: claimed[i], sess: sess, err: errs[i]}
		}
		return
	}
	if batch[0].run.term.ctx.Err() != nil {
		for _, r := range batch {
			r.res <- claimRes{sess: sess, err: err}
		}
		return
	}
	// etcd did not take the batch (too large for its limits, or it did not
	// answer): one by one, each retried as a single claim is.
	for _, r := range batch {
		c, err := b.cl.claimSingle(r.run, r.key, r.seq, r.opts)
		if err != nil {
			err = &unansweredError{err} // the batch may have committed it (unanswered.go)
		}
		r.res <- claimRes{claim: c, sess: sess, err: err}
	}
}
