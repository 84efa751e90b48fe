package cronx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// WithRecovery runs a tick again, up to n times, when the replica that ran
// it died mid-run (a crash, or a pause or partition past its lease): its
// in-progress marker lapsed with its lease, and the job's history holds no
// record of the run's end. The next leader decides it once for the
// cluster, for the tick it catches up (within the job's catch-up window)
// and for the job's last claimed tick while its next has not come, by a
// claim in etcd that commits only under its term, while no marker of the
// tick exists, no record of it has been written since it looked, the tick
// is still the job's latest claim, the job is not paused, no other run of
// it is in progress (unless the job is Allow) and none of its ticks waits
// in its buffer (BufferOne, BufferAll), and fewer than n recoveries of the
// tick were claimed. A tick refused for a later claim, a pause or another
// run is reported not run as ReasonOvertaken, ReasonPaused or
// ReasonOverlap. The run again has a fence of
// its own, later than the lost run's, and Info.Recovered set (1 for the
// first recovery); its attempts (WithRetries) count from 1 again.
//
// A run that ended, failed, timed out, was replaced or was ended by Stop,
// Shutdown or the loss of its claim is recorded as it ends, and is never
// run again, however many records came after its own: the job's latest
// recorded tick is kept beside its bounded history. Without WithRecovery (or with n 0), such a tick is counted
// not run, as ReasonRunnerLost, as it is once n recoveries have been
// claimed. Recovery is leader mode's: in claim mode no replica takes over
// another's ticks, and the option changes nothing.
//
// A run again is the tick's second start, which G1 otherwise forbids: the
// lost run's context was ended before its lease could lapse (G2), so the
// two never run at once, but a job that outlives its context, or writes
// outside etcd without its Fence, may see the tick's work done twice.
func WithRecovery(n int) JobOption {
	return func(p *policyDraft) {
		if n < 0 {
			p.errs = append(p.errs, fmt.Errorf("WithRecovery(%d): want 0 or more runs again", n))
			return
		}
		p.recovery = n
	}
}

// errRecoveredEnough is what a tick reported as ReasonRunnerLost says once
// its recoveries are spent.
var errRecoveredEnough = errors.New("its runner was lost again, and its recoveries are spent")

// recovery decides, for a tick whose runner was lost (lost.go), whether it
// runs again here: the one point of a run's life where WithRecovery acts.
type recovery struct {
	co *coordinator
}

// lost handles a tick of job whose marker lapsed with no record of its run:
// it claims a recovery and starts the run again. It reports true once the
// tick is decided: run again, here or, decided by another claim,
// elsewhere; found recorded; or reported not run for why the recovery
// could not be claimed (refusal). It returns false, with why, when the
// tick is to be counted not run as ReasonRunnerLost.
func (rv recovery) lost(ctx context.Context, job string, tick time.Time) (bool, error) {
	co := rv.co
	e, ok := co.host.entryByName(job)
	if !ok || e.policy.recovery == 0 { // mutation:recovery-opt-in
		return false, errRunnerLost
	}
	ts := co.currentTerm()
	if ts == nil {
		// No longer leading: the next leader looks at the tick as its term
		// begins (termStarted), and decides.
		return true, nil
	}
	seq := tick.UnixNano()
	rctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	read, err := co.conn.etcd().Txn(rctx).Then(co.writes.recoveryReads(job)...).Commit()
	if err != nil {
		return false, err
	}
	var seen jobkeys.Recovered
	var rev int64
	if kvs := read.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
		seen, rev = jobkeys.ParseRecovered(kvs[0].Value), kvs[0].ModRevision
	}
	records, histRev := decodeHistory(read.Responses[1].GetResponseRange().Kvs)
	lastRev, claimed := int64(0), int64(0)
	if kvs := read.Responses[3].GetResponseRange().Kvs; len(kvs) > 0 {
		lastRev = kvs[0].ModRevision
		claimed, _, _ = jobkeys.ParseLast(string(kvs[0].Value))
	}
	// A later tick claimed, and maybe recorded since: the tick is
	// overtaken, unless the history shows it ran.
	if claimed > seq && !ranTick(records, tick) { // mutation:recovery-overtaken
		co.rep.notRun(job, tick, ReasonOvertaken, errRecoveryOvertaken)
		return true, nil
	}
	if recordedTick(records, jobkeys.DecodeOutcome(read.Responses[2].GetResponseRange().Kvs), tick) {
		co.logger.Info("cronx: not run again: a run of the tick was recorded", "job", job, "tick", tick)
		return true, nil
	}
	if claimed < seq {
		// Not the job's claim (etcd lost it): nobody ran the tick under it.
		co.logger.Info("cronx: recovery not claimed: the job's claim is not the tick's", "job", job, "tick", tick)
		return true, nil
	}
	next, n := seen.With(seq)
	if n > e.policy.recovery { // mutation:recovery-bound
		return false, errRecoveredEnough
	}
	sess, _, err := co.claims.sessions.Reserve(rctx, markerLeaseKeys, 1)
	if err != nil {
		return false, err
	}
	refusal := recoveryRefusal{co: co, job: job, tick: tick, overlap: e.policy.overlap}
	marker, cmps, puts, reads := co.writes.recoveryClaim(job, seq, [3]int64{rev, histRev, lastRev}, next, sess.Lease())
	conds := append(append([]clientv3.Cmp{ts.term.Fence.Cmp()}, cmps...), refusal.overlapConds()...)
	resp, err := co.conn.etcd().Txn(rctx).If(conds...).Then(puts...).Else(reads...).Commit()
	co.claims.sessions.Landed(sess, 1)
	r := newRun(co.runs, co, refOf(&e), tick)
	r.term, r.recovered = ts, n
	var c held
	switch {
	case err != nil:
		co.claims.sessions.Put(sess)
		// Unanswered, it may have committed (unanswered.go).
		h, ok := co.claims.adoptUnanswered(r, marker, seq, ts.term.Fence.Revision) // mutation:unanswered-recovery
		if !ok {
			co.claims.releaseIfUnanswered(r, true, marker, seq, ts.term.Fence.Revision, 0)
			r.cancel(nil)
			return false, err
		}
		c = h
	case !resp.Succeeded:
		co.claims.sessions.Put(sess)
		r.cancel(nil)
		refusal.tell(resp.Responses, rev, histRev, lastRev) // mutation:recovery-refusal-told
		return true, nil
	default:
		c = held{claim: election.Claim{Seq: seq, Revision: resp.Header.Revision,
			Fence: election.Fence{Key: marker, Revision: resp.Header.Revision}}, sess: sess}
	}
	co.logger.Info("cronx: running again a tick whose runner was lost", "job", job, "tick", tick, "recovered", n, "fence", c.claim.Revision)
	r.recovery = &c
	if !r.goCoordinated() {
		claims.Release(rctx, co.conn.etcd(), c.claim)
		co.claims.sessions.Put(sess)
	}
	return true, nil
}

