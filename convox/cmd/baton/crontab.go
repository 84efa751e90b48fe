package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/metrics"
)

func init() {
	register(command{name: "crontab", summary: "run a crontab's commands once per tick across every replica", run: runCrontab})
}

var crontabSynopsis = `Usage: baton crontab [flags] FILE

Runs the commands of a crontab, each once per tick for the whole cluster,
however many replicas run the same crontab. Every replica registers every
job; in leader mode (the default) the elected replica runs them, and on its
loss or shutdown the next one takes over within a watch round trip (on
SIGTERM) or a TTL (on a crash). In claim mode every replica schedules and the
first to claim a tick runs it.

The flags are checked first, then the whole file is parsed, before
anything starts or etcd is asked; a bad flag or line is an error naming
it (a line by its number) and exit status 2, also with --check, which
needs no etcd. A file that cannot be read (missing, a directory) exits 1.
The format:

  # comments and blank lines are skipped
  MAILTO=ops@example.com         NAME=value: environment of later commands
  GREETING="hello world"         a value with white space is quoted
  CRON_TZ=Europe/Berlin          the time zone of later entries
  report: 0 3 * * * node report.js
  */5 * * * * ./bin/sweep --fast
  @every 30s curl -fsS http://localhost:3000/ping
  tokyo: TZ=Asia/Tokyo 0 3 * * * ./bin/tokyo    a zone for this entry alone
  migrate: @start ./bin/migrate                 once per release (below)

An entry is an optional job name ending in ':' (ASCII letters, digits, '.',
'_' and '-', starting with a letter or digit), an optional TZ=ZONE or
CRON_TZ=ZONE (the entry's time zone, as in robfig/cron; the command's own
environment is not changed), a schedule (five fields; six, seconds first,
with --seconds; or @yearly, @monthly, @weekly, @daily, @hourly, "@every
DURATION" of whole seconds, at least 1s; or @start, below), and a command run with sh -c,
verbatim. An unnamed job is named after its program and a hash of the
entry, so editing an entry makes it a new job; name jobs you pause, trigger
or watch. NAME=value followed by more words (FOO=1 * * * * * cmd) is an
error: quote the value to set it for later commands, or write the
assignment after the schedule (* * * * * FOO=1 cmd) to set it for one job.
TZ=ZONE on a line of its own sets the commands' TZ (a zone that does not
exist is an error; a POSIX rule such as EST5EDT or :/path is taken as it
is); schedules follow CRON_TZ. A byte order mark at the start of the file
is skipped. A line is at most 1 MiB, and a command or a NAME=value at most
128 KiB (131071 bytes, the kernel's limit for one argument, MAX_ARG_STRLEN),
with no NUL byte; a command, with the NAME=value lines above it and
baton's own environment, must fit what execve(2) takes in all (ARG_MAX: a
quarter of the stack limit, ulimit -s, between 128 KiB and 6 MiB, as
measured where the file is read). Anything else could never start, so it
is an error; put it in a script, or the values in a file. With --check and
no endpoints, the connection's other settings (--username, --password,
--ca, --cert, --key and their variables) are checked all the same.

In leader mode the scheduler's election is P/election/NAME (--name), the
one a ` + "`baton run --leader NAME`" + ` campaigns in: baton looks at its leader every
5 s, and logs an error naming the election while the leader is a candidate
that runs none of its jobs (a run --leader of the same name, which keeps
every replica from leading); give one of them another name.

A command that exits non-zero is logged as a warning with its job, tick
and status; one that could not be started, as an error.

Options in square brackets after the name, before any TZ= and the
schedule, set that entry's policy over the flags, as KEY=VALUE separated by
spaces or commas, each key once (options written after TZ= or after the
schedule are an error: they would be read as the schedule or the command):

  report: [timeout=10m overlap=forbid] 0 3 * * * node report.js

  overlap=allow|forbid|replace|buffer-one|buffer-all
                                 as --overlap
  timeout=DURATION               as --timeout
  attempts=N                     as --attempts
  backoff=DURATION               as --retry-backoff
  jitter=DURATION                as --jitter
  dst=robfig|once                as --dst
  pause-after=N                  pause the job, cluster-wide, once N of its
                                 runs in a row have failed; baton status
                                 shows why until baton resume
  catch-up=DURATION              run, once, the latest tick missed while etcd
                                 or every replica was down, if no older than
                                 DURATION (catch-up=0: none); without it,
                                 --misfire and --misfire-grace apply
  recover=N                      run a tick again, up to N times, when the
                                 replica running it died mid-run (killed,
                                 or cut off past --ttl) before its end was
                                 recorded: the next leader runs it, with a
                                 new BATON_FENCE and BATON_RECOVERED set;
                                 never a run that ended, failed, timed out
                                 or was stopped, nor beside another run of
                                 the job (unless overlap=allow) or after a
                                 later tick (leader mode only)
  at-start=yes|no                also run the job once per release, as @start
  start=TIME                     run no tick before TIME (RFC 3339:
                                 2026-12-24T18:00:00Z)
  end=TIME                       run no tick at or after TIME; baton status
                                 shows the job as ended
  max-runs=N                     run N ticks in all, counted in etcd across
                                 every replica and restart; baton status
                                 shows the job as done once it has
  on-failure=COMMAND             as --on-failure; on-failure="" for none
  on-success=COMMAND             as --on-success; on-success="" for none
  hook-timeout=DURATION          as --hook-timeout

A VALUE with spaces or commas is quoted: [on-failure="./bin/alert --to ops"].

An entry whose schedule is @start runs once per release of the app in the
whole cluster, and at no other time: when the first replica of a release
schedules it (the leader, or in claim mode the first replica to start),
however many replicas of the release start, and not again when one of them
restarts, nor when a replica of an older release that is still running
leads during the roll-out (the run is left to the new release's replicas).
at-start=yes does the same for an entry with a schedule, which keeps its
ticks. The release is --release, else $RELEASE, which Convox sets in every
process to the release being run; a crontab with such an entry and no
release exits 2 before anything starts, since a start could not be told
from a restart. The run is a triggered run (BATON_TICK is the time it was
asked for, and the job's overlap policy treats it as a trigger), recorded
in the history; baton status shows the releases that ran it. A release
whose replica comes back after 16 newer releases ran the job runs it again.

With --overlap replace, a tick that comes while a run of the job is in
progress on any replica stops that run (SIGTERM, then SIGKILL after
--grace, on whichever replica runs it) and starts once it has ended, or
once the lease of a replica that died running it has expired (up to
--ttl): two runs never overlap. A run still waiting to start when a later
tick comes gives way to it; a trigger waits for no run and stops none.
With --overlap buffer-one, a tick that comes while a run of the job is in
progress on any replica waits, in etcd, and runs once that run has ended
(or the lease of a replica that died running it has expired), with its own
tick as BATON_TICK; while one waits, later ticks are dropped and counted as
not run (buffer_full). --overlap buffer-all keeps up to 100 waiting, run one
after another in the order of their ticks. Either way two runs never
overlap, and a new leader runs the ticks its predecessor left waiting.
A run that reaches its timeout gets SIGTERM, then SIGKILL after --grace,
and is recorded as timed out (baton status shows it). With --jitter, each
run starts up to that long after its tick, at a delay derived from the
job's name and the tick, the same on every replica; BATON_TICK is still
the nominal tick, claimed once. A jitter (jitter= or --jitter) not shorter
than the shortest time between the job's ticks is an error: its runs would
lose ticks. With --attempts N, a command that exits non-zero (or times
out) runs again, up to N runs in all, after --retry-backoff and twice as
long before each next one: on the replica that holds the tick's claim,
under the same BATON_FENCE, with BATON_ATTEMPT counting from 1, and only
while that replica keeps its claim and, in leader mode, leads. A replica
that stops or dies between attempts does not hand them to another: the
tick runs at most once. Under --overlap forbid the next tick is skipped
while a run is being retried. With --dst once, a
job at given hours whose time the clocks skip runs at the transition, and
a time the clocks show twice runs once, at its first occurrence (as Vixie
cron does); jobs whose hour field is * run every real hour either way.

Each command gets BATON_JOB, BATON_TICK (the nominal tick, RFC 3339; a
triggered run's is the time of its trigger, to the nanosecond, so that each
has its own; a backfilled run's, the past tick it runs, with BATON_BACKFILL=1
besides: see baton backfill --help),
BATON_ATTEMPT (1, or the retry's number with --attempts),
BATON_RECOVERED (0, or how many times the tick was run again with recover=),
BATON_CAUGHT_UP=1 for the run of a tick missed while nobody ran the job,
run late (catch-up=),
BATON_ID (the replica) and BATON_FENCE (the run's fencing token: it grows
with every claim and stays valid until the run ends, also after a SIGTERM's
resignation) in its environment, and its output is printed a line at a
time with a "[JOB] " prefix; a line over 64 KiB is printed as several, each
with its prefix, so that concurrent jobs' lines never mix.

With --on-failure or --on-success (or an entry's on-failure= or
on-success=), a command runs with sh -c after each run of a job that
failed (a non-zero exit, after the last attempt, a timeout included) or
succeeded: once per run in the cluster, on the replica that ran it, beside
the job's next tick, never delaying it. It gets the run's environment
(BATON_JOB, BATON_TICK, BATON_ID, BATON_FENCE, BATON_ATTEMPT), plus
BATON_HOOK (on-failure or on-success), BATON_EXIT (the command's exit
status; empty for a run that had none, as when it could not start) and
BATON_ERROR (how the run failed, empty on success); its output has a
"[JOB on-failure] " prefix. It runs under a supervisor as a command does,
and at --hook-timeout (a minute by default) or baton's stop it gets SIGTERM
and, --grace later, SIGKILL; a hook due once baton is stopping is not
started. A hook that exits non-zero, or is stopped, is logged and counted
(baton_job_hook_failures_total with --http).

On SIGHUP baton reads FILE again and replaces every job with the file's:
a job that keeps its name and schedule keeps its claims and history and
misses no tick. A file that does not parse is reported, and the jobs stay
as they were.

On SIGTERM or SIGINT baton stops scheduling, resigns at once so another
replica takes over, sends SIGTERM to running commands, waits for them up to
--grace, kills what is left, revokes its leases and records its stop for
baton status (for up to a second more; past it the leases expire within
--ttl), and exits 0. A command that started less than a
second before gets its SIGTERM once it has run for a second, and none if it
ends sooner: a program can catch or ignore a signal only once it runs, and
one sent as it starts would kill it before it could. When leadership is lost (etcd
unreachable past the session's safe deadline), running commands get SIGTERM
and, half a second later, SIGKILL: they must not run beside the next
leader's.

` + treeHelp + `

baton may start before etcd does: until one endpoint answers it runs
nothing, logs an error naming the endpoints after each --dial-timeout, and
keeps trying; it never runs a job without etcd. An etcd that answers and
refuses baton (authentication on and no or wrong credentials, or a user
without permission on the prefix), or whose certificate baton cannot
verify, is an error at once: baton exits 1 with the cause, as waiting does
not cure it.

--http ADDR (or BATON_HTTP) serves, from the start, also while baton waits
for etcd:
  /metrics  Prometheus metrics: runs, lateness, ticks not run by reason,
            leadership and the etcd session (baton_*), and the process's
  /healthz  200 while the scheduler loop answers within 2 s, 503 otherwise;
            it does not depend on etcd, so a supervisor that restarts on
            it does not restart every replica when etcd is down
  /readyz   200 while etcd answers a read within 2 s and accepts the
            scheduler's writes, 503 with the reason otherwise
  /         the status page of the prefix: every scheduler, election and
            lock, each job's next tick, last runs and ticks not run
            (read-only, no script, reloads itself every 5 s)
baton binds exactly ADDR: ":9090" is every interface, "127.0.0.1:9090"
this machine only. A malformed ADDR exits 2; one that cannot be bound (in
use, not an address of this machine) exits 1, naming it, before any job
runs. The server stops with baton.`

