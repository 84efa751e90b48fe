package cronx

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/batonhq/baton/internal/jobkeys"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A backfill (Cron.Backfill, Control.Backfill) is a request to run every
// tick of a job's schedule in [from, to): a key of its own under the
// scheduler's backfill directory, .backfill/<job>/<id>, named after its
// range, so that the same range asked twice, by any number of replicas or
// commands, is one backfill. The key holds the request and its progress:
// how many ticks it has, how many were claimed, and the last one claimed.
// The replica that schedules (the leader, or every replica in claim mode)
// runs a job's backfills one after another, and a backfill's ticks one at
// a time, in order (backfiller.go): each tick is claimed by one transaction
// that moves the progress on from the value it read and creates the run's
// marker, so each tick runs once in the cluster, and a successor resumes
// at the tick after the last one claimed.

// Backfill is a backfill of a job: its request and its progress.
type Backfill struct {
	Job string
	// From and To are the range: the ticks at or after From and before To.
	From, To time.Time
	// Max is the cap it was asked with: a backfill of more ticks is refused.
	Max int
	// Ticks is how many ticks the range holds; 0 until a replica that has
	// the job counted them (a request of Control, which has no schedule).
	Ticks int
	// Done is how many of them were claimed: started, or run.
	Done int
	// Finished is true once every tick was claimed; Refused says why a
	// replica that has the job refused it (more ticks than Max).
	Finished bool
	Refused  string
	// By is who asked, At when.
	By string
	At time.Time
	// Existing is true when the request was there already: the same range
	// asked before, by this or another caller. Only Backfill's result sets it.
	Existing bool
}

// Pending reports whether ticks of b are still to run: it is neither
// finished nor refused.
func (b Backfill) Pending() bool { return !b.Finished && b.Refused == "" }

// publicBackfill is job's backfill of value v, as Backfill tells it.
func publicBackfill(job string, v jobkeys.Backfill) Backfill {
	return Backfill{Job: job, From: time.Unix(0, v.From), To: time.Unix(0, v.To), Max: v.Max, Ticks: v.Ticks, Done: v.Done,
		Finished: v.Finished, Refused: v.Refused, By: v.By, At: time.Unix(0, v.At)}
}

// backfillID names the backfill of [from, to).
func backfillID(from, to time.Time) string {
	return fmt.Sprintf("%020d-%020d", from.UnixNano(), to.UnixNano())
}

// checkBackfill checks a backfill's range and cap against now, and returns
// the cap: max, or DefaultMaxBackfill for 0.
func checkBackfill(job string, from, to time.Time, max int, now time.Time) (int, error) {
	bad := func(format string, args ...any) (int, error) {
		return 0, fmt.Errorf("cronx: backfill %q: "+format, append([]any{job}, args...)...)
	}
	switch {
	case from.UnixNano() <= 0 || to.UnixNano() <= 0:
		return bad("from %s and to %s must both be after 1970", stamp(from), stamp(to))
	case !from.Before(to):
		return bad("from %s is not before to %s", stamp(from), stamp(to))
	case to.After(now):
		return bad("to %s is later than now (%s): a tick to come runs on the schedule", stamp(to), stamp(now))
	case max < 0 || max > MaxBackfillTicks:
		return bad("max %d is not within 0..%d", max, MaxBackfillTicks)
	case max == 0:
		return DefaultMaxBackfill, nil
	}
	return max, nil
}

func stamp(t time.Time) string { return t.Format(time.RFC3339) }

// countBackfill counts the ticks of sched in [from, to), and refuses more
// than max with an error naming their count.
func countBackfill(job string, sched Schedule, from, to time.Time, max int) (int, error) {
	n, over := countTicks(sched, from, to, MaxBackfillTicks)
	if over {
		return 0, fmt.Errorf("cronx: backfill %q from %s to %s: more than %d ticks; the most a backfill takes is %d",
			job, stamp(from), stamp(to), MaxBackfillTicks, MaxBackfillTicks)
	}
	if n > max { // mutation:backfill-cap
		return 0, fmt.Errorf("cronx: backfill %q from %s to %s: %d ticks, more than the cap of %d",
			job, stamp(from), stamp(to), n, max)
	}
	return n, nil
}

