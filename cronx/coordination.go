package cronx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/election"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Mode says how the replicas of a coordinated Cron share its ticks.
type Mode int

const (
	// LeaderMode elects one replica, which schedules every job; the others
	// wait, costing etcd one watch and their lease keepalives.
	LeaderMode Mode = iota
	// ClaimMode lets every replica schedule; the first valid claim of a tick
	// runs it. There is no failover gap and runs spread over replicas, for
	// one transaction per replica per tick.
	ClaimMode
)

func (m Mode) String() string {
	if m == ClaimMode {
		return "claim"
	}
	return "leader"
}

// Misfire says what a coordinated Cron does with a tick that no replica
// could run on time: one that fell while leadership passed from a crashed
// replica to the next, or while etcd could not be reached.
type Misfire int

const (
	// RunOnce runs the latest missed tick of each job once, if it is no
	// older than the grace period.
	RunOnce Misfire = iota
	// Skip runs no missed tick.
	Skip
)

// DefaultMisfireGrace is how late a missed tick may still run under RunOnce.
const DefaultMisfireGrace = time.Minute

// coordConfig collects the coordination options given to New.
type coordConfig struct {
	client  *clientv3.Client
	elector *election.Elector
	name    string
	mode    Mode
	modeSet bool
	misfire Misfire
	grace   time.Duration
	eopts   []election.Option
	errs    []error
}

func (c *Cron) coordConfig() *coordConfig {
	if c.coordCfg == nil {
		c.coordCfg = &coordConfig{grace: DefaultMisfireGrace}
	}
	return c.coordCfg
}

// WithEtcd coordinates the Cron with the other replicas through client.
// The Cron does not close the client.
func WithEtcd(client *clientv3.Client) Option {
	return func(c *Cron) {
		cfg := c.coordConfig()
		if client == nil {
			cfg.errs = append(cfg.errs, errors.New("cronx: WithEtcd: nil etcd client"))
		}
		cfg.client = client
	}
}

// WithElector coordinates the Cron in leader mode with e: the Cron schedules
// while e leads. The scheduler is named after e's election unless WithName
// says otherwise.
func WithElector(e *election.Elector) Option {
	return func(c *Cron) {
		cfg := c.coordConfig()
		if e == nil {
			cfg.errs = append(cfg.errs, errors.New("cronx: WithElector: nil elector"))
		}
		cfg.elector = e
	}
}

// WithName names the scheduler, the same in every replica. Its jobs' keys
// live under P/jobs/<name> and, in leader mode, its election is
// P/election/<name>. Without it, the first Cron a process creates is named
// "cron", the second "cron-2", and so on, which is the same in every
// replica of one build that creates its Crons in a fixed order.
func WithName(name string) Option {
	return func(c *Cron) { c.coordConfig().name = name }
}

// WithMode chooses LeaderMode (the default) or ClaimMode.
func WithMode(m Mode) Option {
	return func(c *Cron) {
		cfg := c.coordConfig()
		if m != LeaderMode && m != ClaimMode {
			cfg.errs = append(cfg.errs, fmt.Errorf("cronx: WithMode(%d): not a mode", int(m)))
		}
		cfg.mode, cfg.modeSet = m, true
	}
}

// WithMisfire sets the misfire policy and, for RunOnce, how late a missed
// tick may still run. The default is RunOnce within DefaultMisfireGrace.
func WithMisfire(p Misfire, grace time.Duration) Option {
	return func(c *Cron) {
		cfg := c.coordConfig()
		if p != RunOnce && p != Skip {
			cfg.errs = append(cfg.errs, fmt.Errorf("cronx: WithMisfire(%d): not a policy", int(p)))
		}
		if grace < 0 {
			cfg.errs = append(cfg.errs, fmt.Errorf("cronx: WithMisfire: negative grace %v", grace))
		}
		cfg.misfire, cfg.grace = p, grace
	}
}

// WithElection passes options to the election and sessions the Cron makes:
// prefix, TTL, identity, margin, logger. They win over the environment.
func WithElection(opts ...election.Option) Option {
	return func(c *Cron) {
		cfg := c.coordConfig()
		cfg.eopts = append(cfg.eopts, opts...)
	}
}

