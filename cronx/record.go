package cronx

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
	"github.com/batonhq/baton/internal/jobkeys"
	"github.com/batonhq/baton/internal/nested"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// recorder does the bookkeeping of a coordinated Cron's runs in etcd: it
// releases each ended run's marker and appends the run to its job's
// history. Its work yields to claims.
type recorder struct {
	co       *coordinator
	rs       *runs       // Stop's context waits for the records
	finishes finishQueue // runs ended and not yet recorded
}

func newRecorder(co *coordinator, rs *runs) *recorder {
	return &recorder{co: co, rs: rs}
}

// finishItem is a run that ended, to be recorded.
type finishItem struct {
	job        string
	tick       time.Time
	triggered  bool
	backfill   bool
	claim      election.Claim
	sess       *election.Session // holds the claim's marker
	start, end time.Time
	err        error
	timedOut   bool
	attempt    int        // recorded when the job has retries
	caughtUp   bool       // a missed tick's run (catchup.go)
	keep       bool       // another attempt follows: the marker stays
	share      *tickShare // the tick's record whose marker it shares; nil for none
	recovered  int        // a run again of a tick whose runner died (recovery.go)
	// policy is the job's: whether its failures pause it (pauseafter.go).
	policy *jobPolicy
}

// finishQueue holds ended runs for at most maxFinishes recorders, in the
// order they ended. Bookkeeping yields to claims: when many runs end
// together, the next tick's claims must not queue behind their history
// writes. And a run's goroutine ends with its job rather than wait here, so
// that ten thousand runs on one tick are not ten thousand parked stacks
// for the garbage collector to scan while the last of them start.
type finishQueue struct {
	mu        sync.Mutex
	items     []finishItem
	recorders int
	// recording holds the jobs whose runs a recorder is writing: another
	// recorder leaves their later runs queued, so each history is appended
	// to in order.
	recording map[string]bool
}

// finishLater queues an ended run for recording. Stop's context and the
// etcd client wait for it.
func (rc *recorder) finishLater(it finishItem) {
	rc.rs.queued(1)
	rc.co.work.add()
	q := &rc.finishes
	q.mu.Lock()
	q.items = append(q.items, it)
	// A recorder more only for more than those going take at their next
	// pass: runs that end a few at a time are written together, not one
	// transaction pair each.
	start := q.recorders == 0 || q.recorders < maxFinishes && len(q.items) > q.recorders*recordBatch // mutation:record-batch-waits
	if start {
		q.recorders++
	}
	q.mu.Unlock()
	if start {
		go rc.record()
	}
}

// record records queued runs until none is left, up to recordBatch of
// them at a time.
func (rc *recorder) record() {
	q := &rc.finishes
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			q.recorders--
			q.items = nil // let a burst's backing array go
			q.mu.Unlock()
			return
		}
		// The oldest runs of distinct jobs that no other recorder is
		// writing: a job's later run waits, so that its history is appended
		// to in order.
		if q.recording == nil {
			q.recording = map[string]bool{}
		}
		var batch, later []finishItem
		seen := map[string]bool{}
		n := 0
		for ; n < len(q.items) && len(batch) < recordBatch; n++ {
			it := q.items[n]
			if seen[it.job] || q.recording[it.job] {
				later = append(later, it)
				continue
			}
			seen[it.job] = true
			batch = append(batch, it)
		}
		if len(batch) == 0 {
			// All are runs of jobs being recorded; their recorders take them
			// next.
			q.recorders--
			q.mu.Unlock()
			return
		}
		for _, it := range batch {
			q.recording[it.job] = true
		}
		clear(q.items[:n-len(later)])
		q.items = q.items[n-len(later):]
		copy(q.items, later)
		q.mu.Unlock()
		rc.co.claims.batch.quiet(claimsYield)
		rc.recordAll(batch)
		rc.released(batch)
		q.mu.Lock()
		for _, it := range batch {
			delete(q.recording, it.job)
		}
		q.mu.Unlock()
		rc.rs.queued(-len(batch))
		for range batch {
			rc.co.work.done()
		}
	}
}

