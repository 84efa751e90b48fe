package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/spf13/pflag"
)

func init() {
	register(command{name: "backfill", summary: "run every tick of a job in a past range once, on one replica", run: runBackfill})
}

// backfillSynopsis is baton backfill's help.
var backfillSynopsis = `Usage: baton backfill [flags] --from T [--to T] [--max N] [SCHEDULER] JOB

Runs every tick of JOB's schedule in [--from, --to) once in the cluster,
now: a week of an hourly job lost to a bug, the nights of an outage. The
request is kept in etcd, and the replica that schedules JOB (the leader, or
in claim mode the replicas in turn) runs its ticks one at a time, oldest
first, each with BATON_TICK the tick's own time and BATON_BACKFILL=1. A job
that forbids overlapping runs (or replaces them) waits for a run in
progress, and its ticks that come meanwhile are skipped as overlapping (a
replacing job's wait for the backfilled run instead); a
paused job's backfill waits for ` + "`baton resume`" + `. The same range asked again,
by any number of commands or replicas, is the same backfill: each tick runs
once. If the replica running it stops or dies, the next one goes on from the
tick after the last one started. ` + "`baton status`" + ` shows a backfill in progress
(ticks done of its ticks).

T is a time in RFC 3339 (2026-11-24T00:00:00Z), or a duration before now
(-24h, -90m); --to is now unless given, and may not be later. --max caps
the ticks (default ` + fmt.Sprint(cronx.DefaultMaxBackfill) + `): a range of more is refused, with their count.
baton backfill waits up to --wait for a replica that has JOB to count its
ticks, and says how many it queued; a replica that has not by then counts
them once it schedules JOB (` + "`baton status`" + ` shows it).

JOB is a job's name, or SCHEDULER/JOB, or SCHEDULER JOB. The scheduler is
--scheduler, "crontab" by default: the name ` + "`baton crontab`" + ` runs under unless
given --name. A Go program names its scheduler with cronx.WithName, and asks
for a backfill with Cron.Backfill. An unknown job is an error listing the
scheduler's jobs.`

func runBackfill(ctx context.Context, env *environ, args []string) int {
	fs := flagSet(env, "backfill", backfillSynopsis)
	scheduler := fs.String("scheduler", defaultScheduler, "the job's scheduler")
	fromArg := fs.String("from", "", "the first time of the range: RFC 3339, or a duration before now (-24h)")
	toArg := fs.String("to", "", "the end of the range, not included (default now)")
	max := fs.Int("max", 0, fmt.Sprintf("the most ticks to run; a range of more is refused (0: %d)", cronx.DefaultMaxBackfill))
	wait := fs.Duration("wait", opTimeout, "how long to wait for a replica that has JOB to count its ticks (0: do not wait)")
	conn := addConnFlags(fs, true, false)
	if code, done := parse(env, fs, args); done {
		return code
	}
	now := time.Now()
	t, from, to, err := backfillArgs(fs, *scheduler, *fromArg, *toArg, now)
	if err != nil {
		return usageError(env, fs, "%v", err)
	}
	if *max < 0 || *max > cronx.MaxBackfillTicks {
		return usageError(env, fs, "--max %d: not within 0..%d", *max, cronx.MaxBackfillTicks)
	}
	if *wait < 0 {
		return usageError(env, fs, "--wait %v: negative", *wait)
	}
	cfg, cli, err := conn.connect(ctx)
	if err != nil {
		return connectFailed(env, fs, "backfill", err)
	}
	defer cli.Close()
	prefix, identity, err := resolveNames(cfg.ElectionOptions())
	if err != nil {
		return fail(env, "backfill", err)
	}
	ctl, err := cronx.NewControl(cli, prefix, t.scheduler)
	if err != nil {
		return fail(env, "backfill", err)
	}
	opCtx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := t.read(opCtx, ctl, cli, prefix); err != nil {
		return fail(env, "backfill", err)
	}
	b, err := ctl.Backfill(opCtx, t.job, from, to, *max, identity)
	if err != nil {
		return fail(env, "backfill", err)
	}
	if !b.Existing && b.Ticks == 0 && *wait > 0 {
		b, err = awaitCount(ctx, ctl, b, *wait)
		if err != nil {
			return fail(env, "backfill", err)
		}
	}
	span := fmt.Sprintf("%s from %s to %s", t, from.Format(time.RFC3339), to.Format(time.RFC3339))
	switch {
	case b.Refused != "":
		return fail(env, "backfill", fmt.Errorf("%s refused: %s", span, b.Refused))
	case b.Existing && b.Finished:
		fmt.Fprintf(env.stdout, "backfill of %s was asked before and has finished: %d of %d ticks run; nothing more runs\n", span, b.Done, b.Ticks)
	case b.Existing:
		fmt.Fprintf(env.stdout, "backfill of %s was asked before (by %s): %d of %s ticks run so far; each runs once\n", span, b.By, b.Done, count(b.Ticks))
	case b.Finished:
		fmt.Fprintf(env.stdout, "backfill of %s: no tick in the range; nothing runs\n", span)
	case b.Ticks == 0:
		fmt.Fprintf(env.stdout, "backfill of %s asked; no replica that has the job counted its ticks yet: they run once one schedules it\n", span)
	default:
		fmt.Fprintf(env.stdout, "backfill of %s: %d ticks queued; one replica runs them one at a time (`baton status` shows the progress)\n", span, b.Ticks)
	}
	return exitOK
}