// schedulers counts the Crons of this process, for default names.
var schedulers atomic.Int64

// coordinator claims every tick of a coordinated Cron in etcd before it runs.
type coordinator struct {
	c        *Cron
	name     string // scheduler name
	mode     Mode
	misfire  Misfire
	grace    time.Duration
	eopts    []election.Option
	identity string
	prefix   string // P
	keys     layout
	logger   Logger

	ownsClient bool                // made from the environment
	conn       election.Connection // the environment's, when ownsClient
	gen        int                 // counts Starts
	clientGen  int                 // the Start that made client, when ownsClient
	connErr    error               // why the last connection attempt failed
	client     *clientv3.Client
	elector    *election.Elector

	mu         sync.Mutex
	term       *termState        // leader mode: the current term, nil when not leading
	sess       *election.Session // the runners' session, for in-progress markers
	sessMu     sync.Mutex        // held while sess is replaced; never taken under mu
	ctx        context.Context   // cancelled on Stop
	cancel     context.CancelFunc
	started    bool
	resigned   chan struct{} // closed when the campaign has ended
	done       chan struct{} // closed when the background work has ended
	runs       jobWaiter     // claims and runs in progress
	claimSlots chan struct{} // one token per claim in flight
	batch      *batcher      // leader mode's claims of live ticks
	finishes   finishQueue   // runs ended and not yet recorded
	specs      specQueue     // spec keys to write
	fired      firedTicks    // claim mode: the latest tick of each job

	premu sync.Mutex
	pre   map[preclaimKey]*preclaim // leader mode: runs claimed ahead of their tick
}

type termState struct {
	term election.Term
	ctx  context.Context
}

// newCoordinator returns nil when the Cron is not coordinated: no
// coordination option and no BATON_ETCD_ENDPOINTS.
func newCoordinator(c *Cron, cfg *coordConfig) (*coordinator, error) {
	n := schedulers.Add(1)
	conn := election.ConnectionFromEnv()
	if cfg == nil && !conn.Configured() {
		return nil, nil
	}
	if cfg == nil {
		cfg = &coordConfig{grace: DefaultMisfireGrace}
	}
	if len(cfg.errs) > 0 {
		return nil, errors.Join(cfg.errs...)
	}
	co := &coordinator{
		c:          c,
		mode:       cfg.mode,
		misfire:    cfg.misfire,
		grace:      cfg.grace,
		eopts:      cfg.eopts,
		client:     cfg.client,
		elector:    cfg.elector,
		claimSlots: make(chan struct{}, maxClaims),
		logger:     c.logger,
	}
	co.batch = newBatcher(co)
	switch {
	case cfg.elector != nil && cfg.client != nil:
		return nil, errors.New("cronx: WithElector and WithEtcd both given; the elector brings its client")
	case cfg.elector != nil && cfg.modeSet && cfg.mode == ClaimMode:
		return nil, errors.New("cronx: WithElector contradicts WithMode(ClaimMode), which elects no leader")
	case cfg.elector != nil:
		co.client = cfg.elector.Client()
		co.eopts = append([]election.Option{election.WithPrefix(cfg.elector.Prefix()),
			election.WithIdentity(cfg.elector.Identity()), election.WithTTL(cfg.elector.TTL())}, co.eopts...)
	case cfg.client == nil && !conn.Configured():
		// Only misfire, mode or name options: nothing to coordinate with.
		return nil, nil
	case cfg.client == nil:
		co.ownsClient, co.conn = true, conn
	}
	co.name = cfg.name
	if co.name == "" && cfg.elector != nil {
		co.name = cfg.elector.Name()
	}
	if co.name == "" {
		co.name = "cron"
		if n > 1 {
			co.name = fmt.Sprintf("cron-%d", n)
		}
	}
	if err := election.CheckName("scheduler", co.name); err != nil {
		return nil, fmt.Errorf("cronx: WithName(%q): %w", co.name, err)
	}
	// Validate the election options now, so a bad prefix or TTL is an error
	// of New's caller rather than a log line later.
	settings, err := election.Resolve(co.eopts...)
	if err != nil {
		return nil, err
	}
	co.identity = settings.Identity
	co.prefix = settings.Prefix
	co.keys = newLayout(co.prefix, co.name)
	if co.ownsClient {
		// One line, whatever the Logger, so an import swap that turned
		// coordination on says so.
		slog.Info("cronx: coordinating through etcd (BATON_ETCD_ENDPOINTS)",
			"scheduler", co.name, "mode", co.mode.String(), "instance", co.identity, "endpoints", strings.Join(conn.Endpoints, ","))
	}
	return co, nil
}

