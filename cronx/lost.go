package cronx

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/jobkeys"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A leader claims a tick at its time and starts the run a moment later; one
// that crashes or is cut off in between leaves the tick claimed and never
// run. Its successor's catch-up finds the tick claimed, and cannot claim it
// again: the run may have started, and G1 forbids a second. What it can tell
// is whether the run was recorded: once the claim's marker has lapsed with
// the lost runner's lease (or been released), a tick not in the job's
// history is reported as ReasonRunnerLost, so that OnTickNotRun and the
// NotRun count say what happened to it; a job with WithRecovery has it run
// again instead (recovery.go), and its marker is waited for however long
// its run goes on. A claim given back meanwhile (its term ended before its
// run started: the claim key is back below the tick) is caught up again.
//
// Cost: only a new term's catch-ups that find their tick claimed by another
// term, within two TTLs before (recent), are checked, lostBatch jobs to a
// read of their markers, histories and claim keys and of the markers of
// their ticks' records; a marker still there is read again every
// lostRecheck until it lapses, within the TTL and its expiry check.

// errRunnerLost is what a tick reported as ReasonRunnerLost says.
var errRunnerLost = errors.New("claimed by a leader that was lost before it recorded a run of the tick; it may not have started")

// lostTick is a tick another term claimed, to check.
type lostTick struct {
	job      string
	tick     time.Time
	holder   string    // who claimed it, as the job's claim key says
	waiting  time.Time // when its marker was first found; zero before
	recovers bool      // its job runs such a tick again (recovery.go)
	// onRecord: it has no marker of its own, and waits for the markers of
	// its tick's records by its claimer.
	onRecord bool
}

// lostClaims checks, from one goroutine at a time, the ticks a new term
// found claimed by a term before it.
type lostClaims struct {
	co *coordinator

	mu       sync.Mutex
	pending  []lostTick
	checking bool
	// queued holds the ticks pending or waiting, each once: two checks of
	// one tick in a batch would both find its runner lost, and the second
	// count a recovery the first had just claimed.
	queued map[lostKey]bool
}

// lostKey names a tick of a job among the ticks to check.
type lostKey struct {
	job  string
	tick int64
}

// recent reports whether tick is recent enough to have been claimed by a
// leader lost before this term: one lost at most a TTL and its expiry ago,
// whose claims of a crowded tick took up to another TTL. Older ticks ran
// under a term that ended well, and are not read again.
func (lc *lostClaims) recent(tick time.Time) bool {
	co := lc.co
	return tick.After(co.clock.Now().Add(-2*co.ttl - lostExpiry))
}

// check queues a tick of job that holder claimed to check, a job that
// recovers such ticks or not; it never waits for etcd.
func (lc *lostClaims) check(job string, tick time.Time, holder string, recovers bool) {
	lc.mu.Lock()
	k := lostKey{job, tick.UnixNano()}
	if lc.queued[k] { // mutation:lost-queued-once
		lc.mu.Unlock()
		return
	}
	if lc.queued == nil {
		lc.queued = map[lostKey]bool{}
	}
	lc.queued[k] = true
	lc.pending = append(lc.pending, lostTick{job: job, tick: tick, holder: holder, recovers: recovers})
	start := !lc.checking
	lc.checking = true
	lc.mu.Unlock()
	if start {
		lc.co.work.add() // the client outlives the checker
		go lc.run(lc.co.runCtx())
	}
}

// run checks the queued ticks until none is left, or the Cron stops.
func (lc *lostClaims) run(ctx context.Context) {
	defer lc.co.work.done()
	var waiting []lostTick
	for {
		lc.mu.Lock()
		todo := append(lc.pending, waiting...)
		lc.pending = nil
		if len(todo) == 0 || ctx.Err() != nil {
			lc.checking = false
			clear(lc.queued)
			lc.mu.Unlock()
			return
		}
		lc.mu.Unlock()
		waiting = waiting[:0]
		for len(todo) > 0 && ctx.Err() == nil {
			n := min(len(todo), lostBatch)
			left, err := lc.read(ctx, todo[:n])
			if err != nil {
				left = todo[:n] // etcd did not answer: again, later
			}
			lc.decided(todo[:n], left)
			waiting = append(waiting, left...)
			todo = todo[n:]
		}
		if len(waiting) > 0 {
			sleep(ctx, lostRecheck) // etcd's pace: real time
		}
	}
}

