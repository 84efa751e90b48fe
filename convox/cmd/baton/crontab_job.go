package main

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/cronx"
)

// crontabJob runs one crontab entry's command.
type crontabJob struct {
	entry    crontabEntry
	shell    string
	env      *environ
	grace    time.Duration
	stopping *atomic.Bool
	logger   *slog.Logger
	// baseEnv is the environment commands start from (commandEnv).
	baseEnv []string
}

// lostGrace is how long a command gets after SIGTERM when leadership or the
// claim is lost, before SIGKILL: short, because the next leader may start.
const lostGrace = 500 * time.Millisecond

// startAllowance is how long a command runs before the SIGTERM of baton's
// own stop reaches it. A program can catch or ignore a signal only once it
// runs: sent at once, the signal kills a command that started just before
// the stop (a tick due a few milliseconds before a deploy's SIGTERM) before
// its shell has read its first line, so that a tick run once does nothing.
const startAllowance = time.Second

func (j crontabJob) Run() { _ = j.RunContext(context.Background()) }

func (j crontabJob) RunContext(ctx context.Context) error {
	info, _ := cronx.InfoFrom(ctx)
	started := time.Now()
	p, err := startProc([]string{j.shell, "-c", j.entry.command}, j.runEnv(info), nil, j.env.stdout, j.env.stderr, "["+j.entry.name+"] ")
	if err != nil {
		j.logger.Error("baton crontab: the command could not be started", "job", j.entry.name, "tick", info.Tick, "err", err)
		return err
	}
	select {
	case <-p.done:
		if p.killed != 0 {
			j.logger.Warn("baton crontab: the command's supervisor was killed; the command and every process it started were killed with it",
				"job", j.entry.name, "tick", info.Tick, "signal", int(p.killed))
		}
	case <-ctx.Done():
		if j.stopping.Load() {
			j.stopGracefully(p, started)
		} else if cause := context.Cause(ctx); errors.Is(cause, cronx.ErrTimeout) || errors.Is(cause, cronx.ErrReplaced) {
			j.logger.Warn("baton crontab: stopping the command", "job", j.entry.name, "tick", info.Tick,
				"cause", cause, "grace", j.grace.String())
			p.stop(j.grace)
		} else {
			j.logger.Warn("baton crontab: lost the right to run; stopping the command", "job", j.entry.name,
				"tick", info.Tick, "cause", context.Cause(ctx))
			p.stop(lostGrace)
		}
	}
	if p.code != 0 {
		j.logger.Warn("baton crontab: the command failed", "job", j.entry.name, "tick", info.Tick, "status", p.code)
		return exitError(p.code)
	}
	return nil
}

// runEnv is the environment of the command of the run info, and of its
// hooks.
func (j crontabJob) runEnv(info cronx.Info) []string {
	env := append(slices.Clip(j.baseEnv), j.entry.env...)
	env = append(env,
		"BATON_JOB="+j.entry.name,
		"BATON_TICK="+info.Tick.Format(time.RFC3339Nano),
		"BATON_ID="+info.Instance,
		"BATON_FENCE="+strconv.FormatInt(info.Fence.Revision, 10),
		"BATON_ATTEMPT="+strconv.Itoa(max(info.Attempt, 1)),
		"BATON_RECOVERED="+strconv.Itoa(info.Recovered),
	)
	if info.Backfill {
		env = append(env, "BATON_BACKFILL=1") // a past tick, run by `baton backfill`
	}
	if info.CaughtUp {
		env = append(env, "BATON_CAUGHT_UP=1") // a missed tick, run late
	}
	return env
}

// stopGracefully ends a command as baton stops: SIGTERM once the command has
// run for startAllowance (a command that ends sooner gets none), and SIGKILL
// --grace after the stop, as without the allowance.
func (j crontabJob) stopGracefully(p *proc, started time.Time) {
	hold := min(startAllowance-time.Since(started), j.grace) // mutation:start-allowance
	if hold > 0 {
		t := time.NewTimer(hold)
		defer t.Stop()
		select {
		case <-p.done:
			return
		case <-t.C:
		}
	}
	p.stop(j.grace - max(hold, 0))
}
