package cronx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/claims"
	"github.com/batonhq/baton/internal/jobkeys"
	"github.com/batonhq/baton/internal/notrun"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// writes builds what a coordinated Cron writes to etcd, and the reads its
// writes are made against: the three writes that grow with its jobs, a
// tick's claim, a run's end and a term's publication, and the others, of
// its policies (a buffered tick, a trigger, a backfilled tick, a recovery,
// a run at start, a pause after failures), of the ticks not run and of a
// new term's checks (lost.go, gap.go). The rest of the scheduler sends
// what it builds, and names no key (TestTheSchedulersFilesNameNoKey). A
// write's cost is beside it, per job, tick or term; the requests that
// carry them are the sender's (DESIGN.md, "What a crowded tick and a term
// write"). The operator's writes (a pause, a trigger's or a backfill's
// request, by a Control, which has a layout and no scope) are Control's,
// in control.go and backfill.go.
type writes struct{ sc *scope }

// tick is a scheduled tick's claim key (its job's last), the tick's
// sequence and its in-progress marker.
func (w writes) tick(r *run) (key string, seq int64, marker string) {
	seq = r.tick.UnixNano()
	return w.sc.keys.Last(r.job.name), seq, w.sc.keys.TickMarker(r.job.name, seq)
}

// tickClaim is the conditions of the claim of tick r, in leader mode
// under term ts (nil in claim mode); resumed, that the claim must find the
// job claimed before (a claim-mode session lost since the tick fired).
//
// Cost, per run: its last key compared and put, its marker put on a lease
// of at most markerLeaseKeys (claimMarkerLeaseKeys in claim mode) keys, and
// its pause key's absence compared; a bounded job's runs key read and put;
// a Forbid or buffering job's markers (and buffer) ranged. A leader sends
// claims.MaxEach of them in one transaction (batch.go); a new term's
// catch-up compares its since key too.
func (w writes) tickClaim(r *run, ts *termState, resumed bool) []election.ClaimOption {
	keys := w.sc.keys
	opts := []election.ClaimOption{
		election.ClaimedBy(w.sc.identity),
		claims.UnlessExists(keys.Paused(r.job.name), ErrPaused), // mutation:pause
	}
	if ts != nil {
		opts = append(opts, election.UnderTerm(ts.term.Fence)) // mutation:under-term
	}
	if b := r.job.policy.bounds; b.bounded() { // mutation:max-runs
		c := w.runsCounter(r.job.name, b)
		opts = append(opts, claims.Counted(c.Key, c.Max, c.Value, c.Err))
	}
	if r.job.policy.overlap == Forbid { // mutation:forbid
		opts = append(opts, claims.Exclusive(keys.Running(r.job.name)))
	}
	opts = append(opts, w.bufferTurn(r.job)...) // mutation:buffer-overlap
	switch {
	case r.catchUp && ts != nil:
		// A job that never ran is caught up too if a term before this
		// one published it, by the tick: the tick came due with nobody
		// to run it.
		opts = append(opts, claims.IfClaimedOrKnownBefore(keys.Since(r.job.name), ts.term.Fence.Revision))
	case r.catchUp || resumed:
		opts = append(opts, claims.IfClaimedBefore())
	}
	if r.lostRecord != "" {
		// A record of the tick went out unanswered, and was not found: it
		// may commit yet, and this claim must not beside it.
		opts = append(opts, claims.UnlessExists(r.lostRecord, errRecordUnanswered))
	}
	return opts
}

// runsCounter is the count of a bounded job's runs in its runs key, which
// refuses a claim once the job has run WithMaxRuns times: in a tick's
// claim (tickClaim), or in one made outside ClaimSeq (a tick put in its
// job's buffer, buffer.go). Cost, per run: its runs key read and put.
func (w writes) runsCounter(job string, p boundsPolicy) claimcond.Counter {
	limit := int64(math.MaxInt64)
	if p.maxRuns > 0 {
		limit = int64(p.maxRuns)
	}
	v := jobkeys.Runs{Max: p.maxRuns, Start: p.start, End: p.end}
	return claimcond.Counter{Key: w.sc.keys.Runs(job), Max: limit, Value: v.Encode(), Err: ErrMaxRuns}
}

// tickRecord is the record of one tick for runs, recordable runs of one
// tick of one term (tickrecord.go), with id unique to this process and
// its marker on lease. Cost, per run: its job's claim key and pause read
// in one range (with its notrun and outcome, which lie between them), its
// name and both keys in the record, one transaction a record; then, at the
// settle, its claim key compared and put.
func (w writes) tickRecord(runs []*run, id string, lease clientv3.LeaseID) claims.Tick {
	keys := w.sc.keys
	seq := runs[0].tick.UnixNano()
	t := claims.Tick{Record: keys.TickRecord(seq, id), Marker: keys.TickRuns(seq, id), Lease: lease, Seq: seq,
		Holder: w.sc.identity, Jobs: make([]claims.TickJob, len(runs))}
	for i, r := range runs {
		t.Jobs[i] = w.tickJob(r.job.name)
	}
	return t
}