// etcd returns the client, nil until one is made from the environment.
func (co *coordinator) etcd() *clientv3.Client {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.client
}

// scheduling reports whether this replica fires ticks now.
func (co *coordinator) scheduling() bool {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.mode == ClaimMode {
		// Until a client from the environment is made, no claim can be
		// sent; connecting asks for a resync, which catches up.
		return co.started && co.client != nil
	}
	return co.term != nil // mutation:follower-schedules
}

// start begins coordinating: in leader mode a campaign, in claim mode the
// trigger watch. It never blocks.
func (co *coordinator) start() {
	co.mu.Lock()
	defer co.mu.Unlock()
	if co.started {
		return
	}
	co.started = true
	co.ctx, co.cancel = context.WithCancel(context.Background())
	ctx, resigned, done := co.ctx, make(chan struct{}), make(chan struct{})
	prev := co.done
	co.resigned, co.done = resigned, done
	co.gen++
	gen := co.gen
	go func() {
		defer close(done)
		if prev != nil {
			// A Stop then Start: the last run's client and session go first.
			<-prev
		}
		ownsClient := co.connect(ctx, gen)
		defer co.watchEmpty(ctx)()
		co.campaign(ctx)
		close(resigned)
		// Markers of runs still going must outlive the campaign, so the
		// runners' session is closed only once every run has returned.
		<-co.runs.idle().Done()
		co.closeSession()
		if ownsClient {
			co.mu.Lock()
			cli := co.client
			co.client = nil
			co.mu.Unlock()
			cli.Close()
		}
	}()
}

// campaign schedules while this replica may: in leader mode for each term it
// wins, in claim mode until Stop. It returns once ctx is done and, in leader
// mode, the leader has resigned.
func (co *coordinator) campaign(ctx context.Context) {
	cli := co.etcd()
	if cli == nil {
		<-ctx.Done() // fail closed: no claim, no run
		return
	}
	if co.mode == ClaimMode {
		co.publishAll()
		co.c.requestResync()
		co.watchTriggers(ctx, nil)
		return
	}
	e := co.elector
	if e == nil {
		var err error
		if e, err = election.New(cli, co.name, co.eopts...); err != nil {
			co.logger.Error(err, "cronx: cannot campaign; no job will run", "scheduler", co.name)
			<-ctx.Done()
			return
		}
	}
	if err := e.Run(ctx, co.lead); err != nil && !errors.Is(err, context.Canceled) {
		co.logger.Error(err, "cronx: campaign ended", "scheduler", co.name)
	}
}

// lead is the Cron's work for one term: schedule until the term ends.
func (co *coordinator) lead(ctx context.Context, term election.Term) {
	co.mu.Lock()
	co.term = &termState{term: term, ctx: ctx}
	co.mu.Unlock()
	co.logger.Info("cronx: leading", "scheduler", co.name, "instance", co.identity, "fence", term.Revision)
	co.c.requestResync()
	co.publishAll()
	co.watchTriggers(ctx, &term)
	co.mu.Lock()
	ts := co.term
	co.term = nil
	co.mu.Unlock()
	// Before the resignation, so the successor finds the ticks unclaimed.
	co.withdrawAll(ts)
	co.c.requestResync()
}

// stop stops coordinating and waits, briefly, for the leader to resign, so
// that a process that exits once Stop's context is done has handed over.
// Runs in progress see their context cancelled; Stop's context waits for
// them.
func (co *coordinator) stop() {
	co.mu.Lock()
	if !co.started {
		co.mu.Unlock()
		return
	}
	co.started = false
	co.cancel()
	resigned := co.resigned
	co.mu.Unlock()
	if co.mode == ClaimMode {
		return // no leader to resign
	}
	t := time.NewTimer(resignWait)
	defer t.Stop()
	select {
	case <-resigned:
	case <-t.C:
		co.logger.Info("cronx: resignation not confirmed; the lease will expire", "scheduler", co.name)
	}
}

