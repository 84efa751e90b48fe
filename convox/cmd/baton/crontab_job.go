package main

import (
	"context"
	"errors"
	"fmt"
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

func (j crontabJob) Run() { _ = j.RunContext(context.Background()) }

func (j crontabJob) RunContext(ctx context.Context) error {
	info, _ := cronx.InfoFrom(ctx)
	env := append(slices.Clip(j.baseEnv), j.entry.env...)
	env = append(env,
		"BATON_JOB="+j.entry.name,
		"BATON_TICK="+info.Tick.Format(time.RFC3339),
		"BATON_ID="+info.Instance,
		"BATON_FENCE="+strconv.FormatInt(info.Fence.Revision, 10),
		"BATON_ATTEMPT="+strconv.Itoa(max(info.Attempt, 1)),
	)
	p, err := startProc([]string{j.shell, "-c", j.entry.command}, env, nil, j.env.stdout, j.env.stderr, "["+j.entry.name+"] ")
	if err != nil {
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
			p.stop(j.grace)
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
		return fmt.Errorf("exit status %d", p.code)
	}
	return nil
}