// tickJob is job's place in a tick's record: its claim and pause keys.
func (w writes) tickJob(job string) claims.TickJob {
	return claims.TickJob{Name: job, Last: w.sc.keys.Last(job), Pause: w.sc.keys.Paused(job)}
}

// tickKeys derive the keys of a record that was read, as this replica's
// client sees them.
func (w writes) tickKeys() claims.TickKeys {
	return claims.TickKeys{Marker: w.sc.keys.TickRunsOf, Job: w.tickJob}
}

// withdrawTick gives back the claim c of tick r, whose run did not start:
// its last key goes back to r.prev, and its marker goes. Cost: one
// transaction of two writes, or a second that deletes the marker alone
// when a later claim moved the key on.
func (w writes) withdrawTick(ctx context.Context, cli *clientv3.Client, r *run, c election.Claim) error {
	err := claims.Withdraw(ctx, cli, w.sc.keys.Last(r.job.name), c, r.prev, w.sc.identity)
	if errors.Is(err, claims.ErrNotWithdrawn) {
		// A later claim moved the key on (it replaced this run, or ran
		// on a successor): only the marker is this run's to delete.
		err = claims.Release(ctx, cli, c)
	}
	return err
}

// runEndReads are the reads a run's end is written against, for each run
// of batch: its history, then, in the same order, its outcome.
func (w writes) runEndReads(batch []finishItem) []clientv3.Op {
	jobs := make([]string, len(batch))
	for i, it := range batch {
		jobs[i] = it.job
	}
	return append(each(jobs, w.sc.keys.History), w.outcomeGets(jobs)...)
}

// outcomeGets are the reads of jobs' outcome keys, in their order.
func (w writes) outcomeGets(jobs []string) []clientv3.Op { return each(jobs, w.sc.keys.Outcome) }

// each is a read of key(job), with opts, for each of jobs, in their order.
func each[J any](jobs []J, key func(J) string, opts ...clientv3.OpOption) []clientv3.Op {
	gets := make([]clientv3.Op, len(jobs))
	for i, job := range jobs {
		gets[i] = clientv3.OpGet(key(job), opts...)
	}
	return gets
}

// runEnd is the write of the end of run it, recorded as rec, given its
// job's history as read (hist, at revision rev) and its outcome key as read
// with it: a transaction that appends rec to the history unless the history
// changed since, and with it writes the job's outcome, its pause when its
// policy says so (pauseAfter), and, with release, deletes the run's
// marker if it is still the run's own. A marker goes with its run's
// history write, never before it: a successor that finds neither marker
// nor record reports the tick as not run (lost.go). next is the outcome it
// writes.
//
// Cost, per run: two keys read, its history and outcome compared and put,
// its marker deleted. A recorder writes recordBatch of them in two
// transactions (record.go).
func (w writes) runEnd(it finishItem, rec Record, hist []Record, rev int64, outRead *etcdserverpb.ResponseOp, release bool) (op clientv3.Op, next jobkeys.Outcome) {
	key := w.sc.keys.History(it.job)
	next, also := w.outcomeOps(it, outRead)
	write := append([]clientv3.Op{clientv3.OpPut(key, encodeHistory(hist, rec))}, also...)
	if f := it.claim.Fence; release && f.Key != "" && !it.keep {
		write = append(write, clientv3.OpTxn([]clientv3.Cmp{f.Cmp()}, []clientv3.Op{clientv3.OpDelete(f.Key)}, nil))
	}
	return clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)}, write, nil), next
}

// outcomeOps are the writes that go with the history write of it, given
// the outcome key as read with the history: the job's new outcome, and
// its pause when its policy says so; for an attempt that is retried, only
// the latest recorded tick (outcomeWithTick), if it moves. next is the outcome
// they write.
func (w writes) outcomeOps(it finishItem, read *etcdserverpb.ResponseOp) (next jobkeys.Outcome, ops []clientv3.Op) {
	prev := jobkeys.DecodeOutcome(read.GetResponseRange().GetKvs())
	seen := outcomeWithTick(prev, it)
	key := w.sc.keys.Outcome(it.job)
	if it.keep {
		if seen == prev {
			return jobkeys.Outcome{}, nil
		}
		return jobkeys.Outcome{}, []clientv3.Op{clientv3.OpPut(key, seen.Encode())}
	}
	next = outcomeAfter(seen, it)
	ops = []clientv3.Op{clientv3.OpPut(key, next.Encode())}
	return next, append(ops, w.pauseAfter(it, next)...)
}

