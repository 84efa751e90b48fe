package cronx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Cron runs jobs on their schedules. Entries may be added, removed and
// inspected before Start and while it runs; all its methods are safe for
// concurrent use.
type Cron struct {
	// runningMu guards running, nextID and, while the scheduler is stopped,
	// the loop's entries. While it runs, the loop owns them and the methods
	// below talk to it over its channels, so a snapshot never sees an entry
	// half-updated.
	runningMu sync.Mutex
	running   bool
	nextID    EntryID
	loop      *loop
	runs      *runs // every run, from firing to its record (runs.go)

	settings
	policies policies // the jobs' policies, one copy of each

	names     jobNames
	observers observers

	// Cluster coordination: nil when the Cron runs alone. coordErr is a
	// configuration error, returned by every Add.
	coord    *coordinator
	coordErr error
}

// New returns a stopped Cron configured by opts. Without options it
// interprets schedules in time.Local, parses specs with the standard
// five-field parser (ParseStandard), wraps jobs in no JobWrapper (so a
// panicking job crashes the program unless Recover is in the chain) and logs
// errors to standard output through DefaultLogger.
func New(opts ...Option) *Cron {
	c := &Cron{runs: newRuns(), settings: defaultSettings()}
	c.loop = newLoop(c)
	for _, opt := range opts {
		opt(c)
	}
	c.coord, c.coordErr = newCoordinator(c, c.coordCfg)
	if c.coordErr != nil {
		c.logger.Error(c.coordErr, "cronx: not coordinated; jobs cannot be added")
	}
	return c
}

// AddFunc schedules cmd on spec, parsed by the Cron's parser. The ID it
// returns identifies the entry to Entry and Remove.
func (c *Cron) AddFunc(spec string, cmd func()) (EntryID, error) {
	return c.AddJob(spec, FuncJob(cmd))
}

// AddJob schedules cmd on spec, parsed by the Cron's parser. The ID it
// returns identifies the entry to Entry and Remove.
func (c *Cron) AddJob(spec string, cmd Job) (EntryID, error) {
	if c.coordErr != nil {
		return 0, c.coordErr
	}
	if isNilJob(cmd) {
		return 0, fmt.Errorf("cronx: job for %q is nil", spec)
	}
	schedule, err := parseSpec(c.parser, spec)
	if err != nil {
		return 0, err
	}
	return c.schedule(schedule, cmd, spec)
}

// Schedule adds cmd, wrapped by the Cron's chain, to run on schedule. A
// running Cron computes the entry's first activation at once. A nil
// schedule or job, or a job the Cron cannot add, is logged as an error and
// returns ID 0, which names no entry.
func (c *Cron) Schedule(schedule Schedule, cmd Job) EntryID {
	var id EntryID
	var err error
	switch {
	case schedule == nil:
		err = errors.New("cronx: Schedule: the schedule is nil")
	case isNilJob(cmd): // mutation:nil-job
		err = fmt.Errorf("cronx: Schedule: the job for %s is nil", describeSchedule(schedule))
	default:
		schedule = withLocation(schedule)
		id, err = c.schedule(schedule, cmd, describeSchedule(schedule))
	}
	if err != nil {
		c.logger.Error(err, "cronx: job not scheduled")
	}
	return id
}

// schedule adds cmd; spec names the schedule for a derived job name.
func (c *Cron) schedule(schedule Schedule, cmd Job, spec string) (EntryID, error) {
	if c.coordErr != nil {
		return 0, c.coordErr
	}
	if err := namedNil(cmd); err != nil {
		return 0, err
	}
	policy, err := c.policies.of(c.jobOpts, cmd, spec)
	if err != nil {
		return 0, err
	}
	var sc *scope
	if c.coord != nil {
		sc = c.coord.scope
	}
	if err := checkRunAtStart(sc, policy, jobLabel(cmd, spec)); err != nil {
		return 0, err
	}
	name, base := "", ""
	if nj, ok := cmd.(*namedJob); ok {
		if err := checkJobName(nj.name); err != nil {
			return 0, err
		}
		name = nj.name
	} else if c.coord != nil {
		base = derivedName(cmd, spec)
	}
	if name != "" || base != "" {
		var err error
		if name, err = c.names.take(name, base); err != nil {
			return 0, err
		}
	}
	published := ""
	if c.coord != nil {
		published = spec
	}
	schedule = withDST(schedule, policy.dst)
	schedule = withBounds(schedule, policy.bounds)
	c.runningMu.Lock()
	defer c.runningMu.Unlock()
	c.nextID++
	e := &Entry{
		ID:         c.nextID,
		Schedule:   schedule,
		WrappedJob: c.chain.Then(cmd),
		Job:        cmd,
		name:       name,
		spec:       published,
		policy:     policy,
	}
	if len(c.observers) > 0 {
		// Told before the loop has the entry, so before any of its runs.
		var sc *scope
		if c.coord != nil {
			sc = c.coord.scope
		}
		c.observers.emit(jobAdded(sc, name, policy, schedule, c.clock.Now()))
	}
	if c.running {
		c.loop.add <- e
		if c.coord != nil && name != "" {
			c.coord.loadOutcomes(func() []string { return []string{name} })
		}
	} else {
		c.loop.entries = append(c.loop.entries, e)
	}
	if c.coord != nil {
		c.coord.specs.queueSpec(name, spec, false)
	}
	return e.ID, nil
}

