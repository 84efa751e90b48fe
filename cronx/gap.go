package cronx

import (
	"context"
	"errors"
	"time"

	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/claims"
	"github.com/batonhq/baton/internal/jobkeys"
	"github.com/batonhq/baton/internal/notrun"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A leader that crashed, or stopped without resigning, leaves a gap: until
// its lease expires nobody leads, and the ticks of the gap do not run. The
// next leader reports them as ReasonNoLeader when it takes over: for each
// job, the ticks after its last claimed tick and up to the term's start,
// within a day, except the one it catches up (catchup.go); for a job
// that never ran but a term before published, those after its publication
// mark (internal/jobkeys), or, published by a version that wrote none, those within
// the TTL and its expiry check before the term.
//
// The last claims are read at the revision at which the term's leadership
// was recorded (election.Term.Elected): every claim of the terms before is
// at or before it, and the term's own claims (its catch-ups), which would
// hide the gap, after it. A tick's record left unsettled by a term before
// (tickrecord.go) is read with them, in the first read, and its tick taken
// as claimed for its jobs. The term waits for nothing, and a slow etcd
// delays the report rather than drop it.

// gapReport reports the gap before one term.
type gapReport struct {
	*scope
	client *clientv3.Client
	host   host
	work   *jobWaiter // the coordinator's: the client outlives the report
	rep    *reporter
}

// report reports the ticks that fell while nobody led before the term
// whose context is ctx, from each job's claim key and the ticks' records
// read at rev, the term's first revision.
func (g *gapReport) report(ctx context.Context, rev int64) {
	start := g.host.now()
	g.work.add() // the client outlives it
	go func() {
		defer g.work.done()
		g.read(ctx, start, rev)
	}()
}

// read reads each job's last claim at rev and reports its gap.
func (g *gapReport) read(ctx context.Context, start time.Time, rev int64) {
	var entries []Entry
	for _, e := range g.host.Entries() {
		if e.name != "" {
			entries = append(entries, e)
		}
	}
	// A tick a term before claimed by its record (tickrecord.go), which
	// this term settles meanwhile, is claimed as if in its jobs' claim keys.
	var recorded map[string]int64
	for len(entries) > 0 && ctx.Err() == nil {
		n := min(len(entries), (maxTxnOps-1)/3)
		batch := entries[:n]
		entries = entries[n:]
		gets := make([]clientv3.Op, 0, 3*len(batch)+1)
		for _, e := range batch {
			gets = append(gets, writes{g.scope}.gapReads(e.name, rev)...)
		}
		if recorded == nil {
			gets = append(gets, clientv3.OpGet(writes{g.scope}.tickRecords(), clientv3.WithPrefix(), clientv3.WithRev(rev)))
		}
		resp, err := g.readBatch(ctx, gets)
		if err != nil {
			g.logger.Info("cronx: ticks missed before this term not reported", "scheduler", g.name, "err", err)
			return
		}
		if recorded == nil {
			recorded = claims.RecordedTicks(resp.Responses[len(gets)-1].GetResponseRange().Kvs)
		}
		for i, e := range batch {
			kvs := resp.Responses[3*i].GetResponseRange().Kvs
			if seq, ok := recorded[e.name]; ok { // mutation:gap-ignores-records
				if len(kvs) == 0 || lastBefore(kvs[0].Value, seq) {
					g.reportOf(e, time.Unix(0, seq).In(start.Location()), start)
					continue
				}
			}
			if len(kvs) == 0 {
				// Never run: a job a term before this one published missed
				// the ticks since it was published, or, when that is not
				// known, as far back as a lost leader's gap lasts, its
				// lease's TTL; one nobody published missed nothing.
				if resp.Responses[3*i+1].GetResponseRange().Count > 0 { // mutation:gap-never-run
					g.reportOf(e, g.publishedAt(resp.Responses[3*i+2].GetResponseRange().Kvs, start), start)
				}
				continue
			}
			seq, _, err := jobkeys.ParseLast(string(kvs[0].Value))
			if err != nil {
				continue
			}
			g.reportOf(e, time.Unix(0, seq).In(start.Location()), start)
		}
	}
}

// lastBefore reports whether a claim key's value holds a tick before seq.
func lastBefore(value []byte, seq int64) bool {
	last, _, err := jobkeys.ParseLast(string(value))
	return err != nil || last < seq
}

// readBatch sends one read of the gap, again while etcd does not answer,
// until ctx ends or the revision is compacted.
func (g *gapReport) readBatch(ctx context.Context, gets []clientv3.Op) (*clientv3.TxnResponse, error) {
	backoff := retryBackoff
	for {
		resp, err := readWithin(ctx, g.client, gets)
		if err == nil || ctx.Err() != nil || errors.Is(err, rpctypes.ErrCompacted) {
			return resp, err
		}
		sleep(ctx, backoff)
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// publishedAt is when a job that never ran was published, from the read
// of its mark (internal/jobkeys): a tick at that time came due with the job in the
// cluster, one before it did not. A job published by a version that wrote
// no mark is taken as published a lost leader's gap before start.
func (g *gapReport) publishedAt(mark []*mvccpb.KeyValue, start time.Time) time.Time {
	if len(mark) > 0 {
		if seq, _, err := claimcond.Parse(string(mark[0].Value)); err == nil { // mutation:gap-since
			return time.Unix(0, seq-1).In(start.Location())
		}
	}
	return start.Add(-g.ttl - lostExpiry)
}

// reportOf reports the ticks of e after last and up to start, but the
// one the term catches up.
func (g *gapReport) reportOf(e Entry, last, start time.Time) {
	var caughtUp time.Time
	if window := g.catchUpWindow(e.policy); window > 0 {
		caughtUp = latestTick(e.Schedule, start, window)
	}
	from := last
	if day := start.Add(-notrun.Window); day.After(from) {
		from = day
	}
	var ticks []time.Time // the latest maxGapTicks
	hours := map[int64]*notRunEntry{}
	for t, scanned := e.Schedule.Next(from), 0; !t.IsZero() && !t.After(start) && scanned < maxGapScan; t, scanned = e.Schedule.Next(t), scanned+1 {
		if t.Equal(caughtUp) {
			continue
		}
		if len(ticks) == maxGapTicks {
			ticks = ticks[1:]
		}
		ticks = append(ticks, t)
		h := hourOf(t)
		if hours[h] == nil {
			hours[h] = &notRunEntry{hour: h, reason: ReasonNoLeader}
		}
		hours[h].n++
		hours[h].tick = t.UnixNano()
	}
	if len(ticks) == 0 {
		return
	}
	var tally []notRunEntry
	for _, h := range hours {
		tally = append(tally, *h)
	}
	g.rep.noLeader(e.name, ticks, tally)
	g.logger.Info("cronx: ticks not run while nobody led", "scheduler", g.name, "job", e.name, "ticks", len(ticks), "since", last)
}