// pauseAfter is the write that pauses the job of it once its outcome o
// reaches its policy's failures (pauseafter.go): the pause key, unless it
// is there already, so that a pause by hand keeps who paused it. Cost, per
// run that pauses its job: one key compared and put, in its run's end.
func (w writes) pauseAfter(it finishItem, o jobkeys.Outcome) []clientv3.Op {
	n := 0
	if it.policy != nil {
		n = it.policy.pauseAfter
	}
	if n == 0 || o.Failures < n { // mutation:pause-after
		return nil
	}
	key := w.sc.keys.Paused(it.job)
	reason := fmt.Sprintf("%d consecutive failures; the last: %s", o.Failures, boundedError(it.err.Error()))
	return []clientv3.Op{clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}, // mutation:pause-after-kept
		[]clientv3.Op{clientv3.OpPut(key, jobkeys.EncodePaused(w.sc.identity, reason))}, nil)}
}

// termSpecs is the write of a term's specs of names, specBatch of them to
// a transaction (publish.go): if every spec is as etcd has it (cmps), only
// each job's since mark where it is missing (same); else every spec and
// mark (changed). Cost, per job of an unchanged term: its spec compared and
// its since key's creation compared.
func (w writes) termSpecs(names []string, specs map[string]string, since string) (cmps []clientv3.Cmp, same, changed []clientv3.Op) {
	for _, name := range names {
		cmps = append(cmps, clientv3.Compare(clientv3.Value(w.sc.keys.Spec(name)), "=", specs[name]))
		same = append(same, w.markSince(name, since))
		changed = append(changed, clientv3.OpTxn(nil, []clientv3.Op{clientv3.OpPut(w.sc.keys.Spec(name), specs[name]), w.markSince(name, since)}, nil))
	}
	return cmps, same, changed
}

// specsHeld is a read-only check of a term's specs of names (publish.go):
// a transaction nested for each specCheckJobs of them, which succeeds if
// each job's spec is as etcd has it and its since mark is there. Cost, per
// job: two keys compared, in a read that goes through no raft proposal;
// specCheckGroups*specCheckJobs jobs to a transaction.
func (w writes) specsHeld(names []string, specs map[string]string) []clientv3.Op {
	var groups []clientv3.Op
	for len(names) > 0 {
		n := min(len(names), specCheckJobs)
		cmps := make([]clientv3.Cmp, 0, 2*n)
		for _, name := range names[:n] {
			spec, mark := clientv3.Compare(clientv3.Value(w.sc.keys.Spec(name)), "=", specs[name]), clientv3.Compare(clientv3.CreateRevision(w.sc.keys.Since(name)), ">", 0)
			cmps = append(cmps, spec, mark) // mutation:spec-check-mark
		}
		groups = append(groups, clientv3.OpTxn(cmps, nil, nil))
		names = names[n:]
	}
	return groups
}

// termBatch is how many of names, up to regBatch, a term checks in a read
// or two (publishBatch a read) and registers in one transaction
// (publish.go): as many as keep each within publishBytes, however long
// the scheduler's and the jobs' names.
func (w writes) termBatch(names []string, specs map[string]string) int {
	n := min(len(names), regBatch)
	bytes := 0
	for i, name := range names[:n] {
		bytes += len(w.sc.keys.Spec(name)) + len(specs[name]) + len(w.sc.keys.Since(name)) + len(w.sc.keys.By(name, 0)) + len(w.sc.identity) + 64
		if i > 0 && bytes > publishBytes { // mutation:term-batch-unbounded
			return i
		}
	}
	return n
}

// registrations are the puts of this replica's registrations of jobs, on
// lease. Cost, per job: one key put on a lease of at most regLeaseKeys
// keys; a term's go regBatch to a transaction on a lease that held
// none, so that with auth on no put checks a key already on its lease.
func (w writes) registrations(jobs []string, lease clientv3.LeaseID) []clientv3.Op {
	ops := make([]clientv3.Op, len(jobs))
	for i, job := range jobs {
		ops[i] = clientv3.OpPut(w.sc.keys.By(job, lease), w.sc.identity, clientv3.WithLease(lease))
	}
	return ops
}

