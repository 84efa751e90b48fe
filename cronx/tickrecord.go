package cronx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
)

// A leader's crowded tick of plain jobs (overlap Allow; no bounds,
// recovery, buffer or backfill; not a catch-up) is claimed by records
// (claims.ClaimTick), recordMin jobs or more to a batch of one tick: one
// transaction a record where ClaimEach puts each job's claim key and
// marker, so the tick's runs start after a few commits. The record's runs
// share its marker, which is their fence; a run is decided once it starts
// or is given back, and once every run is, the record is settled
// (claims.SettleTick: the claim keys of the runs that started move to the
// tick): with a run given back, by the run that decides last, before it
// goes on, so that Stop, which waits for that, resigns only once such a
// record is settled; else in the background (decide). The marker is
// released once every run of the record has been recorded.
//
// A term settles the records a term before it left before anything of it
// reads a job's claim key (settlePending), counting each job run unless it
// was paused or claimed already at the record's claim; the catch-up of
// such a tick then finds it claimed, and lost.go waits for the record's
// marker, as for a run's.
//
// Cost: a tick of N plain jobs, N/claims.MaxTickJobs claims and as many
// settles (writes.tickRecord), where ClaimEach takes N/claims.MaxEach
// heavier ones; one lease's key for each record; one read of the records
// at each term's start.

// errRecordUnanswered is the outcome of a run's own claim refused because
// the record of its tick, sent before it and not answered, committed.
var errRecordUnanswered = errors.New("a record of the tick, sent and not answered, committed after all; its runs did not start")

// tickShare is one record's claim, shared by its runs; its own mutex
// guards its counts.
type tickShare struct {
	co    *coordinator
	rec   claims.TickRecord
	sess  *election.Session // the lease of the marker
	batch []*claimReq       // its claims, whose keys are busy until it is settled

	mu        sync.Mutex
	undecided int    // runs neither started nor given back
	ended     int    // runs not recorded yet (or given back)
	given     []bool // by job: given back
}

func newTickShare(co *coordinator, rec claims.TickRecord, sess *election.Session, batch []*claimReq) *tickShare {
	n := 0
	for i := range rec.Jobs {
		if rec.Runs(i) {
			n++
		}
	}
	return &tickShare{co: co, rec: rec, sess: sess, batch: batch, undecided: n, ended: n, given: make([]bool, len(rec.Jobs))}
}

// decide records that the i-th job's run started, or was given back; the
// last run to decide settles the record: at once if a run was given back
// (a Stop, which waits for it, or the term's end), so that the record is
// settled before the term's successor reads it; else in the background
// once the tick's claims are off the wire, since a successor that finds
// it would count every run started, as they are.
func (s *tickShare) decide(i int, started bool) {
	s.mu.Lock()
	if !started {
		s.given[i] = true
	}
	s.undecided--
	last := s.undecided == 0
	given := slices.Contains(s.given, true)
	s.mu.Unlock()
	switch {
	case !last:
	case given:
		s.settle()
	default:
		co := s.co
		co.work.add() // the client outlives it
		go func() {
			defer co.work.done()
			co.claims.batch.quiet(claimsYield)
			s.settle()
		}()
	}
}

// settle settles the record, leaving out the runs given back; called once
// every run has decided, so nothing writes given meanwhile. A settle etcd
// does not take is tried again in the background while the Cron runs, its
// jobs' claims held back meanwhile (batcher.done); one never taken is
// settled by the next term, which counts the runs given back as run.
func (s *tickShare) settle() {
	if s.try() {
		s.co.claims.batch.done(s.batch)
		return
	}
	co := s.co
	co.work.add() // the client outlives it
	go func() {
		defer co.work.done()
		defer co.claims.batch.done(s.batch)
		ctx := co.runCtx()
		for backoff := releaseBackoff; ctx.Err() == nil; backoff = min(2*backoff, maxReleaseBackoff) {
			sleep(ctx, backoff)
			if s.try() {
				return
			}
		}
	}()
}

// try settles the record once, and reports whether etcd took it.
func (s *tickShare) try() bool {
	ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
	defer cancel()
	err := claims.SettleTick(ctx, s.co.conn.etcd(), s.rec, func(i int) bool { return !s.given[i] }) // mutation:tick-record-given-back-settled
	if err != nil {
		s.co.logger.Error(err, "cronx: a tick's record was not settled; tried again while the Cron runs, else the next term settles it",
			"tick", time.Unix(0, s.rec.Seq), "jobs", len(s.rec.Jobs))
	}
	return err == nil
}

