package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runHandover measures a deploy's handover, with real processes: three
// `baton crontab` replicas run a job every second; the leader gets SIGTERM;
// the time until the next one leads, and until it starts its first tick, is
// taken; the stopped replica is started again, so three always run.
func runHandover(ctx context.Context, h *harness) (*report, error) {
	dir, err := h.subdir("handover")
	if err != nil {
		return nil, err
	}
	const ttl = 10
	c, err := h.startCrontabCluster(ctx, dir, "handover", "", "--seconds", "--ttl", strconv.Itoa(ttl))
	if err != nil {
		return nil, err
	}
	defer c.close()
	ids := []string{"r1", "r2", "r3"}
	for _, id := range ids {
		if _, err := c.startReplica(id); err != nil {
			return nil, err
		}
	}
	var resigned, elected, firstTick, late []time.Duration
	var sigterms []sigterm
	firsts := map[time.Time]bool{}
	for len(elected) < h.cfg.handovers {
		v, err := c.steady(ctx, len(ids))
		if err != nil {
			return nil, fmt.Errorf("handover %d: %w", len(elected)+1, err)
		}
		// SIGTERM at a random point of the second, as a deploy would.
		if !sleepCtx(ctx, rand.N(time.Second)) {
			return nil, ctx.Err()
		}
		from := c.obs.mark()
		if now := c.obs.now(); now.leaderKey != v.leaderKey || now.candidates != len(ids) {
			continue // not steady any more: wait again
		}
		old := c.member(v.leaderID)
		t0 := time.Now()
		if err := old.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			return nil, err
		}
		sigterms = append(sigterms, sigterm{leader: v.leaderID, at: t0})
		gone, err := c.obs.waitFrom(ctx, from, 30*time.Second, "the old leader's key deleted", func(s electionView) bool { return !s.keys[v.leaderKey] })
		if err != nil {
			return nil, err
		}
		next, err := c.obs.waitFrom(ctx, from, 30*time.Second, "a successor elected", func(s electionView) bool {
			return s.leaderKey != "" && s.leaderKey != v.leaderKey && s.elected
		})
		if err != nil {
			return nil, err
		}
		first, err := c.ledger.waitLine(ctx, 30*time.Second, "the successor's first tick", func(l ledgerLine) bool {
			return l.id == next.leaderID && l.started.After(t0)
		})
		if err != nil {
			return nil, err
		}
		resigned = append(resigned, gone.at.Sub(t0))
		elected = append(elected, next.at.Sub(t0))
		firstTick = append(firstTick, first.started.Sub(t0))
		late = append(late, first.started.Sub(first.tick))
		firsts[first.tick] = true
		if err := old.wait(30 * time.Second); err != nil {
			return nil, fmt.Errorf("the old leader after SIGTERM: %w", err)
		}
		if _, err := c.startReplica(v.leaderID); err != nil {
			return nil, err
		}
		if len(elected)%10 == 0 {
			h.logf("handover: %d of %d", len(elected), h.cfg.handovers)
		}
	}
	// Let the last successor tick once more, so its gap would show.
	if _, err := c.steady(ctx, len(ids)); err != nil {
		return nil, err
	}
	lines, err := c.ledger.settled(ctx, 10*time.Second)
	if err != nil {
		return nil, err
	}
	tl := tally(lines)
	var regular []time.Duration
	for _, l := range lines {
		if !firsts[l.tick] {
			regular = append(regular, l.started.Sub(l.tick))
		}
	}

	r := &report{}
	t := r.table("from SIGTERM of the leader to", "p50", "p99", "max")
	add := func(what string, s []time.Duration) {
		t.row(what, ms(quantile(s, 0.5)), ms(quantile(s, 0.99)), ms(maxOf(s)))
	}
	add("its key deleted (resigned)", resigned)
	add("the successor elected (its key records `since`)", elected)
	add("the successor's first tick started", firstTick)
	add("— that tick's start after its nominal time", late)
	add("every other tick's start after its nominal time, for comparison", regular)
	r.note("%d handovers, 3 `baton crontab --seconds --ttl %d` replicas, a job every second (`* * * * * *`) that appends `$BATON_TICK $BATON_ID $(date +%%s%%N)` to a ledger and does nothing about SIGTERM. On SIGTERM, baton crontab passes SIGTERM on to a command once it has run for a second, so the job, which takes a few tens of milliseconds, is not cut short (on a machine so loaded that its shell takes longer, it is, and the report says so); a tick missed or run twice fails the figure, naming it.", len(elected), ttl)
	r.note("Ledger over the run: %d ticks, %d missed, %d run twice.%s", tl.ticks, len(tl.missed), tl.extraRuns(), listTimes(tl.missed))
	r.note("Times are seen by a watcher of `/baton/election/handover/` in another process; a tick's start is when its shell ran `date`. The first tick is due at the next whole second, so SIGTERM → first tick is spread over 0–1 s by design; the lateness row is the handover's cost to the schedule.")
	c.judge(ctx, r, tl, sigterms)
	return r, nil
}