// specChange is the write of an added job's spec, unless the key holds it
// already, and of its since mark, unless there; or of a removed job's
// deletion, if its key still holds ch.spec (another version of the job may
// have written another since), with this replica's registration of it on
// lease if it has one. Cost: one key compared, up to two put or three
// deleted.
func (w writes) specChange(name string, ch specChange, since string, lease clientv3.LeaseID, registered bool) []clientv3.Op {
	key := w.sc.keys.Spec(name)
	same := []clientv3.Cmp{clientv3.Compare(clientv3.Value(key), "=", ch.spec)}
	if !ch.removed {
		mark := w.markSince(name, since)
		return []clientv3.Op{clientv3.OpTxn(same, []clientv3.Op{mark}, []clientv3.Op{clientv3.OpPut(key, ch.spec), mark})}
	}
	ops := []clientv3.Op{clientv3.OpTxn(same, []clientv3.Op{clientv3.OpDelete(key), clientv3.OpDelete(w.sc.keys.Since(name))}, nil)}
	if registered {
		ops = append(ops, clientv3.OpDelete(w.sc.keys.By(name, lease)))
	}
	return ops
}

// markSince marks job published at since unless it is marked already: a
// job that never ran has its ticks from then on caught up and counted
// (catchup.go, gap.go), and a tick before it, which came due before the
// cluster had the job, is neither. The mark goes with the spec.
func (w writes) markSince(job, since string) clientv3.Op {
	key := w.sc.keys.Since(job)
	return clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}, []clientv3.Op{clientv3.OpPut(key, since)}, nil)
}

// roster is the write of a term's roster, the names of its jobs (roster.go),
// unless it holds sum already. Cost: one key compared; two put when the
// jobs changed.
func (w writes) roster(sum, jobs string) (clientv3.Cmp, []clientv3.Op) {
	keys := w.sc.keys
	return clientv3.Compare(clientv3.Value(keys.RosterSum()), "=", sum), // mutation:roster-rewritten
		[]clientv3.Op{clientv3.OpPut(keys.RosterSum(), sum), clientv3.OpPut(keys.RosterJobs(), jobs)}
}

// stopped is the write of this replica's stop, with its sessions' close
// (roster.go): while no replica registers a job, Status tells from it
// since when none has run. Cost: one key put, per replica's stop.
func (w writes) stopped() clientv3.Op {
	return clientv3.OpPut(w.sc.keys.RosterStopped(), jobkeys.Stopped{By: w.sc.identity, At: w.sc.clock.Now()}.Encode())
}

// read takes the value of a roster key, as Status reads them
// (control.go): what roster and stopped wrote.
func (r *roster) read(k layout, kv *mvccpb.KeyValue) {
	switch string(kv.Key) {
	case k.RosterJobs():
		if v, err := jobkeys.ParseRoster(kv.Value); err == nil {
			r.jobs = map[string]bool{}
			for _, n := range v.Jobs {
				r.jobs[n] = true
			}
			r.heard(v.At)
		}
	case k.RosterStopped():
		if v, err := jobkeys.ParseStopped(kv.Value); err == nil {
			r.heard(v.At)
		}
	}
}

// dir is the scheduler's directory, under which its jobs' claims write:
// etcd is probed by a read of it (connect.go) and, while it refuses
// writes, by a write beside it that changes nothing (refused.go). Cost, per
// probe: one key counted, or one compared.
func (w writes) dir() string { return w.sc.keys.Dir() }

// tickRecords is the prefix of the ticks' records (tickRecord): a new term
// settles those a term before left (tickrecord.go), and its gap report
// reads them (gap.go). Cost, per term: a range of the records left
// unsettled, none unless a term ended with a record in flight.
func (w writes) tickRecords() string { return w.sc.keys.TickRecords() }

// recordMarkers is the read of the markers of tick seq's records, whose
// runs a new term finds by the tick and its claimer (lost.go). Cost, per
// tick lost: a range of its records' markers, one a claimer's record.
func (w writes) recordMarkers(seq int64) clientv3.Op {
	return clientv3.OpGet(w.sc.keys.TickRunsOfTick(seq), clientv3.WithPrefix())
}

// lostReads are what a new term reads to tell whether another term's
// claim of job's tick seq was lost (lost.go), in this order: the count of
// the tick's marker, the job's history, the count of the tick in the job's
// buffer (a tick buffered behind a run, buffer.go, was claimed into the
// buffer: it is not lost, and the new term runs it), and its claim key.
// Cost, per tick checked: four keys read, lostBatch ticks to a read.
func (w writes) lostReads(job string, seq int64) []clientv3.Op {
	keys := w.sc.keys
	return []clientv3.Op{clientv3.OpGet(keys.TickMarker(job, seq), clientv3.WithCountOnly()),
		clientv3.OpGet(keys.History(job)),
		clientv3.OpGet(keys.BufferEntry(job, seq), clientv3.WithCountOnly()),
		clientv3.OpGet(keys.Last(job))}
}