func runCrontab(ctx context.Context, env *environ, args []string) int {
	fs := flagSet(env, "crontab", crontabSynopsis)
	conn := addConnFlags(fs, true, true)
	name := fs.String("name", "crontab", "scheduler name: replicas with the same name share ticks; status, pause and trigger use it")
	mode := fs.String("mode", "leader", "leader (the elected replica runs every job) or claim (every replica schedules, the first claim runs)")
	overlap := fs.String("overlap", "allow", "allow; forbid: skip a tick while a run of the same job is in progress anywhere; replace: stop that run (SIGTERM, SIGKILL after --grace) and start the tick's once it has ended; buffer-one: run the tick once that run has ended, one waiting at most; or buffer-all: up to 100 waiting")
	attempts := fs.Int("attempts", 1, "run a command that exits non-zero (or times out) again, up to this many runs in all, on the replica that holds the tick's claim")
	retryBackoff := fs.Duration("retry-backoff", 10*time.Second, "the wait before a command's second attempt, doubled before each next one")
	jitter := fs.Duration("jitter", 0, "start each run up to this long after its tick, by a hash of the job and the tick that every replica computes alike (0: at the tick)")
	dst := fs.String("dst", "robfig", "on daylight-saving nights: robfig (a skipped time does not run, a repeated one runs twice) or once (a skipped time runs at the transition, a repeated one once)")
	var hooks hookFlags
	fs.StringVar(&hooks.onFailure, "on-failure", "", "a command run with sh -c after each run that failed, once in the cluster, by the replica that ran it (an entry's on-failure= wins)")
	fs.StringVar(&hooks.onSuccess, "on-success", "", "a command run with sh -c after each run that succeeded, as --on-failure")
	fs.DurationVar(&hooks.timeout, "hook-timeout", cronx.DefaultHookTimeout, "end a hook after this long: SIGTERM, then SIGKILL after --grace")
	timeout := fs.Duration("timeout", 0, "end each run after this long: SIGTERM, then SIGKILL after --grace; recorded as timed out (0: no timeout)")
	misfire := fs.String("misfire", "run-once", "a tick missed while no replica led: run-once (within --misfire-grace) or skip")
	misfireGrace := fs.Duration("misfire-grace", cronx.DefaultMisfireGrace, "how late a missed tick may still run")
	seconds := fs.Bool("seconds", false, "schedules have six fields, seconds first")
	release := fs.String("release", os.Getenv("RELEASE"), "the release (deploy) of the app this replica runs: @start and at-start=yes entries run once per release in the cluster (default $RELEASE, which Convox sets)")
	grace := fs.Duration("grace", 25*time.Second, "on SIGTERM, how long running commands get to finish (Convox allows 30s)")
	shell := fs.String("shell", "/bin/sh", "the shell that runs each command with -c")
	check := fs.Bool("check", false, "parse the crontab, print its jobs and exit")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	httpAddr := httpFlag(fs)
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(env, fs, "want one crontab FILE, got %d arguments", fs.NArg())
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError(env, fs, "--log-level %q: want debug, info, warn or error", *logLevel)
	}
	cmode, ok := oneOf(*mode, "leader", cronx.LeaderMode, "claim", cronx.ClaimMode)
	if !ok {
		return usageError(env, fs, "--mode %q: want leader or claim", *mode)
	}
	over, err := parseOverlap(*overlap)
	if err != nil {
		return usageError(env, fs, "--overlap %v", err)
	}
	policy, ok := oneOf(*misfire, "run-once", cronx.RunOnce, "skip", cronx.Skip)
	if !ok {
		return usageError(env, fs, "--misfire %q: want run-once or skip", *misfire)
	}
	dstRule, err := parseDST(*dst)
	if err != nil {
		return usageError(env, fs, "--dst %v", err)
	}
	if *grace < 0 || *misfireGrace < 0 || *timeout < 0 || *jitter < 0 || *retryBackoff < 0 {
		return usageError(env, fs, "--grace, --misfire-grace, --timeout, --jitter and --retry-backoff must not be negative")
	}
	if *attempts < 1 {
		return usageError(env, fs, "--attempts %d: want 1 or more", *attempts)
	}
	if err := hooks.check(); err != nil {
		return usageError(env, fs, "%v", err)
	}

	// Every flag is checked before the file is read, also for --check;
	// etcd's endpoints, which --check does not need, after it.
	if err := election.CheckName("scheduler", *name); err != nil {
		return usageError(env, fs, "--name: %v", err)
	}
	cfg, cfgErr := conn.config()
	switch {
	case cfgErr == nil, errors.Is(cfgErr, errNoEndpoints): // --check needs none
	case isUsage(cfgErr):
		return usageError(env, fs, "%v", cfgErr)
	default:
		return fail(env, "crontab", cfgErr) // a TLS file that cannot be read
	}
	eopts, err := conn.electionOptions(cfg)
	if err != nil {
		return usageError(env, fs, "%v", err)
	}
	addr := httpAddr()
	if addr != "" {
		if err := checkHTTPAddr(addr); err != nil {
			return usageError(env, fs, "%s %v", httpSource(fs), err)
		}
	}
	prefix, _, err := resolveNames(eopts)
	if err != nil {
		return usageError(env, fs, "%v", err)
	}

	file := fs.Arg(0)
	entries, err := readCrontab(file, *seconds, *jitter)
	if err != nil {
		fmt.Fprintf(env.stderr, "%v\nbaton crontab: nothing started\n", err)
		if errors.Is(err, errUnreadable) {
			return exitFailure
		}
		return exitUsage
	}
	if *release == "" && !*check {
		if e, ok := firstAtStart(entries); ok {
			fmt.Fprintf(env.stderr, "%s:%d: job %s runs at start, and no release tells a start from a restart: give --release or set RELEASE\nbaton crontab: nothing started\n", file, e.line, e.name)
			return exitUsage
		}
	}
	if *check {
		for _, e := range entries {
			command := e.command
			if e.options != "" {
				command = e.options + "\t" + command
			}
			fmt.Fprintf(env.stdout, "%s:%d\t%s\t%s\t%s\n", file, e.line, e.name, e.spec, command)
		}
		return exitOK
	}
	if cfgErr != nil {
		fmt.Fprintf(env.stderr, "baton crontab: %v\n", cfgErr)
		return exitUsage
	}
	// Through the lock of the commands' lines: with stdout and stderr one
	// pipe (2>&1), a log line would otherwise land inside a long one.
	logger := slog.New(slog.NewTextHandler(lockedWriter{env.stderr}, &slog.HandlerOptions{Level: level}))
	// The server comes up before etcd is reached: a process waiting for
	// etcd is alive, and says on /readyz that it is not ready.
	var scheduler atomic.Pointer[cronx.Cron]
	reg := newRegistry()
	var srv *opsServer
	if addr != "" {
		srv, err = startOpsServer(httpSource(fs), addr, prefix, reg, func(ctx context.Context) error {
			if c := scheduler.Load(); c != nil {
				return c.Alive(ctx)
			}
			return nil
		}, logger)
		if err != nil {
			return fail(env, "crontab", err)
		}
		defer srv.stop()
	}
	asked, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	// SIGHUP asks for a reload, taken once the jobs are scheduled; any
	// other signal asks baton to stop.
	hup := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case s := <-env.signals:
				if s == syscall.SIGHUP {
					select {
					case hup <- struct{}{}:
					default: // a reload is pending already
					}
					continue
				}
				stop(stopSignal{s})
				return
			case <-asked.Done():
				return
			}
		}
	}()
	// baton may well start before etcd does: it then waits for it, running
	// nothing, and says so every --dial-timeout.
	cli, err := waitForEtcd(asked, cfg, conn.dialTimeout, logger)
	if err != nil {
		if asked.Err() != nil {
			logger.Info("baton crontab: stopped while waiting for etcd", "cause", context.Cause(asked))
			return exitOK
		}
		return fail(env, "crontab", err)
	}
	defer cli.Close()
	if srv != nil {
		if err := srv.connected(cli); err != nil {
			return fail(env, "crontab", err)
		}
		defer srv.stop() // before the client closes
	}

	opts := []cronx.Option{
		cronx.WithParser(cronParser(*seconds)),
		cronx.WithEtcd(cli),
		cronx.WithName(*name),
		cronx.WithMode(cmode),
		cronx.WithMisfire(policy, *misfireGrace),
		cronx.WithElection(eopts...),
		cronx.WithSlog(logger),
		cronx.WithRelease(*release),
		cronx.WithJobOptions(cronx.WithOverlap(over), cronx.WithTimeout(*timeout), cronx.WithJitter(*jitter),
			cronx.WithDST(dstRule)),
	}
	if srv != nil {
		// Metrics only when something serves them: an observer is work.
		obs, err := metrics.New(reg)
		if err != nil {
			return fail(env, "crontab", err)
		}
		opts = append(opts, cronx.WithObserver(obs))
	}
	c := cronx.New(opts...)
	var stopping atomic.Bool
	baseEnv := commandEnv(cfg)
	add := func(entries []crontabEntry) ([]cronx.EntryID, error) {
		var ids []cronx.EntryID
		for _, e := range entries {
			job := crontabJob{entry: e, shell: *shell, env: env, grace: *grace, stopping: &stopping, logger: logger, baseEnv: baseEnv}
			opts := append([]cronx.JobOption{e.retry.retries(*attempts, *retryBackoff)}, e.opts...)
			opts = append(opts, job.hookOptions(hooks)...)
			id, err := c.AddJob(e.spec, cronx.Named(e.name, job, opts...))
			if err != nil {
				return ids, fmt.Errorf("%s:%d: %w", file, e.line, err)
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	ids, err := add(entries)
	if err != nil {
		fmt.Fprintf(env.stderr, "baton crontab: %v\n", err)
		return exitUsage
	}
	logger.Info("baton crontab: started", "file", file, "jobs", len(entries), "scheduler", *name, "mode", *mode,
		"endpoints", redactedEndpoints(cfg.Connection.Endpoints))
	c.Start()
	scheduler.Store(c)
	if cmode == cronx.LeaderMode {
		go watchElectionSharing(asked, cli, prefix, *name, logger)
	}

	for asked.Err() == nil {
		select {
		case <-hup:
			ids = reloadCrontab(c, file, *seconds, *jitter, ids, add, logger)
		case <-asked.Done():
		}
	}
	logger.Info("baton crontab: stopping: resigning and letting running commands finish", "cause", context.Cause(asked), "grace", grace.String())
	stopping.Store(true)
	// Shut down with no grace of cronx's own: every running command gets
	// SIGTERM at once, and --grace to finish (crontabJob).
	now, cancel := context.WithCancel(context.Background())
	cancel()
	shut := make(chan error, 1)
	go func() { shut <- c.Shutdown(now) }()
	t := time.NewTimer(*grace + time.Second) // the jobs kill their commands at grace
	defer t.Stop()
	select {
	case <-shut:
		// Shutdown, given no time, does not wait for the sessions' close:
		// a second up to revoke the leases, so that the registrations go at
		// once and the stop is recorded for baton status.
		select {
		case <-c.Stop().Done():
		case <-time.After(exitCloseWait):
		}
	case <-t.C:
		logger.Warn("baton crontab: commands still running after the grace period")
	}
	return exitOK
}

// exitCloseWait bounds the wait, at exit, for the sessions' close: past it
// their leases expire by themselves within the TTL.
const exitCloseWait = time.Second

// reloadCrontab replaces the jobs ids with those of file, and returns the
// new ids; a file that does not parse leaves the jobs as they were.
func reloadCrontab(c *cronx.Cron, file string, seconds bool, jitter time.Duration, ids []cronx.EntryID,
	add func([]crontabEntry) ([]cronx.EntryID, error), logger *slog.Logger) []cronx.EntryID {
	entries, err := readCrontab(file, seconds, jitter)
	if err != nil {
		logger.Error("baton crontab: reload: the jobs stay as they were", "err", err)
		return ids
	}
	for _, id := range ids {
		c.Remove(id)
	}
	ids, err = add(entries)
	if err != nil {
		logger.Error("baton crontab: reload", "err", err)
	}
	logger.Info("baton crontab: reloaded", "file", file, "jobs", len(ids))
	return ids
}

func cronParser(seconds bool) crontabParser {
	fields := cronx.Minute | cronx.Hour | cronx.Dom | cronx.Month | cronx.Dow | cronx.Descriptor
	if seconds {
		fields |= cronx.Second
	}
	return crontabParser{cronx.NewParser(fields)}
}

// oneOf maps a flag's value to the setting named by it, of two.
func oneOf[T any](value, name1 string, v1 T, name2 string, v2 T) (T, bool) {
	switch value {
	case name1:
		return v1, true
	case name2:
		return v2, true
	}
	var zero T
	return zero, false
}
