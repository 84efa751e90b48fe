package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/metrics"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func init() {
	register(command{name: "run", summary: "run a command while leader, under a lock, or once per key", run: runRun})
}

var runSynopsis = `Usage:
  baton run --leader NAME [flags] -- COMMAND [ARGS...]
  baton run --lock NAME [flags] -- COMMAND [ARGS...]
  baton run --once KEY --ttl DURATION [flags] -- COMMAND [ARGS...]

--leader NAME campaigns in the election NAME and runs COMMAND while this
process leads: a singleton worker that hands over on deploy. A scheduler
(baton crontab --name, an app's cronx) campaigns in the election of its
name too, so --leader NAME where a scheduler NAME has jobs exits 121 at
once, naming it: give --leader another name. --lock NAME
waits for the lock NAME and runs COMMAND holding it. --once KEY runs COMMAND
only if no run of KEY succeeded within --ttl and none runs now: a Convox
timer or a retrying scheduler then runs the work once however often it
fires.

COMMAND runs directly (not through a shell), with BATON_ID and BATON_FENCE
(a fencing token that grows with every term, hold and claim) in its
environment, and stdin, stdout and stderr passed through. baton exits with
its status. When stdin is a terminal and baton its foreground job, COMMAND
is the terminal's foreground process group while it runs, as a shell's job
is: it reads the terminal and changes its settings (stty) without stopping,
and the terminal's Ctrl-C and Ctrl-\ reach COMMAND's group, not baton;
Ctrl-Z does not suspend it (suspended, it would hold what baton holds for
it); baton takes the terminal back when COMMAND exits.

If leadership, the lock or the claim is lost (its session expires, or its
key in etcd is deleted or replaced), baton sends COMMAND's processes
SIGTERM and, after half a second, SIGKILL, and exits 123; it then looks at
etcd for up to 3 s, and if etcd came back empty (restarted without its data)
says so, with what was lost with it. On SIGTERM or SIGINT baton passes that
signal to COMMAND's processes; SIGHUP is handled as SIGTERM (they get
SIGTERM). baton then waits up to --grace for them, kills what is still
running, and resigns or unlocks.

` + treeHelp + `

With --leader and --lock, --ttl is the session TTL: how long a crashed baton
keeps leadership or the lock. With --once it is how long a success of KEY
stands. While COMMAND runs, the claim of KEY is held by a session of its
own, with the TTL of $BATON_TTL (else 10 s): callers that come while it runs
do not run, however long it runs, and a baton killed mid-run frees KEY
within that TTL. Only a success (status 0) is recorded for --ttl; a failed,
stopped or killed COMMAND gives KEY back, so the next caller runs it again.

etcd must answer within --dial-timeout, on any one of the endpoints, and
let the user (--username, $BATON_ETCD_USERNAME) read and write under the
prefix; otherwise baton exits 121 at once with the cause. A bad --leader or
--lock NAME, or --once KEY, exits 122 before etcd is asked.

--http ADDR (or BATON_HTTP) serves /metrics (the process's metrics, and
baton's: baton_scheduler_leader and the leadership changes for --leader
NAME, baton_job_runs_total and the run duration for COMMAND's run, under
the name of the election, the lock or the --once KEY), /healthz
(200 while baton's loop that waits for COMMAND answers within 2 s, and
while baton waits to lead, to lock or to claim; 503 otherwise), /readyz
(200 while etcd answers a read within 2 s) and / (the status page of the
prefix). baton binds exactly ADDR (":9090" is every interface); a
malformed ADDR exits 122, one that cannot be bound (in use, not an address
of this machine) exits 121, naming it, before COMMAND starts. The server
stops with baton.`