// gapReads are what a term's gap report (gap.go) reads of job at rev, the
// term's first revision, to tell the ticks missed before the term, in
// this order: its claim key, its spec's count and its since mark. Cost,
// per job and term: three keys read, maxTxnOps/3 jobs to a read.
func (w writes) gapReads(job string, rev int64) []clientv3.Op {
	at := clientv3.WithRev(rev)
	return []clientv3.Op{clientv3.OpGet(w.sc.keys.Last(job), at),
		clientv3.OpGet(w.sc.keys.Spec(job), at, clientv3.WithCountOnly()),
		clientv3.OpGet(w.sc.keys.Since(job), at)}
}

// notRunReads are the reads a tally of ticks not run is written against
// (notrun.go), for each of jobs in turn: its notrun key, its claim key and
// its history. Cost, per job with ticks not run and per notRunFlush: three
// keys read, notRunBatch jobs to a read.
func (w writes) notRunReads(jobs []string) []clientv3.Op {
	gets := make([]clientv3.Op, 0, 3*len(jobs))
	for _, job := range jobs {
		gets = append(gets, clientv3.OpGet(w.sc.keys.NotRun(job)), clientv3.OpGet(w.sc.keys.Last(job)), clientv3.OpGet(w.sc.keys.History(job)))
	}
	return gets
}

// notRun is the write of job's tally v of ticks not run, unless its key
// changed since it was read at rev (another replica's tally, merged at the
// next flush). Cost, per job with ticks not run and per notRunFlush: one
// key compared and put, notRunBatch jobs to a transaction.
func (w writes) notRun(job string, v notrun.Value, rev int64) clientv3.Op {
	key := w.sc.keys.NotRun(job)
	return clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)},
		[]clientv3.Op{clientv3.OpPut(key, v.Encode())}, nil)
}

// recoveryReads are the reads the recovery of a tick of job (recovery.go)
// is claimed against, in this order: its recovered key, its history, its
// outcome and its claim key. Cost, per tick recovered: four keys read.
func (w writes) recoveryReads(job string) []clientv3.Op {
	keys := w.sc.keys
	return []clientv3.Op{clientv3.OpGet(keys.Recovered(job)), clientv3.OpGet(keys.History(job)),
		clientv3.OpGet(keys.Outcome(job)), clientv3.OpGet(keys.Last(job))}
}

// recoveryClaim is the claim of a recovery of job's tick seq, whose marker
// is marker: while the job's recovered key, history and claim key are as
// recoveryReads read them, at revs, the tick has no marker and the job is
// not paused (cmps, with the term's and the overlap's, recovery.go), it
// puts next as the job's recovered ticks and the tick's marker on lease
// (puts); else it reads why, in the order recoveryRefusal.tell takes them
// (reads). Cost, per tick recovered: one transaction of five compares and
// the overlap's and two puts, or seven reads, the marker on a lease of at
// most markerLeaseKeys keys.
func (w writes) recoveryClaim(job string, seq int64, revs [3]int64, next string, lease clientv3.LeaseID) (marker string, cmps []clientv3.Cmp, puts, reads []clientv3.Op) {
	keys := w.sc.keys
	marker = keys.TickMarker(job, seq)
	cmps = []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(keys.Recovered(job)), "=", revs[0]),
		clientv3.Compare(clientv3.ModRevision(keys.History(job)), "=", revs[1]),
		clientv3.Compare(clientv3.ModRevision(keys.Last(job)), "=", revs[2]),
		clientv3.Compare(clientv3.CreateRevision(marker), "=", 0),
		clientv3.Compare(clientv3.CreateRevision(keys.Paused(job)), "=", 0),
	}
	puts = []clientv3.Op{clientv3.OpPut(keys.Recovered(job), next), clientv3.OpPut(marker, claimcond.Value(seq, w.sc.identity), clientv3.WithLease(lease))}
	return marker, cmps, puts, []clientv3.Op{
		clientv3.OpGet(keys.Recovered(job), clientv3.WithKeysOnly()),
		clientv3.OpGet(keys.History(job), clientv3.WithKeysOnly()),
		clientv3.OpGet(keys.Last(job), clientv3.WithKeysOnly()),
		clientv3.OpGet(marker, clientv3.WithCountOnly()),
		clientv3.OpGet(keys.Paused(job), clientv3.WithCountOnly()),
		clientv3.OpGet(keys.Running(job), clientv3.WithPrefix(), clientv3.WithCountOnly()),
		clientv3.OpGet(keys.Buffer(job), clientv3.WithPrefix(), clientv3.WithCountOnly()),
	}
}

// noRunOf are the conditions that no run of job is in progress and, if
// buffered, none of its ticks waits in its buffer: a recovery's of a job
// that is not Allow (recoveryrefusal.go). Cost: one or two ranges
// compared, in the recovery's claim.
func (w writes) noRunOf(job string, buffered bool) []clientv3.Cmp {
	conds := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(w.sc.keys.Running(job)), "=", 0).WithPrefix()}
	if buffered {
		conds = append(conds, clientv3.Compare(clientv3.CreateRevision(w.sc.keys.Buffer(job)), "=", 0).WithPrefix())
	}
	return conds
}