// session returns the runners' session, making a new one when there is
// none or the last was lost.
//
// Granting a lease waits for etcd, up to 5 s when it is unreachable, so it
// is done under sessMu only: co.mu must stay free for AddJob, Stop and the
// cluster operations, which must not wait for etcd.
func (co *coordinator) session(ctx context.Context) (*election.Session, error) {
	co.sessMu.Lock()
	defer co.sessMu.Unlock()
	co.mu.Lock()
	old, client := co.sess, co.client
	co.mu.Unlock()
	if old != nil && old.Context().Err() == nil {
		return old, nil
	}
	if old != nil {
		co.mu.Lock()
		co.sess = nil
		co.mu.Unlock()
		co.runs.add()
		go func() {
			defer co.runs.done()
			closeQuietly(old)
		}()
	}
	sctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	s, err := election.NewSession(sctx, client, co.eopts...)
	if err != nil {
		return nil, err
	}
	co.mu.Lock()
	co.sess = s
	co.mu.Unlock()
	return s, nil
}

func (co *coordinator) closeSession() {
	co.sessMu.Lock()
	defer co.sessMu.Unlock()
	co.mu.Lock()
	s := co.sess
	co.sess = nil
	co.mu.Unlock()
	if s != nil {
		closeQuietly(s)
	}
}

func closeQuietly(s *election.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	s.Close(ctx)
}

// run describes one tick to claim and run.
type run struct {
	job       string
	tick      time.Time
	wrapped   Job
	overlap   Overlap
	catchUp   bool
	triggered int64 // the trigger's revision, for a triggered run
	// plain: nothing in wrapped can see its context's cancellation, so
	// the run is spared the plumbing.
	plain bool
}

// plainJob reports whether no part of a wrapped job reads its context:
// a plain Job, or a Named plain Job, with no wrapper around it.
func plainJob(wrapped Job) bool {
	if nj, ok := wrapped.(*namedJob); ok {
		wrapped = nj.job
	}
	_, ok := wrapped.(ContextJob)
	return !ok
}

// fire claims and runs one tick of e, in the background.
func (co *coordinator) fire(e *Entry, tick time.Time, catchUp bool) {
	var ts *termState
	if co.mode == LeaderMode {
		co.mu.Lock()
		ts = co.term
		co.mu.Unlock()
		if ts == nil { // mutation:follower-fires
			return
		}
	}
	if ts == nil {
		co.fired.note(e.name, tick)
	}
	if p := co.takePreclaim(e.name, tick, ts); p != nil && ts != nil {
		co.c.jobWaiter.add()
		co.runs.add()
		go func() {
			defer co.c.jobWaiter.done()
			defer co.runs.done()
			co.runPreclaimed(p)
		}()
		return
	}
	r := run{job: e.name, tick: tick, wrapped: e.WrappedJob, overlap: overlapOf(e.Job), catchUp: catchUp, plain: plainJob(e.WrappedJob)}
	co.c.jobWaiter.add()
	co.runs.add()
	go func() {
		defer co.c.jobWaiter.done()
		defer co.runs.done()
		co.claimAndRun(r, ts)
	}()
}

func overlapOf(j Job) Overlap {
	if nj, ok := j.(*namedJob); ok {
		return nj.overlap
	}
	return Allow
}

// claimAndRun claims r in etcd and, if the claim holds, runs it.
func (co *coordinator) claimAndRun(r run, ts *termState) {
	var base context.Context
	if ts != nil {
		base = ts.ctx
	} else {
		co.mu.Lock()
		base = co.ctx
		co.mu.Unlock()
	}
	claim, sess, err := co.claim(base, r, ts)
	co.runClaimed(base, r, ts, claim, sess, err)
}