func runRun(ctx context.Context, env *environ, args []string) int {
	fs := flagSet(env, "run", runSynopsis)
	conn := addConnFlags(fs, true, true)
	leader := fs.String("leader", "", "run COMMAND while this process leads the election NAME")
	lock := fs.String("lock", "", "run COMMAND holding the lock NAME")
	once := fs.String("once", "", "run COMMAND only if no run of KEY succeeded within --ttl and none runs (KEY: no '/' or white space)")
	grace := fs.Duration("grace", 25*time.Second, "on SIGTERM, SIGINT or SIGHUP, how long COMMAND gets to exit before SIGKILL")
	httpAddr := httpFlag(fs)
	if code, done := parse(env, fs, args); done {
		if code == exitUsage {
			return runUsage
		}
		return code
	}
	usage := func(format string, a ...any) int {
		usageError(env, fs, format, a...)
		return runUsage
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return usage("no COMMAND: give it after --")
	}
	modes := 0
	for _, s := range []string{*leader, *lock, *once} {
		if s != "" {
			modes++
		}
	}
	if modes != 1 {
		return usage("give exactly one of --leader, --lock and --once")
	}
	for _, n := range []struct{ flag, what, name string }{{"leader", "election", *leader}, {"lock", "lock", *lock}} {
		if n.name == "" {
			continue
		}
		if err := election.CheckName(n.what, n.name); err != nil {
			return usage("--%s: %v", n.flag, err)
		}
	}
	var window time.Duration
	if *once != "" {
		if !fs.Changed("ttl") {
			return usage("--once needs --ttl: how long a success of %q stands", *once)
		}
		d, err := election.ParseTTL(conn.ttl)
		if err != nil {
			return usage("--ttl: %v", err)
		}
		if err := election.CheckOnceKey(*once); err != nil {
			return usage("--once: %v", err)
		}
		window = d
	}
	if *grace < 0 {
		return usage("--grace must not be negative")
	}
	cfg, err := conn.config()
	if err != nil && !isUsage(err) {
		fmt.Fprintf(env.stderr, "baton run: %v\n", err) // a TLS file that cannot be read
		return runFailure
	} else if err != nil {
		return usage("%v", err)
	}
	var eopts []election.Option
	if *once == "" {
		if eopts, err = conn.electionOptions(cfg); err != nil {
			return usage("%v", err)
		}
	} else {
		eopts = cfg.ElectionOptions()
		if v := os.Getenv("BATON_TTL"); v != "" {
			if _, err := election.ParseTTL(v); err != nil {
				return usage("BATON_TTL: %v", err)
			}
		}
	}
	prefix, _, err := resolveNames(eopts)
	if err != nil {
		return usage("%v", err)
	}
	addr := httpAddr()
	var loop *waitLoop
	var srv *opsServer
	var obs *cronx.Observer
	if addr != "" {
		if err := checkHTTPAddr(addr); err != nil {
			return usage("%s %v", httpSource(fs), err)
		}
		loop = &waitLoop{}
		reg := newRegistry()
		o, err := metrics.New(reg)
		if err != nil {
			fmt.Fprintf(env.stderr, "baton run: %v\n", err)
			return runFailure
		}
		obs = &o
		srv, err = startOpsServer(httpSource(fs), addr, prefix, reg, loop.alive, slog.New(slog.NewTextHandler(env.stderr, nil)))
		if err != nil {
			fmt.Fprintf(env.stderr, "baton run: %v\n", err)
			return runFailure
		}
		defer srv.stop()
	}
	cli, err := dial(ctx, cfg, conn.dialTimeout, readWrite)
	if err != nil {
		fmt.Fprintf(env.stderr, "baton run: %v\n", err)
		return runFailure
	}
	defer cli.Close()
	if srv != nil {
		if err := srv.connected(cli); err != nil {
			fmt.Fprintf(env.stderr, "baton run: %v\n", err)
			return runFailure
		}
		defer srv.stop() // before the client closes
	}

	stopping, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	go func() {
		select {
		case s := <-env.signals:
			stop(stopSignal{s})
		case <-stopping.Done():
		}
	}()
	identity := cfg.Identity
	if identity == "" {
		identity = election.DefaultIdentity()
	}
	r := runner{env: env, argv: argv, grace: *grace, identity: identity, stopping: stopping, loop: loop,
		empty: lookAtEtcd(ctx, cli, prefix, identity), baseEnv: commandEnv(cfg)}
	if obs != nil {
		r.metrics = &runMetrics{obs: *obs, name: *leader + *lock + *once, identity: identity}
	}
	switch {
	case *leader != "":
		if err := leaderNameTaken(ctx, cli, prefix, *leader); err != nil {
			return r.fail(err)
		}
		return r.leader(ctx, cli, *leader, eopts)
	case *lock != "":
		return r.lock(ctx, cli, *lock, eopts)
	default:
		return r.once(ctx, cli, *once, window, eopts)
	}
}

func signalName(s syscall.Signal) string {
	if s == syscall.SIGINT {
		return "SIGINT"
	}
	return "SIGTERM"
}

// forwarded is the signal COMMAND gets when baton is asked to stop: SIGINT
// stays SIGINT, SIGTERM and SIGHUP become SIGTERM.
func forwarded(stopping context.Context) syscall.Signal {
	var s stopSignal
	if errors.As(context.Cause(stopping), &s) && s.Signal == syscall.SIGINT {
		return syscall.SIGINT
	}
	return syscall.SIGTERM
}

// runner runs COMMAND for one of the three modes.
type runner struct {
	env      *environ
	argv     []string
	grace    time.Duration
	identity string
	// stopping is done once baton is asked to stop; its cause is the
	// stopSignal.
	stopping context.Context
	// loop answers /healthz while COMMAND runs; nil without --http.
	loop *waitLoop
	// metrics counts terms and runs for /metrics; nil without --http.
	metrics *runMetrics
	// empty says when a loss came with etcd's data lost.
	empty *emptyLook
	// baseEnv is the environment COMMAND starts from (commandEnv).
	baseEnv []string
}