// recordedTick reports whether a run of tick was recorded: its record is
// in the history, or the outcome key, written with each record, holds it
// or a later tick as the latest recorded (the history holds only the last
// historyLen records, and backfills, triggers and retried attempts push a
// tick's record out of it).
func recordedTick(records []Record, o jobkeys.Outcome, tick time.Time) bool {
	return ranTick(records, tick) || o.Tick >= tick.UnixNano() // mutation:recovery-recorded
}

// outcomeWithTick is o once the record of it is written: its tick, when
// it is a run of a scheduled tick (not a trigger or a backfill), is the
// latest recorded unless a later one was.
func outcomeWithTick(o jobkeys.Outcome, it finishItem) jobkeys.Outcome {
	if seq := it.tick.UnixNano(); !it.triggered && !it.backfill && seq > o.Tick { // mutation:recovery-tick-kept
		o.Tick = seq
	}
	return o
}

// termStarted looks, for the jobs that recover their runs, at the tick each
// last claimed as the term ctx began: a run of it that died mid-run, later
// than its catch-up window after its tick, is not the catch-up's to find. It
// is checked as a lost claim (lost.go) while it is still the job's latest
// tick (its next one has not come), so a run that ended long ago with no
// record (etcd did not take it) is not taken for lost; a run still going,
// this replica's or another's, is waited for until it is recorded. It
// never waits for etcd. Cost: per term, a read of up to maxTxnOps jobs' last keys, for the
// jobs that recover only.
func (rv recovery) termStarted(ctx context.Context) {
	co := rv.co
	var jobs []Entry
	for _, e := range co.host.Entries() {
		if e.name != "" && e.policy.recovery > 0 { // mutation:recovery-term-look
			jobs = append(jobs, e)
		}
	}
	if len(jobs) == 0 {
		return
	}
	start := co.host.now()
	co.work.add() // the client outlives it
	go func() {
		defer co.work.done()
		for len(jobs) > 0 && ctx.Err() == nil {
			batch := jobs[:min(len(jobs), maxTxnOps)]
			jobs = jobs[len(batch):]
			resp, err := readWithin(ctx, co.conn.etcd(), co.writes.claimReads(batch))
			if err != nil {
				co.logger.Info("cronx: the runs of jobs that recover not looked at for this term", "scheduler", co.name, "err", err)
				return
			}
			for i, e := range batch {
				kvs := resp.Responses[i].GetResponseRange().Kvs
				if len(kvs) == 0 {
					continue // never claimed
				}
				seq, holder, err := jobkeys.ParseLast(string(kvs[0].Value))
				if err != nil {
					continue
				}
				tick := time.Unix(0, seq).In(start.Location())
				if next := e.Schedule.Next(tick); !next.IsZero() && !next.After(start) { // mutation:recovery-latest
					continue // a later tick came due: this one's run is past looking for
				}
				if co.catchUpTick(&e, start).Equal(tick) {
					continue // the catch-up finds it (triage.go)
				}
				co.lost.check(e.name, tick, holder, true)
			}
		}
	}()
}