// countTicks counts the ticks of sched in [from, to), up to limit; over is
// true when there are more.
func countTicks(sched Schedule, from, to time.Time, limit int) (n int, over bool) {
	prev := from.Add(-time.Nanosecond)
	for t := sched.Next(prev); !t.IsZero() && t.After(prev) && t.Before(to); t = sched.Next(t) {
		if n == limit {
			return n, true
		}
		n++
		prev = t
	}
	return n, false
}

// nextBackfillTick is the tick of sched that v claims next, in loc: the
// first at or after From, then the one after the last claimed; and the tick
// after it. A zero tick means none is left.
func nextBackfillTick(sched Schedule, v jobkeys.Backfill, loc *time.Location) (tick, following time.Time) {
	after := time.Unix(0, v.From).In(loc).Add(-time.Nanosecond)
	if v.Last != 0 {
		after = time.Unix(0, v.Last).In(loc) // mutation:backfill-resume
	}
	tick = sched.Next(after)
	if tick.IsZero() || !tick.After(after) || !tick.Before(time.Unix(0, v.To)) {
		return time.Time{}, time.Time{}
	}
	return tick, sched.Next(tick)
}

// Backfill asks for every tick of job's schedule in [from, to) to run once
// in the cluster, now, and returns the backfill as it stands: how many
// ticks it queued and, for a range asked before, how many have run. It
// returns once the request is in etcd; the replica that schedules runs the
// ticks, one at a time and in order, whatever the job's overlap policy,
// each with Info.Backfill set and its own tick as Info.Tick. Under Forbid
// and Replace a backfilled run also waits for a run of the job in
// progress; a tick of the schedule that comes meanwhile is skipped under
// Forbid, and under Replace waits for the backfilled run to end (neither
// replaces the other); under Allow they run side by side. A paused job's backfill
// waits for Resume. A tick the schedule ran already runs again: that is
// what a backfill is for.
//
// max caps the ticks (0: DefaultMaxBackfill); a range of more is refused
// with an error that counts them. to must not be later than now: a tick to
// come runs on the schedule. The same range asked again, here or on
// another replica, while its request is kept is the same backfill
// (Backfill.Existing): its ticks run once. A job keeps its last 16
// requests, finished ones included; 16 in progress refuse another.
//
// It returns ErrNotCoordinated for a Cron without etcd and ErrUnknownJob
// for a job this Cron does not have.
func (c *Cron) Backfill(ctx context.Context, job string, from, to time.Time, max int) (Backfill, error) {
	k, release, err := c.control(ctx)
	if err != nil {
		return Backfill{}, err
	}
	defer release()
	if err := checkJobName(job); err != nil {
		return Backfill{}, err
	}
	e, ok := c.entryByName(job)
	if !ok {
		return Backfill{}, fmt.Errorf("cronx: backfill %q of scheduler %q: %w", job, c.coord.name, ErrUnknownJob)
	}
	now := c.now()
	if max, err = checkBackfill(job, from, to, max, now); err != nil {
		return Backfill{}, err
	}
	loc := now.Location()
	ticks, err := countBackfill(job, e.Schedule, from.In(loc), to.In(loc), max)
	if err != nil {
		return Backfill{}, err
	}
	if ticks == 0 {
		// Nothing to run: nothing to ask.
		return Backfill{Job: job, From: from, To: to, Max: max, Finished: true, By: c.coord.identity, At: now}, nil
	}
	return k.requestBackfill(ctx, job, from, to, max, c.coord.identity, ticks, now)
}