// runClaimed runs r if its claim succeeded, and records the run; it logs a
// claim that failed for a reason worth a line.
func (co *coordinator) runClaimed(base context.Context, r run, ts *termState, claim election.Claim, sess *election.Session, err error) {
	if err != nil {
		var ce *election.ClaimedError
		switch {
		case errors.As(err, &ce) && ce.Holder == co.identity && ce.Seq > ce.Want && r.triggered == 0 && !r.catchUp:
			later := time.Unix(0, ce.Seq).In(r.tick.Location())
			var re *retriedError
			if errors.As(err, &re) {
				// etcd was out: its ticks were retried together, and the
				// latest one that ran stands for them, as after any outage.
				co.logger.Info("cronx: skipped: a later tick ran after etcd came back", "job", r.job, "tick", r.tick, "later", later)
				break
			}
			// This replica claimed a later tick first though this tick's
			// claim went out first: it was held up past the next one's (etcd
			// changing raft leader), or the clock went back. Nobody runs it;
			// say so.
			co.logger.Error(fmt.Errorf("a later tick, %s, was claimed first", later.Format(time.RFC3339)),
				"cronx: tick not run", "job", r.job, "tick", r.tick)
		case errors.Is(err, errSuperseded):
			co.logger.Info("cronx: skipped: "+err.Error(), "job", r.job, "tick", r.tick)
		case errors.Is(err, election.ErrClaimed), errors.Is(err, election.ErrNeverClaimed):
			// Another replica ran it, or a catch-up found nothing to resume.
		case errors.Is(err, election.ErrBusy):
			co.logger.Info("cronx: skipped: a run is in progress", "job", r.job, "tick", r.tick)
		case errors.Is(err, ErrPaused):
			co.logger.Info("cronx: skipped: paused", "job", r.job, "tick", r.tick)
		case base.Err() != nil:
			// Stopped or no longer leading: not a failure of this tick.
		default:
			co.logger.Error(err, "cronx: tick not run", "job", r.job, "tick", r.tick)
		}
		return
	}
	// The run's fence is its in-progress marker, in leader mode too: bound
	// to the runners' lease, it outlives a term given up on Stop until the
	// run ends, and dies with the lease of a leader deposed while paused.
	info := Info{Job: r.job, Tick: r.tick, Instance: co.identity, Fence: claim.Fence, Triggered: r.triggered != 0}
	if base.Err() != nil {
		// Claimed as the Cron stopped or the term ended: the claim was sent
		// before, and it holds, so the run goes ahead as one already started
		// would. Its context ends only with its claim.
		base = context.WithoutCancel(base)
	}
	ctx := context.WithValue(base, infoKey{}, info)
	if !r.plain {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		stop := context.AfterFunc(sess.Context(), func() { cancel(context.Cause(sess.Context())) })
		defer cancel(nil)
		defer stop()
	}
	start := co.c.clock.Now()
	runErr := runJob(ctx, r.wrapped)
	end := co.c.clock.Now()
	co.finishLater(finishItem{r, claim, sess, start, end, runErr})
}

