package cronx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton/internal/clock"
)

// Cron runs jobs on their schedules. Entries may be added, removed and
// inspected before Start and while it runs; all its methods are safe for
// concurrent use.
type Cron struct {
	// runningMu guards running, nextID and, while the scheduler is stopped,
	// entries. While it runs, the run loop owns entries and the methods below
	// talk to it over the channels, so a snapshot never sees an entry
	// half-updated.
	runningMu sync.Mutex
	running   bool
	entries   []*Entry
	nextID    EntryID

	add      chan *Entry
	remove   chan EntryID
	acked    chan struct{} // the loop's answer to remove and stop
	snapshot chan chan []Entry
	stop     chan struct{}

	chain    Chain
	jobOpts  []JobOption // every job's policy, under its own (policy.go)
	policies policies    // the jobs' policies, one copy of each
	logger   Logger
	location *time.Location
	parser   ScheduleParser
	clock    clock.Clock

	jobWaiter jobWaiter
	names     jobNames
	observers observers

	// Cluster coordination: nil when the Cron runs alone. coordErr is a
	// configuration error, returned by every Add.
	coordCfg *coordConfig
	coord    *coordinator
	coordErr error
	resync   chan struct{} // asks the loop to recompute every Next
	// places are the places of jobs just removed, for a reload (the run
	// loop's).
	places map[string]removedJob
	// preclaimed is the latest tick whose runs were claimed ahead.
	preclaimed time.Time

	// fireHook, when set, sees every run that fire starts, with the tick it
	// was given. Tests use it to check that runs carry nominal ticks.
	fireHook func(e Entry, tick time.Time)
	// flushEvery, when set, replaces notRunFlush, so that tests read the
	// counts of ticks not run soon.
	flushEvery time.Duration
}

// New returns a stopped Cron configured by opts. Without options it
// interprets schedules in time.Local, parses specs with the standard
// five-field parser (ParseStandard), wraps jobs in no JobWrapper (so a
// panicking job crashes the program unless Recover is in the chain) and logs
// errors to standard output through DefaultLogger.
func New(opts ...Option) *Cron {
	c := &Cron{
		add:      make(chan *Entry),
		remove:   make(chan EntryID),
		acked:    make(chan struct{}),
		snapshot: make(chan chan []Entry),
		stop:     make(chan struct{}),
		chain:    NewChain(),
		logger:   DefaultLogger,
		location: time.Local,
		parser:   standardParser,
		clock:    clock.Process(),
	}
	for _, opt := range opts {
		opt(c)
	}
	c.resync = make(chan struct{}, 1)
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
	case isNilJob(cmd):
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
	policy, err := c.policyOf(cmd, spec)
	if err != nil {
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
		c.observers.emit(c.jobAdded(name, policy))
	}
	if c.running {
		c.add <- e
	} else {
		c.entries = append(c.entries, e)
	}
	if c.coord != nil {
		c.coord.rec.queueSpec(name, spec, false)
	}
	return e.ID, nil
}

// Entries returns a copy of the entries. While the Cron runs they are in the
// order they will next run, entries that never run again last.
func (c *Cron) Entries() []Entry {
	c.runningMu.Lock()
	defer c.runningMu.Unlock()
	if c.running {
		reply := make(chan []Entry, 1)
		c.snapshot <- reply
		return <-reply
	}
	return c.entrySnapshot()
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
// again. A run in progress is not interrupted. An unknown ID is ignored.
// When Remove returns, the entry's job name is free for another job.
func (c *Cron) Remove(id EntryID) {
	c.runningMu.Lock()
	defer c.runningMu.Unlock()
	if c.running {
		c.remove <- id
		<-c.acked
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
	c.running = true
	if c.coord != nil {
		c.coord.start()
	}
	go c.run()
}

// Run runs the scheduler in the calling goroutine until Stop is called. It
// returns at once if the scheduler runs already.
func (c *Cron) Run() {
	c.runningMu.Lock()
	if c.running {
		c.runningMu.Unlock()
		return
	}
	c.running = true
	if c.coord != nil {
		c.coord.start()
	}
	c.runningMu.Unlock()
	c.run()
}

// Stop stops the scheduler if it runs; no run starts after Stop returns.
// Runs already in progress go on: the returned context is done once every
// run has returned, at once if none is in progress. Stop never waits for
// them itself, so a caller chooses how long to wait, for example:
//
//	select {
//	case <-c.Stop().Done():
//	case <-time.After(grace):
//	}
//
// A Cron coordinated through a client of the caller's (WithEtcd,
// WithElector) uses it a moment longer, to record the runs and revoke its
// session: the context is done once it no longer does, so that the caller
// may close the client then.
func (c *Cron) Stop() context.Context {
	idle, done := c.stopLocked()
	if done == nil {
		return idle
	}
	// A client given with WithEtcd or WithElector is the caller's, who may
	// close it once the context is done: so it ends only once the
	// coordination's own work (the runs' records, the session's
	// revocation) is done with the client too.
	return bothDone(idle, done)
}

// stopLocked stops the run loop and the coordination, and returns the
// context of the runs in progress and, when coordinated, the channel that
// closes once the coordination's work has ended.
func (c *Cron) stopLocked() (context.Context, <-chan struct{}) {
	c.runningMu.Lock()
	defer c.runningMu.Unlock()
	if c.running {
		c.stop <- struct{}{}
		<-c.acked
		c.running = false
	}
	idle := c.jobWaiter.idle()
	if c.coord == nil {
		return idle, nil
	}
	done := c.coord.stop()
	if c.coord.ownsClient {
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

// requestResync asks the run loop to recompute every entry's next run from
// now, as when this replica starts or stops leading. It never blocks.
func (c *Cron) requestResync() {
	select {
	case c.resync <- struct{}{}:
	default:
	}
}

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

func (c *Cron) entrySnapshot() []Entry {
	out := make([]Entry, len(c.entries))
	for i, e := range c.entries {
		out[i] = *e
	}
	return out
}

func (c *Cron) removeEntry(id EntryID) {
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.ID != id {
			kept = append(kept, e)
			continue
		}
		c.names.release(e.name)
		if c.coord != nil {
			c.coord.rec.queueSpec(e.name, e.spec, true)
			c.coord.claims.fired.forget(e.name)
		}
	}
	clear(c.entries[len(kept):])
	c.entries = kept
}