// recordAll records the ends of batch's runs. The runs etcd does not
// take are tried again, with backoff, while the Cron runs, their jobs'
// later runs waiting behind them so that each history stays in order; a
// write that may have committed unanswered is found in the history when
// tried again (appendHistory), or fails its compare and is. Once the Cron
// stops, or etcd refuses a request as too large or of too many operations,
// what is left is given up.
func (rc *recorder) recordAll(batch []finishItem) {
	ctx := rc.co.runCtx()
	for backoff := releaseBackoff; ; backoff = min(2*backoff, maxReleaseBackoff) {
		failed, err := rc.tryRecordAll(batch)
		if len(failed) == 0 {
			return
		}
		if refusal, probe := etcdRefusal(err); ctx.Err() != nil || refusal != nil && !probe {
			// The Cron stopped, or etcd refuses the batch as it is (too
			// large, or too many operations), and would again.
			rc.unrecorded(failed, err) // mutation:records-serial
			return
		}
		if backoff == releaseBackoff {
			rc.co.logger.Error(err, "cronx: runs not recorded in their jobs' histories yet; tried again while the Cron runs", "runs", len(failed))
		}
		sleep(ctx, backoff) // mutation:records-not-retried
		batch = failed
	}
}

// tryRecordAll writes the ends of batch's runs (writes.runEnd) in two
// round trips for recordBatch runs: one reads, one writes (histories long
// enough to pass recordBytes take a write more for each recordBytes). A
// run whose history changed meanwhile (a run of the job on another
// replica) is recorded again on its own. It returns the runs etcd did not
// take, and why.
func (rc *recorder) tryRecordAll(batch []finishItem) ([]finishItem, error) {
	if len(batch) == 1 {
		if err := rc.finish(batch[0]); err != nil {
			return batch, err
		}
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	cli := rc.co.conn.etcd()
	read, err := cli.Txn(ctx).Then(nested.Group(rc.co.writes.runEndReads(batch), recordReadGroup)...).Commit()
	if err != nil {
		return batch, err
	}
	reads := nested.Responses(read.Responses)
	ops := make([]clientv3.Op, len(batch))
	outcomes := make([]jobkeys.Outcome, len(batch))
	sizes := make([]int, len(batch))
	for i, it := range batch {
		hist, rev := decodeHistory(reads[i].GetResponseRange().Kvs)
		ops[i], outcomes[i] = rc.co.writes.runEnd(it, rc.record1(it), hist, rev, reads[len(batch)+i], true)
		sizes[i] = nested.Bytes(ops[i])
	}
	var failed []finishItem
	for from := 0; from < len(batch); {
		to, bytes := from+1, sizes[from]
		for to < len(batch) && bytes+sizes[to] <= recordBytes { // mutation:record-bytes-unbounded
			bytes += sizes[to]
			to++
		}
		f, ferr := rc.writeRecords(batch[from:to], ops[from:to], outcomes[from:to])
		failed, err = append(failed, f...), cmp.Or(ferr, err)
		from = to
	}
	return failed, err
}

// writeRecords commits the record writes ops of batch, as tryRecordAll
// made them, in one transaction, and returns the runs etcd did not take.
func (rc *recorder) writeRecords(batch []finishItem, ops []clientv3.Op, outcomes []jobkeys.Outcome) ([]finishItem, error) {
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout) // each write its own: a batch's may be a dozen
	defer cancel()
	wrote, err := rc.co.conn.etcd().Txn(ctx).Then(nested.Group(ops, recordWriteGroup)...).Commit()
	if err != nil {
		// It may have committed: the history read again tells.
		return batch, err
	}
	var failed []finishItem
	for i, r := range nested.Responses(wrote.Responses) {
		if !r.GetResponseTxn().Succeeded {
			if ferr := rc.finish(batch[i]); ferr != nil { // records the outcome too
				failed, err = append(failed, batch[i]), ferr
			}
			continue
		}
		rc.outcomeRecorded(batch[i], outcomes[i], wrote.Header.Revision)
	}
	return failed, err
}

// unrecorded gives up the history records of a batch that etcd did not
// take by the Cron's stop, in one log line: tried again one by one, each
// would wait its own etcdTimeout while etcd does not answer, and Stop's
// context with them. Their markers are released in the background while
// their sessions live.
func (rc *recorder) unrecorded(batch []finishItem, err error) {
	var jobs []string
	for _, it := range batch {
		if len(jobs) < 10 {
			jobs = append(jobs, it.job)
		}
		if !it.keep {
			rc.releaseLater(it)
		}
	}
	rc.co.logger.Error(err, "cronx: runs not recorded in their jobs' histories", "runs", len(batch), "jobs (the first ten)", jobs)
}