// Entries returns a copy of the entries. While the Cron runs they are in the
// order they will next run, entries that never run again last.
func (c *Cron) Entries() []Entry {
	c.runningMu.Lock()
	defer c.runningMu.Unlock()
	if !c.running {
		return c.loop.entrySnapshot()
	}
	reply := make(chan []Entry, 1)
	c.loop.snapshot <- reply
	entries := <-reply
	if c.coord != nil && !c.coord.scheduling() {
		// A follower's loop keeps the Next its entries had when it last
		// scheduled; the schedule still says when the job runs next.
		now := c.now()
		for i, e := range entries {
			if !e.Next.IsZero() && !e.Next.After(now) { // mutation:follower-next
				entries[i].Next = e.Schedule.Next(now)
			}
		}
	}
	return entries
}

// Entry returns a copy of the entry with the given ID, or the zero Entry
// (whose Valid is false) if there is none.
func (c *Cron) Entry(id EntryID) Entry {
	for _, e := range c.Entries() {
		if e.ID == id {
			return e
		}
	}
	return Entry{}
}

// Location returns the time zone in which the Cron interprets schedules.
func (c *Cron) Location() *time.Location {
	return c.location
}

// Remove deletes the entry with the given ID, so that it does not run
// again. A run in progress is not interrupted; a run of it that fired and
// has not started (it waits for its jitter, its turn, the run it replaces,
// or the answer to its claim) is given up, so that none starts after Remove
// returns. An unknown ID is ignored. When Remove returns, the entry's job
// name is free for another job.
func (c *Cron) Remove(id EntryID) {
	c.runningMu.Lock()
	defer c.runningMu.Unlock()
	if c.running {
		c.loop.remove <- id
		<-c.loop.acked
	} else {
		c.removeEntry(id)
	}
}

// Start runs the scheduler in its own goroutine. It does nothing if the
// scheduler runs already.
func (c *Cron) Start() {
	c.runningMu.Lock()
	defer c.runningMu.Unlock()
	if c.running {
		return
	}
	c.start()
	go c.loop.run()
}

// Run runs the scheduler in the calling goroutine until Stop is called. It
// returns at once if the scheduler runs already.
func (c *Cron) Run() {
	c.runningMu.Lock()
	if c.running {
		c.runningMu.Unlock()
		return
	}
	c.start()
	c.runningMu.Unlock()
	c.loop.run()
}

// start marks the Cron running and starts coordinating; the caller holds
// runningMu.
func (c *Cron) start() {
	c.running = true
	c.runs.restart()
	if c.coord != nil {
		c.coord.start()
	}
}

// Stop stops the scheduler if it runs; no run starts after Stop returns,
// and runs in progress are not interrupted, as in robfig/cron, alone and
// coordinated alike. The returned context is done once every run has
// returned (and, coordinated, been recorded), at once if none is in
// progress. Stop does not wait for the runs itself, so a caller chooses how
// long to wait, or calls Shutdown.
//
// A run that fired and has not started is given up: one that waits for its
// jitter, for its turn (a Forbid trigger), for the run it replaces, or for
// a slot to send its claim in. Under coordination its claim, if it has one,
// is given back, so that another replica runs its tick (in leader mode the
// successor, which takes over once this replica has resigned). A claim on
// the wire when Stop comes is awaited, for up to half a second: if it
// holds, its job is called before Stop returns; one that comes back later
// still is given back. A leader then resigns at once, and Stop returns
// once it has: when etcd does not answer, after at most 3 s (half a second
// more if a claim was on the wire), so that a process that exits after Stop
// has resigned and its successor need not wait out the TTL.
//
// A Cron coordinated through a client of the caller's (WithEtcd,
// WithElector) uses it a moment longer, to record the runs and revoke its
// session: the context is done once it no longer does, so that the caller
// may close the client then.
func (c *Cron) Stop() context.Context {
	idle, done := c.stopLocked(context.Background(), nil)
	if done == nil {
		return idle
	}
	return bothDone(idle, done)
}

