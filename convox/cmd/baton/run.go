package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/batonhq/baton/election"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func init() {
	register(command{name: "run", summary: "run a command while leader, under a lock, or once per key", run: runRun})
}

const runSynopsis = `Usage:
  baton run --leader NAME [flags] -- COMMAND [ARGS...]
  baton run --lock NAME [flags] -- COMMAND [ARGS...]
  baton run --once KEY --ttl DURATION [flags] -- COMMAND [ARGS...]

--leader NAME campaigns in the election NAME and runs COMMAND while this
process leads: a singleton worker that hands over on deploy. --lock NAME
waits for the lock NAME and runs COMMAND holding it. --once KEY runs COMMAND
only if no caller claimed KEY within --ttl: a Convox timer or a retrying
scheduler then runs the work once however often it fires.

COMMAND runs directly (not through a shell), with BATON_ID and BATON_FENCE
(a fencing token that grows with every term, hold and claim) in its
environment, and stdin, stdout and stderr passed through. baton exits with
its status. If leadership or the lock is lost, baton sends COMMAND SIGTERM
and, after half a second, SIGKILL, and exits 3. On SIGTERM or SIGINT baton
forwards the signal, waits up to --grace for COMMAND, then resigns or
unlocks. COMMAND never outlives baton, even if baton is killed.

With --leader and --lock, --ttl is the session TTL in seconds; with --once
it is how long a claim of KEY stands once COMMAND succeeded. A failed
COMMAND (a non-zero status) gives the key back, so a retry runs it again;
callers that come while it runs do not run.`

func runRun(ctx context.Context, env *environ, args []string) int {
	fs := flagSet(env, "run", runSynopsis)
	conn := addConnFlags(fs, true, true)
	leader := fs.String("leader", "", "run COMMAND while this process leads the election NAME")
	lock := fs.String("lock", "", "run COMMAND holding the lock NAME")
	once := fs.String("once", "", "run COMMAND only if KEY was not claimed within --ttl")
	grace := fs.Duration("grace", 25*time.Second, "on SIGTERM, how long COMMAND gets to exit before SIGKILL")
	if code, done := parse(env, fs, args); done {
		return code
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return usageError(env, fs, "no COMMAND: give it after --")
	}
	modes := 0
	for _, s := range []string{*leader, *lock, *once} {
		if s != "" {
			modes++
		}
	}
	if modes != 1 {
		return usageError(env, fs, "give exactly one of --leader, --lock and --once")
	}
	var window time.Duration
	if *once != "" {
		if !fs.Changed("ttl") {
			return usageError(env, fs, "--once needs --ttl: how long a claim of %q stands", *once)
		}
		d, err := time.ParseDuration(conn.ttl)
		if n, aerr := strconv.Atoi(conn.ttl); aerr == nil {
			d, err = time.Duration(n)*time.Second, nil
		}
		if err != nil || d < time.Second {
			return usageError(env, fs, "--ttl %q: want a duration of at least 1s", conn.ttl)
		}
		window = d
	}
	if *grace < 0 {
		return usageError(env, fs, "--grace must not be negative")
	}
	cfg, cli, err := conn.connect(ctx)
	if err != nil {
		if cli == nil && !cfg.Configured() {
			fmt.Fprintf(env.stderr, "baton run: %v\n", err)
			return exitUsage
		}
		return fail(env, "run", err)
	}
	defer cli.Close()
	var eopts []election.Option
	if *once == "" {
		if eopts, err = conn.electionOptions(cfg); err != nil {
			return usageError(env, fs, "%v", err)
		}
	} else {
		eopts = cfg.ElectionOptions()
	}

	stopping, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		select {
		case <-env.signals:
			stop()
		case <-stopping.Done():
		}
	}()
	identity := cfg.Identity
	if identity == "" {
		identity = defaultIdentity()
	}
	r := runner{env: env, argv: argv, grace: *grace, identity: identity, stopping: stopping}
	switch {
	case *leader != "":
		return r.leader(ctx, cli, *leader, eopts)
	case *lock != "":
		return r.lock(ctx, cli, *lock, eopts)
	default:
		return r.once(ctx, cli, *once, window, cfg.Prefix)
	}
}

