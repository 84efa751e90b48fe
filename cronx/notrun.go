package cronx

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/jobkeys"
	"github.com/batonhq/baton/internal/notrun"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A tick that nobody in the cluster ran is counted in its job's notrun key
// (internal/notrun), so that Status shows the counts from any machine. A tick that
// runs costs nothing: only ticks not run are written, and not one by one.
// Each replica keeps the ticks it did not run in memory and writes them
// every notRunFlush, for many jobs in one pair of transactions: one reads
// the jobs' notrun, last and history keys, one writes each notrun key whose
// revision is still the one read. A tick is counted
//
//   - once: a tick at or before the key's Upto, the latest tick counted, is
//     not counted again, so three replicas of a paused job count each tick
//     once, and an every-second job paused for a week costs each replica two
//     requests per notRunFlush, and the key one write;
//   - only if it did not run: a tick that is the job's last claimed tick or
//     in its history is not counted (a tick whose runner was lost, lost.go,
//     or whose claim committed unanswered and was given up, unanswered.go,
//     is its job's last, and counted unless in its history); in claim mode,
//     a tick this replica alone could not claim (misfire, overtaken, etcd
//     unavailable) counts only when no replica has claimed it or a later
//     tick of its job;
//   - within a day: hours older than notrun.Window are pruned at each write
//     and ignored by readers.
//
// Ticks not written because etcd does not answer are kept, up to
// maxNotRunPending per job (the oldest go first), and written once it
// answers: best effort, so a replica that stops or crashes meanwhile loses
// them.

// notRunEntry is one tick not run, or a gap's ticks of one hour.
type notRunEntry struct {
	tick   int64 // the tick's Unix nanoseconds; a gap's latest in the hour
	hour   int64 // the hour's start, in Unix seconds
	reason Reason
	n      int
	// strict: count only if no tick at or after it was claimed.
	strict bool
	// own: this replica's claim of the tick committed, and its run did
	// not start (unanswered.go): count unless its run is in the history.
	own bool
}

// notRunTally holds a replica's ticks not run until they are written.
type notRunTally struct {
	writes writes
	client func() *clientv3.Client
	runs   *jobWaiter // the client outlives the flusher
	ctx    func() context.Context
	now    func() time.Time
	logger Logger
	every  time.Duration

	mu       sync.Mutex
	pending  map[string][]notRunEntry // by job
	flushing bool
}

func newNotRunTally(co *coordinator) *notRunTally {
	return &notRunTally{
		writes: co.writes,
		client: co.conn.etcd,
		runs:   &co.work,
		ctx:    co.runCtx,
		now:    co.clock.Now,
		logger: co.logger,
		every:  notRunFlush,
	}
}

// add keeps entries of job to write; it never waits for etcd.
func (t *notRunTally) add(job string, entries ...notRunEntry) {
	t.mu.Lock()
	t.keep(job, append(t.pending[job], entries...))
	start := !t.flushing
	t.flushing = true
	t.mu.Unlock()
	if start {
		t.runs.add()
		go t.flushLoop(t.ctx())
	}
}