// Shutdown stops the Cron as Stop does and waits until every run has
// returned and been recorded. If ctx ends first, it cancels the contexts
// of the runs still going, with ErrShutdown as the cause, waits until their
// jobs have returned, and returns ctx's error, as http.Server.Shutdown
// does with its connections. Their records, which release their markers,
// are awaited for up to half a second more (an etcd that answers takes them
// in milliseconds); those etcd has not taken by then are not waited for,
// and a log line says how many runs are not recorded. A
// claim on the wire that Stop would await is given back if ctx ends first,
// but a leader's resignation is awaited as by Stop (up to three seconds
// from the call while etcd does not answer, alongside the wait for the
// records), so that a process which exits next hands over at once. A job that does not read its context (a plain Job) holds
// Shutdown up until it returns. Called from inside a job, Shutdown does not
// wait for the run it is called from: the run its context names, or, with
// a context that names none, the job's own (a job of another Cron calling
// this one's Shutdown so leaves one of this Cron's runs out; pass the job's
// context). A SIGTERM handler bounds a deploy's
// grace with it:
//
//	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
//	defer cancel()
//	c.Shutdown(ctx)
func (c *Cron) Shutdown(ctx context.Context) error {
	caller, inside := c.callerOf(ctx) // mutation:shutdown-inside
	if inside {
		c.runs.shutdownInside(caller, 1)
		defer c.runs.shutdownInside(caller, -1)
	}
	halted := make(chan struct{}) // no run starts from then on
	stopped := make(chan (<-chan struct{}), 1)
	go func() {
		_, done := c.stopLocked(ctx, halted)
		stopped <- done
	}()
	<-halted
	settled := c.runs.await(ctx, c.runs.settled)
	if !settled {
		c.runs.interrupt()
		c.runs.await(context.Background(), c.runs.returned) // mutation:shutdown-bound
		// The runs have returned; their records, which release their
		// markers, follow within milliseconds when etcd answers. The
		// leader resigns meanwhile.
		wait := shutdownRecordWait
		if c.recordWait > 0 {
			wait = c.recordWait
		}
		wctx, cancel := context.WithTimeout(context.Background(), wait)
		c.runs.await(wctx, c.runs.settled) // mutation:shutdown-records-released
		cancel()
	}
	// Stop's own part is not cut short, since the process may exit next: a
	// leader's resignation, which lets the successor take over at once,
	// within resignWait.
	done := <-stopped // mutation:shutdown-resigns
	if settled {
		if done == nil || inside {
			// The caller's client is in use until its own run ends.
			return nil
		}
		select {
		case <-done:
			return nil
		case <-ctx.Done():
		}
	}
	if n := c.runs.unrecorded(); n > 0 {
		c.logger.Error(ctx.Err(), "cronx: shut down before etcd recorded every run; their markers lapse with the session", "runs", n)
	}
	return ctx.Err()
}

// callerOf reports whether a call with ctx comes from inside one of c's
// jobs, and from which run if ctx names it: ctx is, or derives from, the
// context of one of c's runs, or it names no run and the call comes from
// inside a job.
func (c *Cron) callerOf(ctx context.Context) (*run, bool) {
	if r, ok := ctx.Value(runKey{}).(*run); ok {
		return r, r.rs == c.runs
	}
	return nil, inJob()
}