// claimReads are the reads of the claim keys of jobs, in their order: a
// new term's look for the runs of jobs that recover (recovery.go). Cost,
// per job that recovers and per term: one key read.
func (w writes) claimReads(jobs []Entry) []clientv3.Op {
	return each(jobs, func(e Entry) string { return w.sc.keys.Last(e.name) })
}

// startedReads are the reads of the started keys of jobs, in their order,
// that their runs at start are asked against (startAsk). Cost, per job
// WithRunAtStart and per term or publication that asks: one key read.
func (w writes) startedReads(jobs []string) []clientv3.Op { return each(jobs, w.sc.keys.Started) }

// startAsk is the ask of a run of job at this release's start
// (atstart.go), unless its started key changed since it was read, at rev,
// as holding the releases ran: the key gets this release among them, and
// a trigger request by who, at at, is put. Cost, per job WithRunAtStart
// and per release: one key compared and two put.
func (w writes) startAsk(job string, ran []string, rev int64, by string, at time.Time) clientv3.Op {
	key := w.sc.keys.Started(job)
	return clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)}, // mutation:at-start-unchecked
		[]clientv3.Op{
			clientv3.OpPut(key, jobkeys.EncodeStarted(ran, w.sc.release)),
			clientv3.OpPut(w.sc.keys.Trigger(job, triggerID(at, rand.Uint32())), jobkeys.EncodeTrigger(by, at, w.sc.release)),
		}, nil)
}

// claimKeys are the keys a claim of a run of job writes, its claim key and
// a trigger's mark (trigger.go), which a run under Replace watches for the
// claim that replaces it (replace.go). Cost, per run under Replace: two
// watches, and a read of both keys each time a watch ends.
func (w writes) claimKeys(job string) []string {
	return []string{w.sc.keys.Last(job), w.sc.keys.Triggered(job)}
}

// running is the prefix of job's in-progress markers, which a run waits
// on: under Replace to hold none but its own (replace.go), a trigger's or
// a buffered tick's to hold none (trigger.go, buffer.go). Cost, per wait:
// a read of the markers' keys again until they go, or one watch.
func (w writes) running(job string) string { return w.sc.keys.Running(job) }

// triggerMarker is the in-progress marker of the run of r's trigger
// request, named by the request's revision (triggerClaim).
func (w writes) triggerMarker(r *run) string { return w.sc.keys.TriggerMarker(r.job.name, r.trig.rev) }

// triggerClaim is the claim of r's trigger request (trigger.go), its
// marker on lease: while the request is there, r's term holds (leader
// mode) and, if forbid, no run of its job is in progress, it takes the
// request, puts the marker and marks the job triggered, which a run under
// Replace watches (claimKeys); else it reads why, in this order: the
// request, the job's markers if forbid, the term's key. Cost, per trigger:
// one transaction of up to three compares and three writes, or as many
// reads, the marker on a lease of at most markerLeaseKeys keys.
func (w writes) triggerClaim(r *run, marker string, forbid bool, lease clientv3.LeaseID) (cmps []clientv3.Cmp, then, orElse []clientv3.Op) {
	val, running := claimcond.Value(r.trig.rev, w.sc.identity), w.running(r.job.name)
	cmps = []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(r.trig.key), "=", r.trig.rev)}
	orElse = []clientv3.Op{clientv3.OpGet(r.trig.key, clientv3.WithCountOnly())}
	if forbid {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(running), "=", 0).WithPrefix())
		orElse = append(orElse, clientv3.OpGet(running, clientv3.WithPrefix(), clientv3.WithCountOnly()))
	}
	if r.term != nil {
		cmps = append(cmps, r.term.term.Cmp())
		orElse = append(orElse, clientv3.OpGet(r.term.term.Key, clientv3.WithCountOnly()))
	}
	then = []clientv3.Op{clientv3.OpDelete(r.trig.key), clientv3.OpPut(marker, val, clientv3.WithLease(lease)), clientv3.OpPut(w.sc.keys.Triggered(r.job.name), val)}
	return cmps, then, orElse
}

// triggers is the prefix of the scheduler's trigger requests, which the
// leader, or each replica in claim mode, reads and then watches
// (trigger.go). Cost, per term: one range of the requests waiting and one
// watch; per request, one event to each watcher.
func (w writes) triggers() string { return w.sc.keys.Triggers() }

// triggerJob is the job that the request of key asks to run.
func (w writes) triggerJob(key string) string { return w.sc.keys.TriggerJob(key) }

