package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// jobOp is one of pause, resume and trigger.
type jobOp struct {
	name, synopsis string
	// records says the operation records who did it, and so takes --id.
	records bool
	// do operates job and returns what to print.
	do func(ctx context.Context, ctl *cronx.Control, t jobTarget) (string, error)
}

// jobTarget is the job an operation acts on, as etcd has it.
type jobTarget struct {
	scheduler, job string
	paused         bool
	pausedBy       string
	identity       string // who operates, recorded by pause and trigger
}

func (t jobTarget) String() string { return t.scheduler + "/" + t.job }

const jobOpArgs = `JOB is a job's name, or SCHEDULER/JOB. The scheduler is --scheduler,
"crontab" by default: the name ` + "`baton crontab`" + ` runs under unless given --name.
A Go program names its scheduler with cronx.WithName. ` + "`baton status`" + ` lists
the schedulers and their jobs; an unknown job is an error listing them.`

var pauseOp = jobOp{
	name:    "pause",
	records: true,
	synopsis: `Usage: baton pause [flags] JOB

Stops every replica from starting JOB until ` + "`baton resume`" + `. Runs in
progress go on, and ` + "`baton trigger`" + ` still runs it once. The pause is kept in
etcd with who paused it (--id), so it outlasts replica restarts and deploys
(but not the loss of etcd's data).

` + jobOpArgs,
	do: func(ctx context.Context, ctl *cronx.Control, t jobTarget) (string, error) {
		if t.paused {
			by := t.pausedBy
			if by == "" {
				by = "-"
			}
			return fmt.Sprintf("%s is paused already (by %s)", t, by), nil
		}
		if err := ctl.Pause(ctx, t.job, t.identity); err != nil {
			return "", err
		}
		return fmt.Sprintf("paused %s: no replica starts it until `baton resume %s`; runs in progress go on", t, t), nil
	},
}

var resumeOp = jobOp{
	name: "resume",
	synopsis: `Usage: baton resume [flags] JOB

Lets a paused JOB run again, from its next tick: ticks that passed while it
was paused are not made up.

` + jobOpArgs,
	do: func(ctx context.Context, ctl *cronx.Control, t jobTarget) (string, error) {
		if !t.paused {
			return fmt.Sprintf("%s is not paused", t), nil
		}
		if err := ctl.Resume(ctx, t.job); err != nil {
			return "", err
		}
		return fmt.Sprintf("resumed %s: it runs from its next tick", t), nil
	},
}

var triggerOp = jobOp{
	name:    "trigger",
	records: true,
	synopsis: `Usage: baton trigger [flags] JOB

Runs JOB once, now, outside its schedule: on the scheduler's leader (leader
mode) or on the first replica to claim it (claim mode), even while it is
paused. A job that forbids overlapping runs, or buffers its ticks
(overlap=buffer-one, buffer-all), still waits for a run in progress. The trigger is recorded with who asked (--id), and the run is
marked triggered in its history.

` + jobOpArgs,
	do: func(ctx context.Context, ctl *cronx.Control, t jobTarget) (string, error) {
		if err := ctl.Trigger(ctx, t.job, t.identity); err != nil {
			return "", err
		}
		msg := fmt.Sprintf("triggered %s: one replica runs it once, now", t)
		if t.paused {
			msg += ", though it is paused"
		}
		return msg, nil
	},
}

func runPause(ctx context.Context, env *environ, args []string) int {
	return runJobOp(ctx, env, args, pauseOp)
}

func runResume(ctx context.Context, env *environ, args []string) int {
	return runJobOp(ctx, env, args, resumeOp)
}

func runTrigger(ctx context.Context, env *environ, args []string) int {
	return runJobOp(ctx, env, args, triggerOp)
}

func runJobOp(ctx context.Context, env *environ, args []string, op jobOp) int {
	fs := flagSet(env, op.name, op.synopsis)
	scheduler := fs.String("scheduler", defaultScheduler, "the job's scheduler")
	conn := addConnFlags(fs, op.records, false)
	if code, done := parse(env, fs, args); done {
		return code
	}
	t, err := jobArg(fs, *scheduler)
	if err != nil {
		return usageError(env, fs, "%v", err)
	}
	cfg, cli, err := conn.connect(ctx)
	if err != nil {
		return connectFailed(env, fs, op.name, err)
	}
	defer cli.Close()
	prefix, identity, err := resolveNames(cfg.ElectionOptions())
	if err != nil {
		return fail(env, op.name, err)
	}
	t.identity = identity
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	ctl, err := cronx.NewControl(cli, prefix, t.scheduler)
	if err != nil {
		return fail(env, op.name, err)
	}
	if err := t.read(ctx, ctl, cli, prefix); err != nil {
		return fail(env, op.name, err)
	}
	msg, err := op.do(ctx, ctl, t)
	if errors.Is(err, cronx.ErrUnknownJob) {
		// Gone between the read and the operation.
		err = t.read(ctx, ctl, cli, prefix)
	}
	if err != nil {
		return fail(env, op.name, err)
	}
	fmt.Fprintln(env.stdout, msg)
	return exitOK
}

// jobArg reads the one JOB or SCHEDULER/JOB argument.
func jobArg(fs *pflag.FlagSet, scheduler string) (jobTarget, error) {
	switch fs.NArg() {
	case 0:
		return jobTarget{}, errors.New("no JOB given")
	case 1:
	default:
		return jobTarget{}, fmt.Errorf("one JOB, not %d: %q", fs.NArg(), fs.Args())
	}
	t := jobTarget{scheduler: scheduler, job: fs.Arg(0)}
	if s, j, ok := strings.Cut(t.job, "/"); ok {
		if fs.Changed("scheduler") && s != scheduler {
			return t, fmt.Errorf("JOB %q names scheduler %q, --scheduler %q", t.job, s, scheduler)
		}
		t.scheduler, t.job = s, j
	}
	if err := election.CheckName("scheduler", t.scheduler); err != nil {
		return t, err
	}
	if err := election.CheckName("job", t.job); err != nil {
		return t, err
	}
	return t, nil
}

// read checks that the job was published and reads whether it is paused.
// An unknown job is an error that lists the scheduler's jobs, or the
// schedulers there are when it has none.
func (t *jobTarget) read(ctx context.Context, ctl *cronx.Control, cli *clientv3.Client, prefix string) error {
	jobs, err := ctl.Jobs(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(jobs, t.job) {
		if len(jobs) > 0 {
			return fmt.Errorf("no job %q in scheduler %q under %s; its jobs: %s", t.job, t.scheduler, prefix, strings.Join(jobs, ", "))
		}
		names, err := cronx.Schedulers(ctx, cli, prefix)
		if err != nil {
			return err
		}
		names = slices.DeleteFunc(names, func(n string) bool { return n == t.scheduler })
		return fmt.Errorf("no job %q: scheduler %q has published no jobs under %s%s", t.job, t.scheduler, prefix,
			knownList("; schedulers there: ", names))
	}
	t.pausedBy, t.paused, err = ctl.Paused(ctx, t.job)
	return err
}