// runner runs COMMAND for one of the three modes.
type runner struct {
	env      *environ
	argv     []string
	grace    time.Duration
	identity string
	// stopping is done once baton is asked to stop (SIGTERM, SIGINT).
	stopping context.Context
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
func (r runner) exec(fenced context.Context, fence election.Fence) (int, outcome) {
	env := append(os.Environ(), "BATON_ID="+r.identity, "BATON_FENCE="+strconv.FormatInt(fence.Revision, 10))
	p, err := startProc(r.argv, env, os.Stdin, r.env.stdout, r.env.stderr, "")
	if err != nil {
		fmt.Fprintf(r.env.stderr, "baton run: %v\n", err)
		return exitFailure, exited
	}
	select {
	case <-p.done:
		return p.code, exited
	case <-fenced.Done():
		fmt.Fprintf(r.env.stderr, "baton run: %v; stopping %s\n", context.Cause(fenced), r.argv[0])
		p.stop(lostGrace)
		return p.code, lost
	case <-r.stopping.Done():
		fmt.Fprintf(r.env.stderr, "baton run: stopping: passing SIGTERM to %s, waiting up to %v\n", r.argv[0], r.grace)
		p.stop(r.grace)
		return p.code, signaled
	}
}

func (r runner) leader(ctx context.Context, cli *clientv3.Client, name string, opts []election.Option) int {
	e, err := election.New(cli, name, opts...)
	if err != nil {
		return fail(r.env, "run", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		started bool
		code    = exitFailure
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
		code, how = r.exec(tctx, term.Fence)
		cancel() // one term only: resign and exit after it
	})
	mu.Lock()
	defer mu.Unlock()
	switch {
	case !started && r.stopping.Err() != nil:
		fmt.Fprintf(r.env.stderr, "baton run: asked to stop while waiting to lead %q; exiting\n", name)
		return exitOK
	case !started:
		return fail(r.env, "run", err)
	case how == lost:
		return exitLost
	}
	return code
}

func (r runner) lock(ctx context.Context, cli *clientv3.Client, name string, opts []election.Option) int {
	m, err := election.NewMutex(cli, name, opts...)
	if err != nil {
		return fail(r.env, "run", err)
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
		return fail(r.env, "run", err)
	}
	fence := m.Fence()
	fmt.Fprintf(r.env.stderr, "baton run: holding the lock %q (fence %d); starting %s\n", name, fence.Revision, r.argv[0])
	code, how := r.exec(m.Context(), fence)
	r.unlock(m)
	if how == lost {
		return exitLost
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

// onceRecord is the value of a --once claim.
type onceRecord struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// once claims P/once/KEY for window, with a lease so the claim lapses by
// itself, and runs the command if the claim was ours.
func (r runner) once(ctx context.Context, cli *clientv3.Client, key string, window time.Duration, prefix string) int {
	if prefix == "" {
		prefix = os.Getenv("BATON_PREFIX")
	}
	if prefix == "" {
		prefix = election.DefaultPrefix
	}
	k := prefix + "/once/" + key
	ttl := int64((window + time.Second - 1) / time.Second)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lease, err := cli.Grant(cctx, ttl)
	if err != nil {
		return fail(r.env, "run", fmt.Errorf("claim %q: %w", key, err))
	}
	val, _ := json.Marshal(onceRecord{By: r.identity, At: time.Now().UTC()})
	resp, err := cli.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(val), clientv3.WithLease(lease.ID))).
		Else(clientv3.OpGet(k)).
		Commit()
	if err != nil {
		return fail(r.env, "run", fmt.Errorf("claim %q: %w", key, err))
	}
	if !resp.Succeeded { // mutation:once-claim
		_, _ = cli.Revoke(cctx, lease.ID)
		var prev onceRecord
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			_ = json.Unmarshal(kvs[0].Value, &prev)
		}
		fmt.Fprintf(r.env.stderr, "baton run: %q was claimed by %s at %s, within %v; not running\n",
			key, prev.By, prev.At.Format(time.RFC3339), window)
		return exitOK
	}
	fmt.Fprintf(r.env.stderr, "baton run: claimed %q for %v (fence %d); starting %s\n", key, window, resp.Header.Revision, r.argv[0])
	code, _ := r.exec(context.Background(), election.Fence{Key: k, Revision: resp.Header.Revision})
	if code != 0 {
		// A failed run leaves the key free, so a retry runs the work.
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := cli.Txn(dctx).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", resp.Header.Revision)).
			Then(clientv3.OpDelete(k)).Commit()
		if err != nil {
			fmt.Fprintf(r.env.stderr, "baton run: %s failed and %q could not be released: %v\n", r.argv[0], key, err)
		}
		_, _ = cli.Revoke(dctx, lease.ID)
	}
	return code
}

// defaultIdentity is election's default: $HOSTNAME (the process id under
// Convox and Kubernetes) and the pid.
func defaultIdentity() string {
	h := os.Getenv("HOSTNAME")
	if h == "" {
		h, _ = os.Hostname()
	}
	return fmt.Sprintf("%s/%d", h, os.Getpid())
}