// finish records one run in its job's history and releases its marker,
// in that order (see writes.runEnd); the marker stays while the record is
// not taken, and the error says why.
func (rc *recorder) finish(it finishItem) error {
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	if err := rc.appendHistory(ctx, it); err != nil {
		return err
	}
	if !it.keep {
		rc.release(ctx, it)
	}
	return nil
}

// released uncounts the markers of runs recorded, released or kept for
// releaseLater: the lease they are on has room for others.
func (rc *recorder) released(batch []finishItem) {
	for _, it := range batch {
		if !it.keep && it.sess != nil { // mutation:released-uncounted
			rc.co.claims.sessions.Put(it.sess)
		}
		if !it.keep && it.share != nil {
			it.share.end()
		}
	}
}

// release releases one run's marker, retrying in the background while
// etcd does not answer.
func (rc *recorder) release(ctx context.Context, it finishItem) {
	if err := claims.Release(ctx, rc.co.conn.etcd(), it.claim); err != nil {
		rc.co.logger.Error(err, "cronx: release run marker", "job", it.job)
		rc.releaseLater(it)
	}
}

// releaseLater retries the release of a run's marker that etcd did not
// answer, for as long as the session holding it lives: left behind, the
// marker would keep a Forbid job busy on every replica while this one
// runs. Once the session has ended, its lease expires and takes the marker.
func (rc *recorder) releaseLater(it finishItem) {
	if it.sess == nil || it.claim.Fence.Key == "" {
		return
	}
	rc.co.work.add() // the client outlives it
	go func() {
		defer rc.co.work.done()
		sctx := it.sess.Context()
		for backoff := releaseBackoff; sctx.Err() == nil; backoff = min(2*backoff, maxReleaseBackoff) {
			sleep(sctx, backoff)
			ctx, cancel := context.WithTimeout(sctx, etcdTimeout)
			err := claims.Release(ctx, rc.co.conn.etcd(), it.claim)
			cancel()
			if err == nil {
				return
			}
		}
	}()
}

// record1 is the history record of one ended run.
func (rc *recorder) record1(it finishItem) Record {
	rec := Record{Tick: it.tick, Instance: rc.co.identity, Start: it.start, Duration: it.end.Sub(it.start), Triggered: it.triggered,
		Backfill: it.backfill, TimedOut: it.timedOut, Attempt: it.attempt, CaughtUp: it.caughtUp, Recovered: it.recovered}
	if it.err != nil {
		rec.Error = boundedError(it.err.Error())
	}
	return rec
}

// boundedError is msg cut to maxRecordedError bytes, on a character's
// boundary: a job's error may be as long as it likes, and the history of
// every job shares etcd's request size limit.
func boundedError(msg string) string {
	if len(msg) <= maxRecordedError {
		return msg
	}
	cut := maxRecordedError - len("...")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "..."
}

// appendHistory appends a run to its job's history, unless it is there
// already, retrying while other replicas write the history too; it
// returns why it did not.
func (rc *recorder) appendHistory(ctx context.Context, it finishItem) error {
	rec := rc.record1(it)
	for range 3 {
		resp, err := rc.co.conn.etcd().Txn(ctx).Then(rc.co.writes.runEndReads([]finishItem{it})...).Commit()
		if err != nil {
			return err
		}
		hist, rev := decodeHistory(resp.Responses[0].GetResponseRange().Kvs)
		for _, h := range hist {
			if h.Tick.Equal(rec.Tick) && h.Instance == rec.Instance && h.Start.Equal(rec.Start) && h.Triggered == rec.Triggered && h.Backfill == rec.Backfill {
				return nil
			}
		}
		write, next := rc.co.writes.runEnd(it, rec, hist, rev, resp.Responses[1], false)
		tr, err := rc.co.conn.etcd().Txn(ctx).Then(write).Commit()
		if err != nil {
			return err
		}
		if tr.Responses[0].GetResponseTxn().Succeeded {
			rc.outcomeRecorded(it, next, tr.Header.Revision)
			return nil
		}
	}
	return errors.New("the history kept changing under the write")
}