// Backfill asks for every tick of job in [from, to) to run once, as
// Cron.Backfill does, for by. A Control has no schedule: the replica that
// schedules the job counts the ticks, and refuses more than max (0:
// DefaultMaxBackfill), which Backfills then tells (Backfill.Refused).
func (k *Control) Backfill(ctx context.Context, job string, from, to time.Time, max int, by string) (Backfill, error) {
	if err := checkJobName(job); err != nil {
		return Backfill{}, err
	}
	now := time.Now()
	max, err := checkBackfill(job, from, to, max, now)
	if err != nil {
		return Backfill{}, err
	}
	if err := k.known(ctx, job); err != nil {
		return Backfill{}, err
	}
	return k.requestBackfill(ctx, job, from, to, max, by, 0, now)
}

// Backfills reads job's backfills, oldest range first: those in progress
// and those kept once finished or refused.
func (k *Control) Backfills(ctx context.Context, job string) ([]Backfill, error) {
	if err := checkJobName(job); err != nil {
		return nil, err
	}
	resp, err := k.client.Get(ctx, k.keys.BackfillsOf(job), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cronx: backfills of %q: %w", job, err)
	}
	var out []Backfill
	for _, kv := range resp.Kvs {
		out = append(out, publicBackfill(job, jobkeys.ParseBackfill(kv.Value)))
	}
	return out, nil
}

// requestBackfill writes the request of [from, to) unless it is there (a
// refused one is asked again), making room among the job's maxBackfills
// by deleting the oldest finished ones. ticks is the count, 0 when not
// known here.
func (k *Control) requestBackfill(ctx context.Context, job string, from, to time.Time, max int, by string, ticks int, now time.Time) (Backfill, error) {
	key := k.keys.Backfill(job, backfillID(from, to))
	v := jobkeys.Backfill{From: from.UnixNano(), To: to.UnixNano(), Max: max, Ticks: ticks, By: by, At: now.UnixNano()}
	for range 3 {
		resp, err := k.client.Get(ctx, k.keys.BackfillsOf(job), clientv3.WithPrefix())
		if err != nil {
			return Backfill{}, fmt.Errorf("cronx: backfill %q: %w", job, err)
		}
		var same *mvccpb.KeyValue
		var ended []*mvccpb.KeyValue
		pending := 0
		for _, kv := range resp.Kvs {
			ov := jobkeys.ParseBackfill(kv.Value)
			switch {
			case string(kv.Key) == key:
				same = kv
			case ov.Finished || ov.Refused != "":
				ended = append(ended, kv)
			default:
				pending++
			}
		}
		if same != nil {
			if ov := jobkeys.ParseBackfill(same.Value); ov.Refused == "" {
				b := publicBackfill(job, ov)
				b.Existing = true
				return b, nil
			}
		}
		if pending >= maxBackfills {
			return Backfill{}, fmt.Errorf("cronx: backfill %q: %d backfills of the job are in progress, at most %d", job, pending, maxBackfills)
		}
		cond := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		if same != nil {
			cond = clientv3.Compare(clientv3.ModRevision(key), "=", same.ModRevision)
		}
		conds := []clientv3.Cmp{cond}
		ops := []clientv3.Op{clientv3.OpPut(key, v.Encode())}
		sort.Slice(ended, func(a, b int) bool { return ended[a].CreateRevision < ended[b].CreateRevision })
		kept := len(ended) + pending
		for i := 0; same == nil && kept+1 > maxBackfills && i < len(ended); i++ {
			conds = append(conds, clientv3.Compare(clientv3.ModRevision(string(ended[i].Key)), "=", ended[i].ModRevision))
			ops = append(ops, clientv3.OpDelete(string(ended[i].Key)))
			kept--
		}
		tr, err := k.client.Txn(ctx).If(conds...).Then(ops...).Commit()
		if err != nil {
			return Backfill{}, fmt.Errorf("cronx: backfill %q: %w", job, err)
		}
		if tr.Succeeded {
			return publicBackfill(job, v), nil
		}
	}
	return Backfill{}, fmt.Errorf("cronx: backfill %q: %w", job, errBackfillsChanging)
}

// errBackfillsChanging is the outcome of a request whose job's backfills
// kept changing under it.
var errBackfillsChanging = errors.New("the job's backfills kept changing under the request")