// outcome is how a command's run ended.
type outcome int

const (
	exited   outcome = iota // the command exited by itself
	lost                    // the fence was lost; the command was stopped
	signaled                // baton was asked to stop; so was the command
)

// exec runs COMMAND with fence until it exits, fenced ends or baton is
// asked to stop, and returns its exit status.
func (r runner) exec(fenced context.Context, fence election.Fence) (code int, how outcome) {
	env := append(slices.Clip(r.baseEnv), "BATON_ID="+r.identity, "BATON_FENCE="+strconv.FormatInt(fence.Revision, 10))
	p, err := startProc(r.argv, env, os.Stdin, r.env.stdout, r.env.stderr, "")
	if err != nil {
		fmt.Fprintf(r.env.stderr, "baton run: %v\n", err)
		return runFailure, exited
	}
	ping, done := r.loop.serve()
	defer done()
	started := r.metrics.started(fence)
	defer func() { r.metrics.ended(started, code, how, causeOf(fenced, r.stopping, how)) }()
	for {
		select {
		case <-p.done:
			if p.killed != 0 {
				fmt.Fprintf(r.env.stderr, "baton run: the supervisor of %s was killed by signal %d; %s and every process it started were killed with it\n", r.argv[0], int(p.killed), r.argv[0])
			}
			return p.code, exited
		case <-fenced.Done():
			fmt.Fprintf(r.env.stderr, "baton run: %v; stopping %s\n", context.Cause(fenced), r.argv[0])
			p.stop(lostGrace)
			r.empty.afterLoss(r.env.stderr)
			return p.code, lost
		case <-r.stopping.Done():
			sig := forwarded(r.stopping)
			fmt.Fprintf(r.env.stderr, "baton run: %v: passing %v to %s, waiting up to %v\n", context.Cause(r.stopping), signalName(sig), r.argv[0], r.grace)
			p.stopWith(sig, r.grace)
			return p.code, signaled
		case reply := <-ping:
			reply <- struct{}{}
		}
	}
}

func (r runner) leader(ctx context.Context, cli *clientv3.Client, name string, opts []election.Option) int {
	e, err := election.New(cli, name, opts...)
	if err != nil {
		return r.fail(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		started bool
		code    = runFailure
		how     outcome
	)
	// Asked to stop before the term began: stop campaigning. Once the
	// command runs, exec stops it and the term ends after it.
	stop := context.AfterFunc(r.stopping, func() {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			cancel()
		}
	})
	defer stop()
	err = e.Run(ctx, func(tctx context.Context, term election.Term) {
		mu.Lock()
		if started || r.stopping.Err() != nil {
			mu.Unlock()
			return
		}
		started = true
		mu.Unlock()
		fmt.Fprintf(r.env.stderr, "baton run: %s leads %q (fence %d); starting %s\n", term.Identity, name, term.Revision, r.argv[0])
		r.metrics.gained(term)
		code, how = r.exec(tctx, term.Fence)
		r.metrics.lost(term, context.Cause(tctx))
		cancel() // one term only: resign and exit after it
	})
	mu.Lock()
	defer mu.Unlock()
	switch {
	case !started && r.stopping.Err() != nil:
		fmt.Fprintf(r.env.stderr, "baton run: asked to stop while waiting to lead %q; exiting\n", name)
		return exitOK
	case !started:
		return r.fail(err)
	case how == lost:
		return runLost
	}
	return code
}

func (r runner) lock(ctx context.Context, cli *clientv3.Client, name string, opts []election.Option) int {
	m, err := election.NewMutex(cli, name, opts...)
	if err != nil {
		return r.fail(err)
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(r.stopping, cancel)
	err = m.Lock(lctx)
	stop()
	if r.stopping.Err() != nil {
		if err == nil {
			r.unlock(m) // locked just as the signal came
		}
		fmt.Fprintf(r.env.stderr, "baton run: asked to stop while waiting for the lock %q; exiting\n", name)
		return exitOK
	}
	if err != nil {
		return r.fail(err)
	}
	fence := m.Fence()
	fmt.Fprintf(r.env.stderr, "baton run: holding the lock %q (fence %d); starting %s\n", name, fence.Revision, r.argv[0])
	code, how := r.exec(m.Context(), fence)
	r.unlock(m)
	if how == lost {
		return runLost
	}
	return code
}

func (r runner) unlock(m *election.Mutex) {
	uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Unlock(uctx); err != nil && !errors.Is(err, election.ErrNotLocked) && !errors.Is(err, election.ErrSessionExpired) {
		fmt.Fprintf(r.env.stderr, "baton run: unlock: %v (the lock expires with its session)\n", err)
	}
}

// fail reports an error of baton itself and returns its status.
func (r runner) fail(err error) int {
	fmt.Fprintf(r.env.stderr, "baton run: %v\n", err)
	return runFailure
}