// claim claims r's tick, retrying while etcd does not answer, until the
// tick is too late for the misfire policy or ctx ends.
func (co *coordinator) claim(ctx context.Context, r run, ts *termState) (election.Claim, *election.Session, error) {
	latest := r.tick.Add(skipTolerance)
	if co.misfire == RunOnce { // mutation:misfire-grace
		latest = r.tick.Add(max(co.grace, skipTolerance))
	}
	if r.triggered != 0 {
		latest = co.c.clock.Now().Add(co.grace)
	}
	key, seq := co.keys.last(r.job), r.tick.UnixNano()
	marker := co.keys.tickMarker(r.job, seq)
	if r.triggered != 0 {
		key, seq = co.keys.triggered(r.job), r.triggered
		marker = co.keys.triggerMarker(r.job, r.triggered)
	}
	// In claim mode, a claim made under a later session than the one live
	// when the tick fired (etcd was out meanwhile) must find the job's claim
	// key. The key is missing then only if etcd came back without its data,
	// and another replica may have run the tick before the data was lost;
	// so the tick is given up. (A leader's claims die with its term.)
	claimMode := ts == nil && r.triggered == 0
	var firedUnder *election.Session
	hadSession := false
	if claimMode {
		co.mu.Lock()
		firedUnder, hadSession = co.sess, co.sess != nil
		co.mu.Unlock()
		if firedUnder != nil && firedUnder.Context().Err() != nil {
			firedUnder = nil
		}
	}
	backoff := retryBackoff
	for try := 1; ; try++ {
		var err error
		sess, serr := co.session(ctx)
		if claimMode && co.fired.superseded(r.job, r.tick) {
			return election.Claim{}, nil, errSuperseded
		}
		if serr == nil {
			opts := []election.ClaimOption{
				election.ClaimedBy(co.identity),
				election.WithMarker(marker, sess.Lease()),
			}
			if r.triggered == 0 {
				opts = append(opts, election.UnlessExists(co.keys.paused(r.job), ErrPaused)) // mutation:pause
			}
			if ts != nil {
				opts = append(opts, election.UnderTerm(ts.term.Fence)) // mutation:under-term
			}
			if r.overlap == Forbid { // mutation:forbid
				opts = append(opts, election.Exclusive(co.keys.running(r.job)))
			}
			if r.catchUp || claimMode && hadSession && sess != firedUnder {
				opts = append(opts, election.IfClaimedBefore())
			}
			var c election.Claim
			if ts != nil && !r.catchUp && r.triggered == 0 {
				c, err = co.batch.claim(&claimReq{ctx: ctx, key: key, seq: seq, opts: opts, term: ts.term.Fence})
			} else {
				c, err = co.claimSingle(ctx, key, seq, opts)
			}
			if err == nil {
				return c, sess, nil
			}
			if errors.Is(err, election.ErrClaimed) || errors.Is(err, election.ErrBusy) || errors.Is(err, ErrPaused) ||
				errors.Is(err, election.ErrNotLeader) || errors.Is(err, election.ErrNeverClaimed) {
				if try > 1 {
					err = &retriedError{err}
				}
				return election.Claim{}, nil, err
			}
		} else {
			err = serr
		}
		if ctx.Err() != nil {
			return election.Claim{}, nil, fmt.Errorf("%w (%v)", context.Cause(ctx), err)
		}
		if co.c.clock.Now().Add(backoff).After(latest) {
			return election.Claim{}, nil, fmt.Errorf("no claim before the misfire deadline: %w", err)
		}
		// Retries pace against etcd, which runs on real time whatever the
		// Cron's clock.
		sleep(ctx, backoff)
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// retriedError is the outcome of a claim that etcd answered only after
// retries: while etcd was out, the job's later ticks were being claimed too.
type retriedError struct{ error }

func (e *retriedError) Unwrap() error { return e.error }

func (co *coordinator) claimSingle(ctx context.Context, key string, seq int64, opts []election.ClaimOption) (election.Claim, error) {
	select {
	case co.claimSlots <- struct{}{}:
	case <-ctx.Done():
		return election.Claim{}, context.Cause(ctx)
	}
	defer func() { <-co.claimSlots }()
	if ctx.Err() != nil {
		return election.Claim{}, context.Cause(ctx) // not sent: nothing to learn
	}
	// Once sent, the claim is awaited even if ctx ends: a claim that
	// commits as the scheduler stops is run (Stop's context waits for it),
	// where giving up on it would leave its tick claimed and never run.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), etcdTimeout)
	defer cancel()
	return election.ClaimSeq(cctx, co.etcd(), key, seq, opts...)
}

// finishItem is a run that ended, to be recorded.
type finishItem struct {
	r          run
	claim      election.Claim
	sess       *election.Session // holds the claim's marker
	start, end time.Time
	err        error
}

// finishQueue holds ended runs for at most maxFinishes recorders, in the
// order they ended. Bookkeeping yields to claims: when many runs end
// together, the next tick's claims must not queue behind their history
// writes. And a run's goroutine ends with its job rather than wait here, so
// that ten thousand runs on one tick are not ten thousand parked stacks
// for the garbage collector to scan while the last of them start.
type finishQueue struct {
	mu        sync.Mutex
	items     []finishItem
	recorders int
	// recording holds the jobs whose runs a recorder is writing: another
	// recorder leaves their later runs queued, so each history is appended
	// to in order.
	recording map[string]bool
}

// finishLater queues an ended run for recording. Stop's context and the
// etcd client wait for it.
func (co *coordinator) finishLater(it finishItem) {
	co.c.jobWaiter.add()
	co.runs.add()
	q := &co.finishes
	q.mu.Lock()
	q.items = append(q.items, it)
	start := q.recorders < maxFinishes
	if start {
		q.recorders++
	}
	q.mu.Unlock()
	if start {
		go co.record()
	}
}

// record records queued runs until none is left, up to recordBatch of
// them at a time.
func (co *coordinator) record() {
	q := &co.finishes
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			q.recorders--
			q.items = nil // let a burst's backing array go
			q.mu.Unlock()
			return
		}
		// The oldest runs of distinct jobs that no other recorder is
		// writing: a job's later run waits, so that its history is appended
		// to in order.
		if q.recording == nil {
			q.recording = map[string]bool{}
		}
		var batch, later []finishItem
		seen := map[string]bool{}
		n := 0
		for ; n < len(q.items) && len(batch) < recordBatch; n++ {
			it := q.items[n]
			if seen[it.r.job] || q.recording[it.r.job] {
				later = append(later, it)
				continue
			}
			seen[it.r.job] = true
			batch = append(batch, it)
		}
		if len(batch) == 0 {
			// All are runs of jobs being recorded; their recorders take them
			// next.
			q.recorders--
			q.mu.Unlock()
			return
		}
		for _, it := range batch {
			q.recording[it.r.job] = true
		}
		clear(q.items[:n-len(later)])
		q.items = q.items[n-len(later):]
		copy(q.items, later)
		q.mu.Unlock()
		co.recordAll(batch)
		q.mu.Lock()
		for _, it := range batch {
			delete(q.recording, it.r.job)
		}
		q.mu.Unlock()
		for range batch {
			co.runs.done()
			co.c.jobWaiter.done()
		}
	}
}