// runFailover measures a crash: the leading `baton crontab` gets kill -9 and
// its lease must expire before the next replica leads.
func runFailover(ctx context.Context, h *harness) (*report, error) {
	r := &report{}
	t := r.table("TTL", "trials", "successor elected, median", "max", "median ÷ TTL", "max ÷ TTL", "first run by the successor, median", "ticks missed per crash, median")
	for _, ttl := range h.cfg.failoverTTLs {
		dir, err := h.subdir(fmt.Sprintf("failover-%d", ttl))
		if err != nil {
			return nil, err
		}
		res, err := failoverTrials(ctx, h, dir, ttl)
		if err != nil {
			return nil, fmt.Errorf("TTL %ds: %w", ttl, err)
		}
		d := time.Duration(ttl) * time.Second
		med, mx := quantile(res.elected, 0.5), maxOf(res.elected)
		t.row(fmt.Sprintf("%d s", ttl), strconv.Itoa(len(res.elected)), ms(med), ms(mx),
			num(med.Seconds()/d.Seconds()), num(mx.Seconds()/d.Seconds()),
			ms(quantile(res.firstRun, 0.5)), strconv.Itoa(medianInt(res.missed)))
	}
	r.note("3 `baton crontab --seconds --ttl TTL` replicas, a job every second; the leader is killed at a random moment after it has ticked, the killed replica is started again after each trial.")
	r.note("A crashed leader's lease was last renewed at most TTL/3 before the kill (keepalives go every TTL/3), so its key lives on for ⅔ to 1 TTL; etcd checks for expired leases every 500 ms, and the successor notices the deletion through its watch. The successor's first run is the latest missed tick, run once (misfire policy RunOnce); the others in the gap are skipped by design (G4).")
	return r, nil
}

type failoverResult struct {
	elected, firstRun []time.Duration
	missed            []int
}

func failoverTrials(ctx context.Context, h *harness, dir string, ttl int) (failoverResult, error) {
	var res failoverResult
	c, err := h.startCrontabCluster(ctx, dir, fmt.Sprintf("failover-%d", ttl), "", "--seconds", "--ttl", strconv.Itoa(ttl))
	if err != nil {
		return res, err
	}
	defer c.close()
	ids := []string{"r1", "r2", "r3"}
	for _, id := range ids {
		if _, err := c.startReplica(id); err != nil {
			return res, err
		}
	}
	d := time.Duration(ttl) * time.Second
	for len(res.elected) < h.cfg.failoverTrials {
		v, err := c.steady(ctx, len(ids))
		if err != nil {
			return res, fmt.Errorf("trial %d: %w", len(res.elected)+1, err)
		}
		// A random point of the keepalive cycle.
		if !sleepCtx(ctx, rand.N(d/3)) {
			return res, ctx.Err()
		}
		from := c.obs.mark()
		if now := c.obs.now(); now.leaderKey != v.leaderKey || now.candidates != len(ids) {
			continue // not steady any more: wait again
		}
		lines, err := c.ledger.read()
		if err != nil {
			return res, err
		}
		lastTick := lines[len(lines)-1].tick
		victim := c.member(v.leaderID)
		t0 := time.Now()
		if err := victim.cmd.Process.Kill(); err != nil {
			return res, err
		}
		next, err := c.obs.waitFrom(ctx, from, 2*d+30*time.Second, "a successor elected", func(s electionView) bool {
			return s.leaderKey != "" && s.leaderKey != v.leaderKey && s.elected
		})
		if err != nil {
			return res, err
		}
		first, err := c.ledger.waitLine(ctx, 30*time.Second, "the successor's first run", func(l ledgerLine) bool {
			return l.id == next.leaderID && l.started.After(t0)
		})
		if err != nil {
			return res, err
		}
		// The ticks in the gap: after the victim's last, up to the first
		// regular tick of the successor.
		resumed, err := c.ledger.waitLine(ctx, 30*time.Second, "the successor's next tick", func(l ledgerLine) bool {
			return l.id == next.leaderID && l.tick.After(first.tick) && l.started.After(first.started)
		})
		if err != nil {
			return res, err
		}
		gap := int(resumed.tick.Sub(lastTick)/time.Second) - 1
		ran := 0
		all, _ := c.ledger.read()
		for _, l := range all {
			if l.tick.After(lastTick) && l.tick.Before(resumed.tick) {
				ran++
			}
		}
		res.elected = append(res.elected, next.at.Sub(t0))
		res.firstRun = append(res.firstRun, first.started.Sub(t0))
		res.missed = append(res.missed, gap-ran)
		victim.wait(10 * time.Second)
		if _, err := c.startReplica(v.leaderID); err != nil {
			return res, err
		}
		h.logf("failover: TTL %ds, trial %d: successor elected after %v", ttl, len(res.elected), next.at.Sub(t0).Round(time.Millisecond))
	}
	lines, err := c.ledger.read()
	if err != nil {
		return res, err
	}
	if tl := tally(lines); len(tl.twice) > 0 {
		return res, fmt.Errorf("%d ticks ran twice, the first %s", len(tl.twice), tl.twice[0].tick.Format(time.TimeOnly))
	}
	return res, nil
}

// listTimes lists the first few times, for a note.
func listTimes(ts []time.Time) string {
	if len(ts) == 0 {
		return ""
	}
	var s []string
	for _, t := range ts[:min(len(ts), 5)] {
		s = append(s, t.Format(time.TimeOnly))
	}
	return " Missed: " + strings.Join(s, ", ") + "."
}

func medianInt(v []int) int {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	return s[(len(s)-1)/2]
}