func count(n int) string {
	if n == 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

// backfillArgs reads the job, as JOB, SCHEDULER/JOB or SCHEDULER JOB, and
// the range.
func backfillArgs(fs *pflag.FlagSet, scheduler, fromArg, toArg string, now time.Time) (t jobTarget, from, to time.Time, err error) {
	if fs.NArg() == 2 {
		t = jobTarget{scheduler: fs.Arg(0), job: fs.Arg(1)}
		switch {
		case fs.Changed("scheduler") && t.scheduler != scheduler:
			return t, from, to, fmt.Errorf("SCHEDULER %q, --scheduler %q", t.scheduler, scheduler)
		case strings.Contains(t.job, "/"):
			return t, from, to, fmt.Errorf("JOB %q after SCHEDULER %q: give SCHEDULER JOB or SCHEDULER/JOB", t.job, t.scheduler)
		}
		if err := election.CheckName("scheduler", t.scheduler); err != nil {
			return t, from, to, err
		}
		if err := election.CheckName("job", t.job); err != nil {
			return t, from, to, err
		}
	} else if t, err = jobArg(fs, scheduler); err != nil {
		return t, from, to, err
	}
	if fromArg == "" {
		return t, from, to, errors.New("no --from given")
	}
	if from, err = timeArg("--from", fromArg, now); err != nil {
		return t, from, to, err
	}
	to = now
	if toArg != "" {
		if to, err = timeArg("--to", toArg, now); err != nil {
			return t, from, to, err
		}
	}
	switch {
	case !from.Before(to):
		return t, from, to, fmt.Errorf("--from %s is not before --to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	case to.After(now):
		return t, from, to, fmt.Errorf("--to %s is later than now: a tick to come runs on the schedule", to.Format(time.RFC3339))
	}
	return t, from, to, nil
}

// timeArg reads a time flag: RFC 3339, or a negative duration from now.
func timeArg(flag, v string, now time.Time) (time.Time, error) {
	if strings.HasPrefix(v, "-") {
		d, err := time.ParseDuration(v)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s %q: not a duration before now (-24h): %v", flag, v, err)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: not an RFC 3339 time (2026-11-24T00:00:00Z) or a duration before now (-24h)", flag, v)
	}
	return t, nil
}

// awaitCount waits up to d for a replica that has the job to count b's
// ticks, or refuse it.
func awaitCount(ctx context.Context, ctl *cronx.Control, b cronx.Backfill, d time.Duration) (cronx.Backfill, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		bs, err := ctl.Backfills(ctx, b.Job)
		if err != nil && ctx.Err() != nil {
			return b, nil // not counted in time
		}
		if err != nil {
			return b, err
		}
		for _, o := range bs {
			if o.From.Equal(b.From) && o.To.Equal(b.To) && (o.Ticks > 0 || o.Refused != "" || o.Finished) {
				return o, nil
			}
		}
		select {
		case <-ctx.Done():
			return b, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}
