package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/internal/claimcond"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ledgerTally is what a ledger says of the ticks from its first to its
// last.
type ledgerTally struct {
	ticks  int
	missed []time.Time // ticks no replica ran
	twice  []ranTwice  // ticks run more than once
}

// ranTwice is a tick run more than once, by the replicas named.
type ranTwice struct {
	tick time.Time
	by   []string
}

// extraRuns counts the runs beyond each tick's first.
func (t ledgerTally) extraRuns() int {
	n := 0
	for _, r := range t.twice {
		n += len(r.by) - 1
	}
	return n
}

// tally counts, from the first tick in the ledger to the last, the ticks
// no replica ran and those run more than once.
func tally(lines []ledgerLine) ledgerTally {
	var t ledgerTally
	if len(lines) == 0 {
		return t
	}
	by := map[int64][]string{}
	first, last := lines[0].tick, lines[0].tick
	for _, l := range lines {
		by[l.tick.Unix()] = append(by[l.tick.Unix()], l.id)
		if l.tick.Before(first) {
			first = l.tick
		}
		if l.tick.After(last) {
			last = l.tick
		}
	}
	for s := first.Unix(); s <= last.Unix(); s++ {
		t.ticks++
		switch ids := by[s]; {
		case len(ids) == 0:
			t.missed = append(t.missed, time.Unix(s, 0).UTC())
		case len(ids) > 1:
			t.twice = append(t.twice, ranTwice{tick: time.Unix(s, 0).UTC(), by: ids})
		}
	}
	return t
}

// judge fails r for each tick the ledger missed or ran twice, since a
// deploy costs nothing (G3), telling each with what etcd kept of it and
// the SIGTERM nearest to it.
func (c *crontabCluster) judge(ctx context.Context, r *report, tl ledgerTally, sigterms []sigterm) {
	for _, tick := range tl.missed {
		story, cut := c.tickStory(ctx, tick, sigterms)
		if cut {
			// Started, and ended by the deploy as `baton crontab --grace`
			// says: the machine was too loaded for the job's shell to
			// write its line within the allowance.
			r.note("Tick %s ran and was cut short before it wrote its line: %s.", tick.Format(time.TimeOnly), story)
			continue
		}
		r.broke("tick %s missed: %s", tick.Format(time.TimeOnly), story)
	}
	for _, tw := range tl.twice {
		story, _ := c.tickStory(ctx, tw.tick, sigterms)
		r.broke("tick %s ran %d times, on %s: %s", tw.tick.Format(time.TimeOnly), len(tw.by), strings.Join(tw.by, ", "), story)
	}
}

// sigterm is one SIGTERM the harness sent a leading replica.
type sigterm struct {
	leader string
	at     time.Time
}

// nearest returns the SIGTERM closest to tick, within two seconds of it.
func nearest(sigterms []sigterm, tick time.Time) (sigterm, bool) {
	var best sigterm
	found := false
	for _, s := range sigterms {
		if d := s.at.Sub(tick).Abs(); d <= 2*time.Second && (!found || d < best.at.Sub(tick).Abs()) {
			best, found = s, true
		}
	}
	return best, found
}

// startAllowance is how long `baton crontab` lets a command run, after a
// SIGTERM of its own, before it passes the SIGTERM on (--grace's help).
const startAllowance = time.Second

// tickStory says what etcd kept of one tick of the ledger's job, "tick":
// which replica claimed it, and how its recorded run ended; and which
// SIGTERM came nearest to it. cut says that the run started, and a
// SIGTERM of its replica ended it after the start allowance, as it
// ends any command that runs past it.
func (c *crontabCluster) tickStory(ctx context.Context, tick time.Time, sigterms []sigterm) (story string, cut bool) {
	var parts []string
	if s, ok := nearest(sigterms, tick); ok {
		parts = append(parts, fmt.Sprintf("SIGTERM of the leader %s %s", s.leader, offset(s.at, tick)))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	job := "/baton/jobs/" + c.name + "/tick/"
	claims, err := revisions(ctx, c.cli, job+"last")
	if err != nil {
		return strings.Join(append(parts, fmt.Sprintf("its claim unknown (%v)", err)), "; "), false
	}
	holder := ""
	for _, kv := range claims {
		if seq, who, err := claimcond.Parse(string(kv.Value)); err == nil && seq == tick.UnixNano() {
			holder = who
		}
	}
	if holder == "" {
		return strings.Join(append(parts, "no replica claimed it"), "; "), false
	}
	parts = append(parts, "claimed by "+holder)
	history, err := revisions(ctx, c.cli, job+"history")
	if err != nil {
		return strings.Join(append(parts, fmt.Sprintf("its run unknown (%v)", err)), "; "), false
	}
	for _, kv := range slices.Backward(history) {
		var recs []cronx.Record
		if json.Unmarshal(kv.Value, &recs) != nil {
			continue
		}
		for _, r := range recs {
			if r.Tick.Equal(tick) {
				end := "succeeded"
				if r.Error != "" {
					end = "failed: " + r.Error
				}
				return strings.Join(append(parts, fmt.Sprintf("its run on %s started %s and %s after %v",
					r.Instance, offset(r.Start, tick), end, r.Duration.Round(time.Millisecond))), "; "), cutShort(r, sigterms)
			}
		}
	}
	return strings.Join(append(parts, "no run of it recorded"), "; "), false
}

// cutShort says that run r ended by SIGTERM after the start allowance,
// and a SIGTERM of its replica came while it ran.
func cutShort(r cronx.Record, sigterms []sigterm) bool {
	if r.Duration < startAllowance || !strings.Contains(r.Error, "exit status 143") && !strings.Contains(r.Error, "signal: terminated") {
		return false
	}
	for _, s := range sigterms {
		if s.leader == r.Instance && !s.at.Before(r.Start) && s.at.Before(r.Start.Add(r.Duration)) {
			return true
		}
	}
	return false
}

// offset says when at came relative to tick.
func offset(at, tick time.Time) string {
	d := at.Sub(tick).Round(time.Millisecond)
	if d < 0 {
		return fmt.Sprintf("%v before the tick", -d)
	}
	return fmt.Sprintf("%v after the tick", d)
}

// revisions returns the values key had since it was last created, oldest
// first, as far as etcd keeps them (the bench's etcd compacts what is an
// hour old).
func revisions(ctx context.Context, cli *clientv3.Client, key string) ([]*mvccpb.KeyValue, error) {
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	cur := resp.Kvs[0]
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out []*mvccpb.KeyValue
	for wr := range cli.Watch(wctx, key, clientv3.WithRev(cur.CreateRevision)) {
		if err := wr.Err(); err != nil {
			return out, err
		}
		for _, ev := range wr.Events {
			out = append(out, ev.Kv)
			if ev.Kv.ModRevision >= cur.ModRevision {
				return out, nil
			}
		}
	}
	return out, ctx.Err()
}