// end records that a run of the record has been recorded or given back;
// the last releases the marker.
func (s *tickShare) end() {
	s.mu.Lock()
	s.ended--
	last := s.ended == 0
	s.mu.Unlock()
	if last {
		s.release()
	}
}

// release deletes the record's marker, once its runs are over.
func (s *tickShare) release() {
	ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
	defer cancel()
	if err := claims.Release(ctx, s.co.conn.etcd(), s.rec.Claim()); err != nil {
		s.co.logger.Info("cronx: a tick's marker is left to its lease", "tick", time.Unix(0, s.rec.Seq), "err", err)
	}
	s.co.claims.sessions.Put(s.sess)
}

// recordable reports whether r's claim may go in a tick's record.
func (r *run) recordable() bool {
	p := r.job.policy
	return r.term != nil && r.scheduled() && !r.catchUp && r.buf == nil && r.recovery == nil && r.lostRecord == "" &&
		p.overlap == Allow && !p.bounds.bounded() && p.recovery == 0
}

// sendRecord claims batch, claim requests of recordable runs of one tick
// under one term, by one record, and answers each.
func (b *batcher) sendRecord(batch []*claimReq) {
	co := b.cl.co
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	sess, _, err := b.cl.sessions.Reserve(ctx, markerLeaseKeys, 1)
	if err != nil {
		b.done(batch)
		for _, r := range batch {
			r.res <- claimRes{err: err}
		}
		return
	}
	landed := sync.OnceFunc(func() { b.cl.sessions.Landed(sess, 1) })
	defer landed()
	b.mu.Lock()
	b.records++
	id := fmt.Sprintf("%016x-%010d", sess.Lease(), b.records) // fixed width: no id heads another
	b.mu.Unlock()
	runs := make([]*run, len(batch))
	for i, r := range batch {
		runs[i] = r.run
	}
	tick := co.writes.tickRecord(runs, id, sess.Lease())
	if chunks := claims.TickChunks(tick.Jobs); len(chunks) > 1 {
		// Long names: a record each chunk, within etcd's request limit.
		b.cl.sessions.Put(sess)
		landed()
		for _, c := range chunks {
			b.sendRecord(batch[:len(c):len(c)])
			batch = batch[len(c):]
		}
		return
	}
	rec, err := claims.ClaimTick(ctx, co.conn.etcd(), batch[0].term, tick)
	if errors.Is(err, claims.ErrTickClaimed) {
		err = fmt.Errorf("%w: %v", election.ErrClaimed, err) // its key is this claim's own: never seen
	} else if err != nil && !errors.Is(err, election.ErrNotLeader) {
		// No answer: it may have committed, or may yet. Found, it stands;
		// not found, each run is claimed on its own, unless the record
		// turns up first (writes.tickClaim).
		rctx, rcancel := context.WithTimeout(context.Background(), etcdTimeout)
		recs, rerr := claims.PendingTicks(rctx, co.conn.etcd(), tick.Record, co.writes.tickKeys())
		rcancel()
		if rerr == nil && len(recs) == 1 { // mutation:tick-record-unadopted
			rec, err = recs[0], nil
		}
		for _, r := range batch {
			r.run.lostRecord = tick.Record
		}
	}
	landed()
	if err != nil {
		b.cl.sessions.Put(sess)
		b.done(batch)
		for _, r := range batch {
			r.res <- claimRes{err: err}
		}
		return
	}
	share := newTickShare(co, rec, sess, batch)
	starting := share.undecided // read before a run can decide
	for i, r := range batch {
		if skip := rec.Skipped[i]; skip != nil {
			if errors.Is(skip, claims.ErrTickPaused) {
				skip = ErrPaused
			}
			r.res <- claimRes{err: fmt.Errorf("claim %s seq %d: %w", r.key, r.seq, skip)}
			continue
		}
		r.res <- claimRes{claim: rec.Claim(), sess: sess, share: share, index: i}
	}
	if starting == 0 {
		// Nothing runs: settled at once, the marker released.
		share.settle()
		share.release()
	}
}

// settlePending settles the records a term before this one left, so that
// each job's claim key tells what was claimed; lost.go finds their runs'
// markers by the tick and its claimer.
func (co *coordinator) settlePending(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	recs, err := claims.PendingTicks(rctx, co.conn.etcd(), co.writes.tickRecords(), co.writes.tickKeys())
	if err != nil {
		co.logger.Error(err, "cronx: the records of ticks claimed by a term before could not all be read")
	}
	for _, r := range recs {
		if err := claims.SettleTick(rctx, co.conn.etcd(), r, nil); err != nil {
			co.logger.Error(err, "cronx: a tick's record left by a term before was not settled", "tick", time.Unix(0, r.Seq))
		}
	}
}
