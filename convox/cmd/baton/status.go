package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/emptyetcd"
	"github.com/batonhq/baton/statuspage"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func init() {
	register(command{name: "status", summary: "show elections, locks and every job's last and next run", run: runStatus})
	register(command{name: "pause", summary: "stop a job from starting on every replica", run: runPause})
	register(command{name: "resume", summary: "let a paused job run again", run: runResume})
	register(command{name: "trigger", summary: "run a job once, now, on one replica", run: runTrigger})
}

// opTimeout bounds the reads and writes of status, pause, resume and
// trigger once etcd has answered.
const opTimeout = 10 * time.Second

// defaultScheduler is the scheduler `baton crontab` runs unless given --name.
const defaultScheduler = "crontab"

const statusSynopsis = `Usage: baton status [flags]

Shows what baton coordinates under the key prefix (--prefix): every
election and who leads it, every lock and who holds it, and for every
scheduler (or the one --scheduler names) each job's schedule, whether it
is paused (and, for a job that paused itself after its failures, why:
"yes (WHO: REASON)"), its last run, who ran it and how it ended, when its
last successful and last failed runs ended and how many runs failed in a
row since (LAST SUCCESS, LAST FAILURE, FAILURES, however long ago), where
it runs now and how many of its ticks wait for that run to end under
overlap buffer-one or buffer-all (RUNNING ON: "web-1 (2 buffered, from
TICK)"), when it runs next, and how many of its ticks no replica
ran over the last day, by reason (NOT RUN (1D): no_leader, misfire_skipped, overlap,
paused, overtaken, etcd_unavailable, etcd_refused, runner_lost, buffer_full; see cronx.Reason). A job appears once
a replica has published it: the leader does so when elected, and in claim
mode every replica. A backfill in progress (baton backfill) is a line below
the table: "backfill SCHEDULER/JOB: DONE/TICKS ticks of FROM to TO". The SPEC of a job that runs at start (@start,
at-start=yes) names the last release whose start ran it.

While no replica of a scheduler runs (every one stopped or dead), its
jobs are still listed, those of the last replica that published, with
their facts, and NEXT RUN says "not scheduled by anyone since TIME": the
last time etcd heard of a replica (its stop, or after a crash the latest
claim, run or change of the jobs). A job that a deploy dropped is not
among them; while a replica runs, it leaves the listing once the replicas
that had it are gone.

The next run is computed here from the job's spec (five fields, or six with
seconds), after its last tick or now, in this machine's time zone unless
the spec names a CRON_TZ. A leader that is down or a paused job does not
run then.

A holder that is not baton (etcdctl elect or lock, etcd's concurrency
package) is shown by the value it stored, or by its lease when it stored
none. A key under the prefix's jobs/ that no scheduler wrote (a scheduler
or job name with a space, put with etcdctl) is skipped, and named after the
tables ("ignored key ..."). The tables print control bytes read from etcd
escaped, as \x1b, so that no value acts on the terminal.

--json prints one JSON document instead of tables, with these fields
(times are RFC 3339; a field marked ? is left out when unknown):

  prefix                       the key prefix read
  elections[]                  name, leader, since?, lease (hex), fence,
                               candidates (the leader and those waiting)
  locks[]                      name, holder, lease (hex), fence, waiting
  schedulers[]                 name, leader (empty when nobody leads),
                               leader_since?, jobs[]
  schedulers[].jobs[]          name, spec, paused, paused_by?,
                               paused_reason? (why a job paused itself),
                               last_tick?, last_by?, last_run?, running[]
                               (replicas running it now), next?,
                               history[], not_run? (ticks not run over
                               the last day, by reason: {"paused": 3,
                               ...}), last_success?, last_failure?,
                               consecutive_failures, buffered[]? (the
                               ticks waiting for the run in progress, of
                               a BufferOne or BufferAll job),
                               backfills[]?, started? (the releases
                               whose start ran it, oldest first),
                               not_scheduled_since? (while no replica of
                               the scheduler runs)
  backfills[]                  from, to, ticks (0 until counted), done,
                               finished?, refused? (why), by?
  last_run, history[]          tick, instance, start, duration_seconds,
                               error? (the run failed), triggered?,
                               backfill? (a run of a backfill),
                               timed_out? (the run reached its timeout),
                               attempt? (its number, for a job with retries),
                               caught_up? (a tick missed in an outage, run
                               late within its catch-up window),
                               recovered? (the how-manieth run again of a
                               tick whose runner died)
  etcd_came_back_empty?        at, by, why: the last time a replica found
                               that etcd had lost its data, and with it ` + emptyetcd.Lost + `
  ignored_keys[]?              key, keys, why: keys under PREFIX/jobs/
                               that no scheduler wrote (a name that is
                               not valid, put with etcdctl), skipped: key
                               is the key, or the directory of the name's
                               keys when keys is more than 1

fence is the etcd create revision of the leader's or holder's key: the
fencing token its work gets.

--serve ADDR serves the same as an HTML page, read afresh at each request
and reloading itself every 5 s, for every scheduler of the prefix, from
any machine that reaches etcd (a read-only etcd user is enough): GET /
is the page, /healthz answers 200 while the process serves, /readyz 200
while etcd answers a read (503 otherwise), /metrics the process's own
metrics. It binds exactly ADDR (":8080" is every interface; give
127.0.0.1:8080 to keep it on this machine) and runs until SIGTERM or
SIGINT. A malformed ADDR exits 2; an ADDR that cannot be bound (in use,
not an address of this machine) exits 1, naming it.`