// recordAll releases the runs' markers and appends them to their jobs'
// histories in two round trips: one transaction reads every history, and
// one transaction of nested transactions releases each marker that is
// still the run's own and writes each history not changed since it was
// read. A history changed meanwhile (a run of the job on another replica)
// is appended to again on its own.
func (co *coordinator) recordAll(batch []finishItem) {
	if len(batch) == 1 {
		co.finish(batch[0])
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	gets := make([]clientv3.Op, len(batch))
	for i, it := range batch {
		gets[i] = clientv3.OpGet(co.keys.history(it.r.job))
	}
	read, err := co.client.Txn(ctx).Then(gets...).Commit()
	if err != nil {
		for _, it := range batch {
			co.finish(it)
		}
		return
	}
	var ops []clientv3.Op
	var history []int // index in ops of each run's history write
	for i, it := range batch {
		if f := it.claim.Fence; f.Key != "" {
			ops = append(ops, clientv3.OpTxn([]clientv3.Cmp{f.Cmp()}, []clientv3.Op{clientv3.OpDelete(f.Key)}, nil))
		}
		key := co.keys.history(it.r.job)
		hist, rev := decodeHistory(read.Responses[i].GetResponseRange().Kvs)
		history = append(history, len(ops))
		ops = append(ops, clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)},
			[]clientv3.Op{clientv3.OpPut(key, encodeHistory(hist, co.record1(it)))}, nil))
	}
	wrote, err := co.client.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		// It may have committed: releases are conditional, and a record
		// already in a history is not appended again.
		for _, it := range batch {
			co.finish(it)
		}
		return
	}
	for i, it := range batch {
		if !wrote.Responses[history[i]].GetResponseTxn().Succeeded {
			actx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
			co.appendHistory(actx, it)
			cancel()
		}
	}
}

// finish releases one run's marker and records it in its job's history.
func (co *coordinator) finish(it finishItem) {
	ctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
	defer cancel()
	if err := election.Release(ctx, co.client, it.claim); err != nil {
		co.logger.Error(err, "cronx: release run marker", "job", it.r.job)
		co.releaseLater(it)
	}
	co.appendHistory(ctx, it)
}