// flushLoop writes the pending entries every t.every until none is left,
// and once more, briefly, when ctx ends (the Cron stops).
func (t *notRunTally) flushLoop(ctx context.Context) {
	defer t.runs.done()
	for {
		if ctx == nil || ctx.Err() != nil {
			fctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			t.flush(fctx)
			cancel()
		} else {
			sleep(ctx, t.every) // etcd's pace: real time
			fctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
			t.flush(fctx)
			cancel()
		}
		t.mu.Lock()
		if len(t.pending) == 0 || ctx == nil || ctx.Err() != nil {
			t.flushing = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
}

// flush writes the pending entries; those not written are pending again.
func (t *notRunTally) flush(ctx context.Context) {
	t.mu.Lock()
	todo := t.pending
	t.pending = nil
	t.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	jobs := make([]string, 0, len(todo))
	for job := range todo {
		jobs = append(jobs, job)
	}
	slices.Sort(jobs)
	cli := t.client()
	for len(jobs) > 0 {
		n := min(len(jobs), notRunBatch)
		batch := jobs[:n]
		jobs = jobs[n:]
		if cli == nil || t.write(ctx, cli, batch, todo) != nil {
			for _, job := range append(batch, jobs...) {
				t.add1(job, todo[job])
			}
			return
		}
	}
}

// add1 puts back entries not written, without starting a flusher.
func (t *notRunTally) add1(job string, entries []notRunEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keep(job, append(entries, t.pending[job]...))
}

// keep holds p as job's entries to write, the latest maxNotRunPending of
// them (the oldest go first); t.mu is held.
func (t *notRunTally) keep(job string, p []notRunEntry) {
	if t.pending == nil {
		t.pending = map[string][]notRunEntry{}
	}
	if len(p) > maxNotRunPending {
		p = p[len(p)-maxNotRunPending:]
	}
	t.pending[job] = p
}

// write counts the entries of a batch of jobs in their notrun keys. A key
// changed since it was read is left for the next flush.
func (t *notRunTally) write(ctx context.Context, cli *clientv3.Client, batch []string, todo map[string][]notRunEntry) error {
	read, err := cli.Txn(ctx).Then(t.writes.notRunReads(batch)...).Commit()
	if err != nil {
		return err
	}
	now := t.now()
	var ops []clientv3.Op
	var wrote []string
	for i, job := range batch {
		kvs := read.Responses[3*i].GetResponseRange().Kvs
		var v notrun.Value
		var rev int64
		if len(kvs) > 0 {
			v, rev = notrun.Parse(kvs[0].Value), kvs[0].ModRevision
		}
		last := int64(-1)
		if kvs := read.Responses[3*i+1].GetResponseRange().Kvs; len(kvs) > 0 {
			if seq, _, err := jobkeys.ParseLast(string(kvs[0].Value)); err == nil {
				last = seq
			}
		}
		hist, _ := decodeHistory(read.Responses[3*i+2].GetResponseRange().Kvs)
		if !mergeNotRun(&v, todo[job], last, hist, now) {
			continue
		}
		ops = append(ops, t.writes.notRun(job, v, rev))
		wrote = append(wrote, job)
	}
	if len(ops) == 0 {
		return nil
	}
	resp, err := cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return err
	}
	for i, job := range wrote {
		if !resp.Responses[i].GetResponseTxn().Succeeded {
			t.add1(job, todo[job]) // another replica wrote it: merge again
		}
	}
	return nil
}

// mergeNotRun counts entries in v, each tick once and only if it did not
// run, given the job's last claimed tick and history, and prunes what fell
// out of the window. It reports whether v changed.
func mergeNotRun(v *notrun.Value, entries []notRunEntry, last int64, hist []Record, now time.Time) bool {
	ran := make(map[int64]bool, len(hist))
	for _, h := range hist {
		if !h.Triggered && !h.Backfill {
			ran[h.Tick.UnixNano()] = true
		}
	}
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b notRunEntry) int { return cmp.Compare(a.tick, b.tick) })
	changed := false
	for _, e := range entries {
		// A tick whose runner was lost is its job's last claimed tick, and
		// only a new leader counts it, after ticks of the gap that followed
		// it: it is counted unless its run is in the history. So is one
		// whose own claim committed unanswered, and was given up.
		lost := e.reason == ReasonRunnerLost || e.own
		switch {
		case lost && ran[e.tick]:
		case lost:
			v.Add(e.hour, e.reason.String(), e.n)
			v.Upto = max(v.Upto, e.tick)
			changed = true
		case e.tick <= v.Upto:
		case e.n == 1 && (e.tick == last || ran[e.tick]):
		case e.strict && last >= e.tick:
		default:
			v.Add(e.hour, e.reason.String(), e.n)
			v.Upto = e.tick
			changed = true
		}
	}
	n := len(v.Hours)
	v.Prune(now)
	return changed || len(v.Hours) != n
}

// hourOf is the start of tick's hour, in Unix seconds.
func hourOf(tick time.Time) int64 {
	return tick.Truncate(time.Hour).Unix()
}