// paused is job's pause key, whose deletion a claim that found the job
// paused waits for (backfiller.go). Cost: one watch while it waits.
func (w writes) paused(job string) string { return w.sc.keys.Paused(job) }

// backfills is the prefix of the scheduler's backfill requests, which the
// scheduling replica reads and then watches (backfiller.go). Cost: one
// range of the requests' keys per term, one watch, and one event per
// request written.
func (w writes) backfills() string { return w.sc.keys.Backfills() }

// backfillsOf is the prefix of job's backfill requests, which its driver
// reads, oldest first, each time it is kicked (backfiller.go). Cost: one
// range of the job's requests.
func (w writes) backfillsOf(job string) string { return w.sc.keys.BackfillsOf(job) }

// backfillJob is the job of a backfill request's key.
func (w writes) backfillJob(key string) string { return w.sc.keys.BackfillJob(key) }

// backfillMarker is the in-progress marker of the run of job's
// backfilled tick seq (backfillClaim).
func (w writes) backfillMarker(job string, seq int64) string {
	return w.sc.keys.BackfillMarker(job, seq)
}

// backfillClaim is the claim of r's backfilled tick (backfiller.go), its
// marker on lease: while r's request is as read (kv), the job is not
// paused, no run that r waits for (backfillGuard) is in progress and r's
// term holds (leader mode), it moves the request's progress on to r.bf.next
// and puts the marker; else it reads why, in this order: the request, the
// pause, the runs in progress. Cost, per backfilled tick: one transaction
// of up to four compares and two puts, or three reads, the marker on a
// lease of at most markerLeaseKeys keys.
func (w writes) backfillClaim(r *run, kv *mvccpb.KeyValue, lease clientv3.LeaseID) (marker string, cmps []clientv3.Cmp, then, orElse []clientv3.Op) {
	bf, seq := r.bf, r.tick.UnixNano()
	marker = w.backfillMarker(r.job.name, seq)
	paused, busy := w.paused(r.job.name), w.backfillGuard(r)
	cmps = []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(bf.key), "=", kv.ModRevision), // mutation:backfill-once
		clientv3.Compare(clientv3.CreateRevision(paused), "=", 0),           // mutation:backfill-pause
		clientv3.Compare(clientv3.CreateRevision(busy), "=", 0).WithPrefix(),
	}
	orElse = []clientv3.Op{
		clientv3.OpGet(bf.key, clientv3.WithKeysOnly()),
		clientv3.OpGet(paused, clientv3.WithCountOnly()),
		clientv3.OpGet(busy, clientv3.WithPrefix(), clientv3.WithCountOnly()),
	}
	if r.term != nil {
		cmps = append(cmps, r.term.term.Cmp())
	}
	then = []clientv3.Op{clientv3.OpPut(bf.key, bf.next.Encode()), clientv3.OpPut(marker, claimcond.Value(seq, w.sc.identity), clientv3.WithLease(lease))}
	return marker, cmps, then, orElse
}

// backfillGuard is the prefix of the markers whose runs r's claim waits
// for: every run of the job's under Forbid and Replace, else the runs of
// backfills, so that a backfill's runs never overlap, even on replicas
// that follow one another.
func (w writes) backfillGuard(r *run) string {
	keys := w.sc.keys
	if r.job.policy.overlap != Allow {
		return keys.Running(r.job.name)
	}
	return keys.BackfillMarkers(r.job.name) // mutation:backfill-alone
}

// bufferTurn are the conditions of a buffering job's claim of a tick
// (tickClaim): no run of the job is in progress and no tick of it waits
// (buffer.go). Cost, per run of a buffering job: two ranges compared.
func (w writes) bufferTurn(job jobRef) []election.ClaimOption {
	if !buffering(job.policy.overlap) {
		return nil
	}
	return []election.ClaimOption{claims.Exclusive(w.sc.keys.Running(job.name)), claims.Exclusive(w.sc.keys.Buffer(job.name))}
}

// bufferEntry is the key of r's tick in its job's buffer.
func (w writes) bufferEntry(r *run) string {
	return w.sc.keys.BufferEntry(r.job.name, r.tick.UnixNano())
}

// bufferReads are the reads a tick of job is put in its buffer against
// (bufferPut), in this order: its claim key (last), its buffer's count,
// its pause's, and, if bounded (counter), its runs key. Cost, per tick
// buffered: three keys and a range read, or four.
func (w writes) bufferReads(job string, counter *claimcond.Counter) (last string, reads []clientv3.Op) {
	last = w.sc.keys.Last(job)
	reads = []clientv3.Op{clientv3.OpGet(last), clientv3.OpGet(w.sc.keys.Buffer(job), clientv3.WithPrefix(), clientv3.WithCountOnly()),
		clientv3.OpGet(w.sc.keys.Paused(job), clientv3.WithCountOnly())}
	if counter != nil {
		reads = append(reads, clientv3.OpGet(counter.Key, clientv3.WithKeysOnly()))
	}
	return last, reads
}