// stopLocked stops the loop, gives up the runs that have not started
// (halted, if not nil, is closed then), stops coordinating, and returns the
// context of the runs in progress and, for a client of the caller's, the
// channel that closes once the coordination is done with it. ctx's end cuts
// short the wait for the claims on the wire.
func (c *Cron) stopLocked(ctx context.Context, halted chan<- struct{}) (context.Context, <-chan struct{}) {
	c.runningMu.Lock()
	defer c.runningMu.Unlock()
	if c.running {
		c.loop.stop <- struct{}{}
		<-c.loop.acked
		c.running = false
	}
	// While this replica still leads, so that the runs whose claims hold
	// start under their term, and those given back are before the
	// resignation.
	c.runs.stop(ctx, stopClaimWait)
	if halted != nil {
		close(halted)
	}
	idle := c.runs.idle()
	if c.coord == nil {
		return idle, nil
	}
	done := c.coord.stop()
	if c.coord.conn.owns {
		return idle, nil // the coordination closes its client itself
	}
	return idle, done
}

// bothDone returns a context done once ctx is done and done is closed.
func bothDone(ctx context.Context, done <-chan struct{}) context.Context {
	select {
	case <-done:
		return ctx
	default:
	}
	both, cancel := context.WithCancel(context.Background())
	go func() {
		<-ctx.Done()
		<-done
		cancel()
	}()
	return both
}

// requestResync asks the loop to recompute every entry's next run from
// now. It never blocks.
func (c *Cron) requestResync() { c.loop.requestResync() }

// entryByName returns the entry of the job named name.
func (c *Cron) entryByName(name string) (Entry, bool) {
	for _, e := range c.Entries() {
		if e.name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// now reads the Cron's clock in the Cron's time zone, which is the zone
// schedules in time.Local follow.
func (c *Cron) now() time.Time {
	return c.clock.Now().In(c.location)
}

// fire starts one run of e for the nominal tick time tick: the Next that came
// due, never the wake-up time, so that every replica names a tick alike.
// Every run of every tick starts here (catchUp marks one missed in a
// failover), so that a check which must come before a run, such as a
// cluster-wide claim of the tick, has one place to go. It is called by the
// loop and must not block it; it reads what it needs from e before
// returning, because the loop goes on to update e.
func (c *Cron) fire(e *Entry, tick time.Time, catchUp bool) {
	if c.fireHook != nil {
		c.fireHook(*e, tick)
	}
	r := newRun(c.runs, c.coord, refOf(e), tick)
	if c.coord != nil {
		c.coord.fireTick(r, e, catchUp)
		return
	}
	var emit func(any)
	if len(c.observers) > 0 {
		emit = c.observers.emit
	}
	r.goLocal(emit, c.clock.Now)
}

// removeEntry deletes the entry id, gives up its runs that have not
// started, and frees its name. It returns the earliest tick of the runs
// given up (runs.remove).
func (c *Cron) removeEntry(id EntryID) (givenUp time.Time) {
	l := c.loop
	kept := l.entries[:0]
	for _, e := range l.entries {
		if e.ID != id {
			kept = append(kept, e)
			continue
		}
		givenUp = c.runs.remove(id) // mutation:remove-waiting
		c.names.release(e.name)
		if c.coord != nil {
			c.coord.specs.queueSpec(e.name, e.spec, true)
			c.coord.claims.fired.forget(e.name)
		}
	}
	clear(l.entries[len(kept):])
	l.entries = kept
	return givenUp
}

// ErrNotRunning means the Cron has not been started, or has been stopped.
var ErrNotRunning = errors.New("cronx: not running")

// Alive reports whether the Cron's scheduler loop turns: nil once the loop
// has answered, ErrNotRunning before Start and after Stop, and an error
// wrapping ctx's when the loop did not answer before ctx was done (it is
// stuck, or Stop came meanwhile). A health check calls it with a short
// deadline.
//
// Alive does not read etcd: a coordinated Cron that waits for etcd, or a
// follower that schedules nothing, is alive; ask Status about etcd. It
// costs one turn of the loop and a copy of the entries, like Entries.
func (c *Cron) Alive(ctx context.Context) error {
	c.runningMu.Lock()
	running := c.running
	c.runningMu.Unlock()
	if !running {
		return ErrNotRunning
	}
	// Not under runningMu, as Entries is: a stuck loop must not hold up
	// Stop behind a health check.
	reply := make(chan []Entry, 1)
	select {
	case c.loop.snapshot <- reply:
	case <-ctx.Done():
		return fmt.Errorf("cronx: the scheduler loop did not answer: %w", context.Cause(ctx))
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cronx: the scheduler loop did not answer: %w", context.Cause(ctx))
	}
}

// Name is the scheduler's name under coordination, empty without it.
func (c *Cron) Name() string {
	if c.coord == nil {
		return ""
	}
	return c.coord.name
}