func runStatus(ctx context.Context, env *environ, args []string) int {
	fs := flagSet(env, "status", statusSynopsis)
	scheduler := fs.String("scheduler", "", "show the jobs of this scheduler only (default every scheduler)")
	asJSON := fs.Bool("json", false, "print one JSON document instead of tables")
	serve := fs.String("serve", "", "serve the status page of the whole prefix on ADDR (HOST:PORT or :PORT), with /healthz and /readyz, until SIGTERM or SIGINT")
	conn := addConnFlags(fs, false, false)
	conn.access = readOnly
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(env, fs, "unexpected argument %q", fs.Arg(0))
	}
	if fs.Changed("serve") {
		if err := checkHTTPAddr(*serve); err != nil {
			return usageError(env, fs, "--serve %v", err)
		}
		if fs.Changed("json") || fs.Changed("scheduler") {
			return usageError(env, fs, "--serve shows every scheduler as a page: it takes neither --json nor --scheduler")
		}
	}
	if fs.Changed("scheduler") {
		if err := election.CheckName("scheduler", *scheduler); err != nil {
			return usageError(env, fs, "--scheduler: %v", err)
		}
	}
	cfg, cli, err := conn.connect(ctx)
	if err != nil {
		return connectFailed(env, fs, "status", err)
	}
	defer cli.Close()
	prefix, _, err := resolveNames(cfg.ElectionOptions())
	if err != nil {
		return fail(env, "status", err)
	}
	if fs.Changed("serve") {
		return serveStatus(ctx, env, *serve, prefix, cli)
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	rep, err := statuspage.Read(ctx, cli, prefix, *scheduler, time.Now())
	if err != nil {
		return fail(env, "status", err)
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fail(env, "status", err)
		}
		return exitOK
	}
	if err := rep.WriteText(env.stdout); err != nil {
		return fail(env, "status", err)
	}
	return exitOK
}

// serveStatus serves the status page of prefix on addr until a signal
// or ctx stops it.
func serveStatus(ctx context.Context, env *environ, addr, prefix string, cli *clientv3.Client) int {
	logger := slog.New(slog.NewTextHandler(env.stderr, nil))
	srv, err := startOpsServer("--serve", addr, prefix, newRegistry(), func(context.Context) error { return nil }, logger)
	if err != nil {
		return fail(env, "status", err)
	}
	defer srv.stop()
	if err := srv.connected(cli); err != nil {
		return fail(env, "status", err)
	}
	fmt.Fprintf(env.stderr, "baton status: serving the status page of %s on http://%s/\n", prefix, srv.Addr())
	select {
	case s := <-env.signals:
		fmt.Fprintf(env.stderr, "baton status: %v; stopping\n", stopSignal{s})
	case <-ctx.Done():
	}
	return exitOK
}

// resolveNames returns the key prefix and this instance's identity, as the
// flags, the environment and election's defaults give them.
func resolveNames(opts []election.Option) (prefix, identity string, err error) {
	settings, err := election.Resolve(opts...)
	if err != nil {
		return "", "", err
	}
	return settings.Prefix, settings.Identity, nil
}

func knownList(intro string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return intro + strings.Join(names, ", ")
}