// bufferPut is the claim of r's tick into its job's buffer (buffer.go):
// while nothing was buffered since bufferReads read at rev, so that the
// bound holds, the job's claim key is as read at lastRev, so that the tick
// is claimed once, the job is not paused and r's term holds, it moves the
// claim key to the tick and puts the tick's entry, counting a bounded
// job's run (counter); else it reads the term's key (termHolds). Cost, per
// tick buffered: one transaction of up to five compares and three puts.
func (w writes) bufferPut(r *run, lastRev, rev int64, counter *claimcond.Counter) (cmps []clientv3.Cmp, puts, orElse []clientv3.Op) {
	job, val := r.job.name, claimcond.Value(r.tick.UnixNano(), w.sc.identity)
	cmps = []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(w.sc.keys.Last(job)), "=", lastRev),
		clientv3.Compare(clientv3.ModRevision(w.sc.keys.Buffer(job)), "<", rev+1).WithPrefix(),
		clientv3.Compare(clientv3.CreateRevision(w.sc.keys.Paused(job)), "=", 0),
	}
	if r.term != nil {
		cmps = append(cmps, r.term.term.Cmp())
	}
	puts = []clientv3.Op{clientv3.OpPut(w.sc.keys.Last(job), val), clientv3.OpPut(w.bufferEntry(r), val)}
	if counter != nil { // mutation:max-runs-buffered
		cmps, puts = append(cmps, counter.Cmp()), append(puts, counter.Op())
	}
	return cmps, puts, []clientv3.Op{clientv3.OpGet(r.termKey(), clientv3.WithKeysOnly())}
}

// bufferTurnClaim is the claim of the turn of r, a buffered tick, its
// marker on sess's lease: while its entry is there, no run of its job is
// in progress, no earlier tick waits, the job is not paused and r's term
// holds, it puts the marker, and leaves the entry (takeBuffered); else it
// reads why, in this order: the entry, the pause, the tick before r's,
// the term's key (termHolds). Cost, per buffered tick, each time its turn
// may have come: one transaction of up to five compares and one put, or
// four reads, the marker on a lease of at most markerLeaseKeys keys.
func (w writes) bufferTurnClaim(r *run, sess *election.Session) (cmps []clientv3.Cmp, then, orElse []clientv3.Op) {
	_, seq, marker := w.tick(r)
	dir, paused := w.sc.keys.Buffer(r.job.name), w.sc.keys.Paused(r.job.name)
	val := claimcond.Value(seq, w.sc.identity)
	cmps = []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(r.buf.key), "=", r.buf.rev),
		clientv3.Compare(clientv3.CreateRevision(w.running(r.job.name)), "=", 0).WithPrefix(), // mutation:buffer-waits
		clientv3.Compare(clientv3.CreateRevision(dir), "=", 0).WithRange(r.buf.key),
		clientv3.Compare(clientv3.CreateRevision(paused), "=", 0),
	}
	if r.term != nil {
		cmps = append(cmps, r.term.term.Cmp())
	}
	then = []clientv3.Op{
		clientv3.OpPut(marker, val, clientv3.WithLease(sess.Lease())), // mutation:buffer-key-kept
	}
	return cmps, then, []clientv3.Op{
		clientv3.OpGet(r.buf.key, clientv3.WithKeysOnly()),
		clientv3.OpGet(paused, clientv3.WithCountOnly()),
		clientv3.OpGet(dir, clientv3.WithRange(r.buf.key), clientv3.WithKeysOnly(),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(1)),
		clientv3.OpGet(r.termKey(), clientv3.WithKeysOnly()),
	}
}

// termKey is the key of r's term, or the job's last outside leader mode
// (read, and not looked at, where the term is asked for).
func (r *run) termKey() string {
	if r.term != nil {
		return r.term.term.Key
	}
	return r.co.keys.Last(r.job.name)
}

// buffers are the reads of the buffers of jobs, keys only, in their
// order, whose ticks a new term, or a Start in claim mode, runs
// (resumeBuffers). Cost, per buffering job: one range of its buffer's
// keys, bufferReadBatch jobs to a read.
func (w writes) buffers(jobs []jobRef) []clientv3.Op {
	return each(jobs, func(ref jobRef) string { return w.sc.keys.Buffer(ref.name) }, clientv3.WithPrefix(), clientv3.WithKeysOnly())
}

// bufferSeq is the tick of a buffer's key, if it is one.
func (w writes) bufferSeq(key string) (int64, bool) { return w.sc.keys.BufferSeq(key) }