// decided unqueues the ticks of batch that are not left to check again.
func (lc *lostClaims) decided(batch, left []lostTick) {
	still := map[lostKey]bool{}
	for _, l := range left {
		still[lostKey{l.job, l.tick.UnixNano()}] = true
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, l := range batch {
		if k := (lostKey{l.job, l.tick.UnixNano()}); !still[k] {
			delete(lc.queued, k)
		}
	}
}

// read reads the markers and histories of batch, reports each tick whose
// marker is gone and whose run is not in the history, and returns those
// whose marker is still there (a run going, or a lost runner's lease not
// expired yet). A marker that outlives the TTL and its expiry check is a
// live runner's: its run goes on.
//
// A run claimed by a tick's record (tickrecord.go) is under the record's
// marker, not one of its own, and the record is gone once settled: so a
// tick with no marker of its own waits while a marker of its tick's
// records by its claimer is there, however long, since such a marker
// tells that some of the claimer's runs of the tick go on, not that this
// one does; then its history tells. Meanwhile only the markers of its
// tick's records are read again.
func (lc *lostClaims) read(ctx context.Context, batch []lostTick) ([]lostTick, error) {
	co := lc.co
	gets := make([]clientv3.Op, 0, lostBatch*4)
	at := make([]int, len(batch)) // the first of each tick's own reads; -1 for none
	for i, l := range batch {
		at[i] = -1
		if l.onRecord {
			continue
		}
		at[i] = len(gets)
		gets = append(gets, co.writes.lostReads(l.job, l.tick.UnixNano())...)
	}
	records := map[int64]int{} // a tick → the read of its records' markers
	for _, l := range batch {
		if _, ok := records[l.tick.UnixNano()]; !ok {
			records[l.tick.UnixNano()] = len(gets)
			gets = append(gets, co.writes.recordMarkers(l.tick.UnixNano()))
		}
	}
	resp, err := readWithin(ctx, co.conn.etcd(), gets)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var left []lostTick
	for i, l := range batch {
		byRecord := false
		for _, kv := range resp.Responses[records[l.tick.UnixNano()]].GetResponseRange().Kvs {
			byRecord = byRecord || jobkeys.MarkerHolder(string(kv.Value)) == l.holder // mutation:lost-record-marker
		}
		if l.onRecord {
			l.onRecord = byRecord // once gone, read in full
			left = append(left, l)
			continue
		}
		rs := resp.Responses[at[i]:]
		if rs[2].GetResponseRange().Count > 0 { // mutation:lost-buffered
			continue
		}
		if rs[0].GetResponseRange().Count > 0 {
			if l.waiting.IsZero() {
				l.waiting = now
			}
			// A job that recovers waits for the marker, however long its run.
			if now.Sub(l.waiting) < co.ttl+lostExpiry || l.recovers {
				left = append(left, l)
			}
			continue
		}
		if byRecord {
			l.onRecord = true // mutation:lost-record-wait-bounded
			left = append(left, l)
			continue
		}
		hist, _ := decodeHistory(rs[1].GetResponseRange().Kvs)
		if ranTick(hist, l.tick) { // mutation:lost-recorded
			continue
		}
		if givenBack(rs[3].GetResponseRange().Kvs, l.tick) { // mutation:lost-given-back
			lc.givenBackTick(l)
			continue
		}
		again, why := false, errRunnerLost
		if l.recovers {
			again, why = (recovery{co}).lost(ctx, l.job, l.tick)
		}
		switch {
		case again:
		case errors.Is(why, errRunnerLost), errors.Is(why, errRecoveredEnough):
			co.logger.Error(why, "cronx: tick not run", "job", l.job, "tick", l.tick)
			co.rep.notRun(l.job, l.tick, ReasonRunnerLost, why)
		default:
			left = append(left, l) // etcd did not answer the recovery: again, later
		}
	}
	return left, nil
}

// givenBack reports whether last, the job's claim key as read, is below
// tick: the claim the catch-up found was given back (its claimer's term
// ended before its run started, claim.go), or lost with etcd's data, and
// nobody runs the tick.
func givenBack(last []*mvccpb.KeyValue, tick time.Time) bool {
	seq := int64(0)
	if len(last) > 0 {
		seq, _, _ = jobkeys.ParseLast(string(last[0].Value))
	}
	return seq < tick.UnixNano()
}

// givenBackTick fires l's tick again as a catch-up, if it is still in its
// job's catch-up window: claimed and given back after this term's
// catch-up found it claimed, it is caught up as a tick given up unclaimed
// is. Not leading by now, this replica notes it for its next takeover.
// Past the window, or its job removed, nobody runs it: it is reported as
// a tick that fell while nobody led, since its claimer's term ended
// before it ran.
func (lc *lostClaims) givenBackTick(l lostTick) {
	co := lc.co
	e, ok := co.host.entryByName(l.job)
	if !ok || !l.tick.After(co.clock.Now().Add(-co.catchUpWindow(e.policy))) {
		co.rep.notRun(l.job, l.tick, ReasonNoLeader, nil) // mutation:lost-given-back-late
		return
	}
	co.logger.Info("cronx: a tick found claimed was given back; caught up again", "job", l.job, "tick", l.tick)
	co.fireTick(newRun(co.runs, co, refOf(&e), l.tick), &e, true)
}

// ranTick reports whether hist holds a run of tick (not a triggered run).
func ranTick(hist []Record, tick time.Time) bool {
	for _, h := range hist {
		if !h.Triggered && !h.Backfill && h.Tick.Equal(tick) {
			return true
		}
	}
	return false
}
