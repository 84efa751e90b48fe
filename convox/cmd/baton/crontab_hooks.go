package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/batonhq/baton/cronx"
)

// A job's hooks are commands run at the end of a run, once per run in the
// cluster, by the replica that ran it (cronx.WithOnFailure, WithOnSuccess):
// --on-failure and --on-success for every entry, on-failure= and
// on-success= for one (on-failure="" for none), each bounded by
// --hook-timeout or hook-timeout=.

// hookSetting is an entry's on-failure=, on-success= and hook-timeout=,
// each unset (nil) unless given: they combine with the flags.
type hookSetting struct {
	onFailure, onSuccess *string
	timeout              *time.Duration
}

// hookFlags are --on-failure, --on-success and --hook-timeout.
type hookFlags struct {
	onFailure, onSuccess string
	timeout              time.Duration
}

// check names a flag that cannot be used. A command given as an argument
// fits in one, so it can be passed to sh -c as one.
func (f hookFlags) check() error {
	if f.timeout <= 0 {
		return fmt.Errorf("--hook-timeout %v: want a duration above 0", f.timeout)
	}
	return nil
}

// hookOptions returns the JobOptions of j's hooks: the entry's own over the
// flags'. A hook whose command is empty is none.
func (j crontabJob) hookOptions(f hookFlags) []cronx.JobOption {
	s := j.entry.hooks
	onFailure, onSuccess, timeout := f.onFailure, f.onSuccess, f.timeout
	if s.onFailure != nil {
		onFailure = *s.onFailure
	}
	if s.onSuccess != nil {
		onSuccess = *s.onSuccess
	}
	if s.timeout != nil {
		timeout = *s.timeout
	}
	var opts []cronx.JobOption
	if onFailure != "" {
		opts = append(opts, cronx.WithOnFailure(j.hook("on-failure", onFailure)))
	}
	if onSuccess != "" {
		opts = append(opts, cronx.WithOnSuccess(j.hook("on-success", onSuccess)))
	}
	if len(opts) > 0 {
		opts = append(opts, cronx.WithHookTimeout(timeout))
	}
	return opts
}

// hook is the cronx.Hook that runs command with sh -c, under a supervisor
// as the job's command is, with the run's facts in its environment: the
// command's, and BATON_HOOK, BATON_EXIT (the command's exit status, empty
// when it had none) and BATON_ERROR (how the run failed, empty on success).
// At the end of its context (its timeout, or baton's stop) it gets SIGTERM,
// then SIGKILL after --grace; it returns once the hook's whole tree has
// ended. A hook whose context ended before it started is not started.
func (j crontabJob) hook(label, command string) cronx.Hook {
	return func(ctx context.Context, info cronx.Info, runErr error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("not started: %w", context.Cause(ctx))
		}
		exit, msg := "0", ""
		if runErr != nil {
			exit, msg = "", runErr.Error()
			var code exitError
			if errors.As(runErr, &code) {
				exit = strconv.Itoa(int(code))
			}
		}
		env := append(j.runEnv(info), "BATON_HOOK="+label, "BATON_EXIT="+exit, "BATON_ERROR="+msg)
		p, err := startProc([]string{j.shell, "-c", command}, env, nil, j.env.stdout, j.env.stderr, "["+j.entry.name+" "+label+"] ")
		if err != nil {
			return err
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			j.logger.Warn("baton crontab: stopping the hook", "job", j.entry.name, "tick", info.Tick, "hook", label,
				"cause", context.Cause(ctx), "grace", j.grace.String())
			p.stop(j.grace)
			return fmt.Errorf("%w: stopped (exit status %d)", context.Cause(ctx), p.code)
		}
		if p.code != 0 {
			return exitError(p.code)
		}
		return nil
	}
}

// exitError is a command's non-zero exit status.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