// releaseLater retries the release of a run's marker that etcd did not
// answer, for as long as the session holding it lives: left behind, the
// marker would keep a Forbid job busy on every replica while this one
// runs. Once the session has ended, its lease expires and takes the marker.
func (co *coordinator) releaseLater(it finishItem) {
	if it.sess == nil || it.claim.Fence.Key == "" {
		return
	}
	co.runs.add() // the client outlives it
	go func() {
		defer co.runs.done()
		sctx := it.sess.Context()
		for backoff := releaseBackoff; sctx.Err() == nil; backoff = min(2*backoff, maxReleaseBackoff) {
			sleep(sctx, backoff)
			ctx, cancel := context.WithTimeout(sctx, etcdTimeout)
			err := election.Release(ctx, co.client, it.claim)
			cancel()
			if err == nil {
				return
			}
		}
	}()
}

// record1 is the history record of one ended run.
func (co *coordinator) record1(it finishItem) Record {
	rec := Record{Tick: it.r.tick, Instance: co.identity, Start: it.start, Duration: it.end.Sub(it.start), Triggered: it.r.triggered != 0}
	if it.err != nil {
		rec.Error = it.err.Error()
	}
	return rec
}

// appendHistory appends a run to its job's history, unless it is there
// already, retrying while other replicas write the history too.
func (co *coordinator) appendHistory(ctx context.Context, it finishItem) {
	rec := co.record1(it)
	key := co.keys.history(it.r.job)
	for range 3 {
		resp, err := co.client.Get(ctx, key)
		if err != nil {
			co.logger.Error(err, "cronx: record run", "job", it.r.job)
			return
		}
		hist, rev := decodeHistory(resp.Kvs)
		for _, h := range hist {
			if h.Tick.Equal(rec.Tick) && h.Instance == rec.Instance && h.Start.Equal(rec.Start) && h.Triggered == rec.Triggered {
				return
			}
		}
		tr, err := co.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, encodeHistory(hist, rec))).Commit()
		if err != nil {
			co.logger.Error(err, "cronx: record run", "job", it.r.job)
			return
		}
		if tr.Succeeded {
			return
		}
	}
	co.logger.Error(errors.New("the history kept changing under the write"), "cronx: record run", "job", it.r.job, "tick", it.r.tick)
}

// watchTriggers runs triggered jobs until ctx ends: those waiting when it
// starts, then each new trigger.
func (co *coordinator) watchTriggers(ctx context.Context, term *election.Term) {
	prefix := co.keys.triggers()
	for ctx.Err() == nil {
		resp, err := co.client.Get(ctx, prefix, clientv3.WithPrefix())
		if err != nil {
			sleep(ctx, watchRetry)
			continue
		}
		for _, kv := range resp.Kvs {
			co.trigger(kv, term)
		}
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for wr := range co.client.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterDelete()) {
			if wr.Err() != nil {
				break
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.PUT {
					co.trigger(ev.Kv, term)
				}
			}
		}
		cancel()
	}
}

// trigger runs a triggered job once, cluster-wide, if this replica has it.
func (co *coordinator) trigger(kv *mvccpb.KeyValue, term *election.Term) {
	name := co.keys.triggerJob(string(kv.Key))
	e, ok := co.c.entryByName(name)
	if !ok {
		return // another version of the app may have it
	}
	var ts *termState
	if term != nil {
		co.mu.Lock()
		ts = co.term
		co.mu.Unlock()
		if ts == nil {
			return
		}
	}
	r := run{job: name, tick: co.c.clock.Now(), wrapped: e.WrappedJob, overlap: overlapOf(e.Job), triggered: kv.ModRevision, plain: plainJob(e.WrappedJob)}
	co.c.jobWaiter.add()
	co.runs.add()
	go func() {
		defer co.c.jobWaiter.done()
		defer co.runs.done()
		co.claimAndRun(r, ts)
		// Whoever ran it (or found it run) clears the request.
		dctx, cancel := context.WithTimeout(context.Background(), etcdTimeout)
		defer cancel()
		co.client.Txn(dctx).If(clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision)).
			Then(clientv3.OpDelete(string(kv.Key))).Commit()
	}()
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// latestTick returns the latest activation of s in (now-grace, now], or the
// zero time when there is none.
func latestTick(s Schedule, now time.Time, grace time.Duration) time.Time {
	var last time.Time
	for t := s.Next(now.Add(-grace)); !t.IsZero() && !t.After(now); t = s.Next(t) {
		last = t
	}
	return last
}
