package cronx

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
)

// When many jobs come due on one tick, claiming them at the tick makes the
// last of them start late: etcd commits a few thousand claims a second. So a
// leader claims such a tick's runs ahead of it, preclaimLead before; at the
// tick they start with no round trip. If the term ends before the tick (Stop,
// a lost session), the leader withdraws the claims it has not acted on, so
// its successor claims and runs those ticks as usual. Only a leader that
// crashes, or is cut off from etcd, inside that window leaves them claimed
// and unrun: for these ticks the crash gap grows by the lead.
//
// Jobs that forbid overlap are claimed at their tick, since a claim ahead
// would find the previous run still in progress.

// preclaim is one run claimed ahead of its tick.
type preclaim struct {
	r    run
	ts   *termState
	prev int64 // the sequence to withdraw to: the job's previous tick
	done chan struct{}
	// Set before done closes.
	claim   election.Claim
	sess    *election.Session
	err     error
	latency time.Duration
}

type preclaimKey struct {
	job  string
	tick int64
}

// preclaimable returns the entries due first, at tick, when there are
// enough of them to claim ahead and they were not claimed ahead yet.
// entries must be sorted by Next.
func (c *Cron) preclaimable() (group []*Entry, tick time.Time) {
	if c.coord == nil || c.coord.mode != LeaderMode || len(c.entries) < preclaimMin {
		return nil, time.Time{}
	}
	tick = c.entries[0].Next
	if tick.IsZero() || !tick.After(c.preclaimed) {
		return nil, time.Time{}
	}
	n := 0
	for n < len(c.entries) && c.entries[n].Next.Equal(tick) {
		n++
	}
	if n < preclaimMin {
		return nil, time.Time{}
	}
	return c.entries[:n], tick
}

// preclaimDue claims the next tick's runs ahead when it is time to.
func (c *Cron) preclaimDue(now time.Time) {
	group, tick := c.preclaimable()
	if group == nil || now.Before(tick.Add(-preclaimLead)) {
		return
	}
	c.preclaimed = tick
	c.coord.preclaim(group, tick)
}

// preclaim claims tick for each entry of group, in the background, under
// the current term.
func (co *coordinator) preclaim(group []*Entry, tick time.Time) {
	ts := co.currentTerm()
	if ts == nil || ts.ctx.Err() != nil {
		return
	}
	cl := co.claims
	cl.premu.Lock()
	if cl.pre == nil {
		cl.pre = map[preclaimKey]*preclaim{}
	}
	for _, e := range group {
		r := run{job: e.name, tick: tick, wrapped: e.WrappedJob, overlap: e.policy.overlap, policy: e.policy, plain: plainJob(e.WrappedJob)}
		if r.overlap != Allow || r.policy.jitter > 0 {
			continue // claimed at the tick, or at its delay after
		}
		prev := tick.UnixNano() - 1
		if !e.Prev.IsZero() && e.Prev.Before(tick) {
			prev = e.Prev.UnixNano()
		}
		p := &preclaim{r: r, ts: ts, prev: prev, done: make(chan struct{})}
		cl.pre[preclaimKey{r.job, tick.UnixNano()}] = p
		co.runs.add()
		go func() {
			defer co.runs.done()
			defer close(p.done)
			asked := co.clock.Now()
			p.claim, p.sess, p.err = cl.claim(ts.ctx, r, ts, co.deadline(r))
			p.latency = co.clock.Now().Sub(asked)
		}()
	}
	cl.premu.Unlock()
}

// takePreclaim returns the claim made ahead for job's tick under ts, if any,
// and forgets it.
func (cl *claimer) takePreclaim(job string, tick time.Time, ts *termState) *preclaim {
	cl.premu.Lock()
	defer cl.premu.Unlock()
	k := preclaimKey{job, tick.UnixNano()}
	p := cl.pre[k]
	if p == nil || p.ts != ts {
		return nil
	}
	delete(cl.pre, k)
	return p
}

// runPreclaimed runs a run claimed ahead, at its tick, if the term that
// claimed it still holds; otherwise it gives the tick back.
func (co *coordinator) runPreclaimed(p *preclaim) {
	<-p.done
	if p.err == nil && p.ts.ctx.Err() != nil {
		co.claims.withdraw(p)
		return
	}
	co.runClaimed(p.ts.ctx, p.r, p.ts, p.claim, p.sess, p.err, p.latency)
}

// withdrawAll gives back every claim made ahead under ts and not acted on.
// A leader calls it as its term ends, before it resigns.
func (cl *claimer) withdrawAll(ts *termState) {
	cl.premu.Lock()
	var todo []*preclaim
	for k, p := range cl.pre {
		if p.ts == ts {
			todo = append(todo, p)
			delete(cl.pre, k)
		}
	}
	cl.premu.Unlock()
	if len(todo) == 0 {
		return
	}
	work := make(chan *preclaim)
	var wg sync.WaitGroup
	for range min(withdrawers, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				<-p.done
				if p.err == nil {
					cl.withdraw(p)
				}
			}
		}()
	}
	for _, p := range todo {
		work <- p
	}
	close(work)
	wg.Wait()
}

// withdraw gives back one claim made ahead, so another replica can run it.
func (cl *claimer) withdraw(p *preclaim) {
	ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
	defer cancel()
	err := claims.Withdraw(ctx, cl.client(), cl.keys.last(p.r.job), p.claim, p.prev, cl.identity)
	if err != nil && !errors.Is(err, claims.ErrNotWithdrawn) {
		cl.logger.Error(err, "cronx: a tick claimed ahead could not be given back; it will not run", "job", p.r.job, "tick", p.r.tick)
	}
}

// forgetStale withdraws claims made ahead for ticks that passed without a
// run: their jobs were removed before the tick.
func (cl *claimer) forgetStale(now time.Time) {
	cl.premu.Lock()
	var stale []*preclaim
	for k, p := range cl.pre {
		if p.r.tick.Before(now.Add(-staleAfter)) {
			stale = append(stale, p)
			delete(cl.pre, k)
		}
	}
	cl.premu.Unlock()
	for _, p := range stale {
		cl.runs.add()
		go func() {
			defer cl.runs.done()
			<-p.done
			if p.err == nil {
				cl.withdraw(p)
			}
		}()
	}
}
