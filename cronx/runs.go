package cronx

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Why a run that had not started gives up: the cause of its context.
var (
	errStopped = errors.New("cronx: the Cron stopped before the run started")
	errRemoved = errors.New("cronx: the job was removed before the run started")
)

// ErrShutdown is the cause of the context of a run still going when the
// context given to Shutdown ended: context.Cause(ctx) returns it.
var ErrShutdown = errors.New("cronx: shut down")

// stage is how far a run has come. A run moves forward, through runs,
// which decides each step against Stop, Remove and Shutdown.
type stage int

const (
	// stageFired: the run waits for its jitter, its turn (a Forbid trigger) or
	// a slot to send its claim in; nothing of it is in etcd.
	stageFired stage = iota
	// stageSent: its claim is on the wire.
	stageSent
	// stageClaimed: its claim holds, and it waits for the run it replaces.
	stageClaimed
	// stageStarted: its job runs, or has run and is being recorded.
	stageStarted
)

// runs holds every run of a Cron from the moment it fires until it has been
// recorded, and is the one place where a run's life meets Stop, Remove and
// Shutdown:
//
//   - Stop gives up every run that has not started (its claim, if it has
//     one, is given back), waits a round trip for the claims on the wire,
//     whose runs start if they hold, and from then on lets no run start;
//   - Remove gives up the job's runs that have not started;
//   - Shutdown, once its context ends, cancels the runs that started.
//
// Its mutex guards the set and every run's stage; a run's goroutine moves
// its run on only through the methods below.
type runs struct {
	mu       sync.Mutex
	live     map[*run]struct{}
	ofEntry  map[EntryID][]*run // the runs of live by their job's entry
	liveHigh int                // the most runs in live since it was made, which its buckets keep room for
	records  int                // runs ended and not yet recorded
	stopping bool               // Stop came: no run starts that had not
	removing int                // live runs Remove gave up, which a reload fires again (awaitRemoved)
	// The calls of Shutdown from inside this Cron's jobs, whose runs it
	// does not wait for: those whose context names the run, and those
	// known only to come from inside a job.
	callers map[*run]int
	unnamed int

	changed chan struct{}        // closed at the next change, once a wait has it (changes)
	watched bool                 // changed was handed to a wait
	idlers  []context.CancelFunc // contexts of Stop, done when nothing is left
	// hooks are the contexts of the hooks being called (hooks.go), which
	// Shutdown ends as it does the runs that started.
	hooks       map[*context.CancelCauseFunc]struct{}
	interrupted bool // Shutdown's context ended: a hook called from now on starts ended
}

func newRuns() *runs {
	return &runs{live: map[*run]struct{}{}, ofEntry: map[EntryID][]*run{}, changed: make(chan struct{})}
}

// fire takes r in. It reports false, and takes nothing, once Stop came.
func (rs *runs) fire(r *run) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.stopping {
		return false
	}
	rs.live[r] = struct{}{}
	rs.ofEntry[r.job.entry] = append(rs.ofEntry[r.job.entry], r) // mutation:runs-of-entry
	rs.liveHigh = max(rs.liveHigh, len(rs.live))
	if r.term != nil && r.term.ctx.Err() != nil { // mutation:fired-after-its-term
		r.cancel(context.Cause(r.term.ctx)) // its term ended before abandonTerm could see it
	}
	return true
}

// restart lets runs fire again after Stop, for a Cron started again.
func (rs *runs) restart() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.stopping, rs.interrupted = false, false
}

// send moves r to sent before its claim goes out, and reports false if r
// was given up meanwhile: the claim is then not sent.
func (rs *runs) send(r *run) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r.ctx.Err() != nil {
		return false
	}
	rs.move(r, stageSent)
	return true
}

// unsend moves r back from sent to fired: its claim came back without
// holding, and it waits again (its turn, or etcd).
func (rs *runs) unsend(r *run) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r.stage == stageSent {
		rs.move(r, stageFired)
	}
}

// hold moves r, whose claim holds, on: to started, or to claimed when it
// must wait for the run it replaces first. It reports false if r was given
// up meanwhile (its claim is to be given back), and gives up a run that
// would wait while Stop is under way, since it could not start before
// Stop returns.
func (rs *runs) hold(r *run, wait bool) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	switch {
	case r.ctx.Err() != nil: // mutation:late-claim
	case wait && rs.stopping:
		r.cancel(errStopped)
	case wait:
		rs.move(r, stageClaimed)
		return true
	default:
		rs.move(r, stageStarted)
		return true
	}
	rs.notify()
	return false
}

// start moves r from claimed to started, once the run it replaces has
// ended, and reports false if r was given up meanwhile.
func (rs *runs) start(r *run) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r.ctx.Err() != nil {
		return false
	}
	rs.move(r, stageStarted)
	return true
}

// end lets r go: it did not start, or its record is queued (recorded
// counts that).
func (rs *runs) end(r *run) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.live, r)
	rs.unindex(r)
	if n := len(rs.live); rs.liveHigh > shrinkFloor && n < rs.liveHigh/4 {
		// A map keeps the buckets of its largest size: a crowded tick's
		// would stay for good.
		live := make(map[*run]struct{}, n)
		for r := range rs.live {
			live[r] = struct{}{}
		}
		ofEntry := make(map[EntryID][]*run, len(rs.ofEntry))
		for id, of := range rs.ofEntry {
			ofEntry[id] = of
		}
		rs.live, rs.ofEntry, rs.liveHigh = live, ofEntry, n
	}
	if r.removed {
		rs.removing--
	}
	rs.notify()
	rs.wakeIdlers()
}

// unindex drops r from ofEntry. rs.mu is held.
func (rs *runs) unindex(r *run) {
	of := rs.ofEntry[r.job.entry]
	for i, q := range of {
		if q == r {
			of[i] = of[len(of)-1]
			of[len(of)-1] = nil
			of = of[:len(of)-1]
			break
		}
	}
	if len(of) == 0 {
		delete(rs.ofEntry, r.job.entry)
		return
	}
	rs.ofEntry[r.job.entry] = of
}

// queued counts the ended runs queued for their record (n > 0), and those
// recorded (n < 0).
func (rs *runs) queued(n int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.records += n
	if n < 0 {
		rs.notify()
		rs.wakeIdlers()
	}
}

// begin marks r's job called, and reports false for a retry once Stop
// came: the first call of a run that started is Stop's to wait for, and no
// job is called after Stop returns.
func (rs *runs) begin(r *run) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r.called && rs.stopping {
		return false
	}
	r.called, r.inJob = true, true
	rs.notify()
	return true
}

// returning marks r's job returned.
func (rs *runs) returning(r *run) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r.inJob = false
	rs.notify()
}

// shutdownInside counts a call of Shutdown from inside one of this Cron's
// jobs (d +1) and its return (d -1): from inside r's job, or, with r nil,
// from inside a job that the call's context does not name. The run that
// calls it cannot end while it waits.
func (rs *runs) shutdownInside(r *run, d int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r == nil { // mutation:shutdown-caller-named
		rs.unnamed += d
	} else {
		if rs.callers == nil {
			rs.callers = map[*run]int{}
		}
		if rs.callers[r] += d; rs.callers[r] == 0 {
			delete(rs.callers, r)
		}
	}
	rs.notify()
}

// settled reports whether every run has ended and been recorded, but
// those calling Shutdown, and no hook is being called; the caller holds mu.
func (rs *runs) settled() bool {
	return rs.records == 0 && rs.count(func(*run) bool { return true }) <= rs.unnamed && len(rs.hooks) == 0
}

// returned reports whether every job has returned, but those calling
// Shutdown, and every hook: no run has started that is yet to call its job
// or is in it, and no hook is being called. The caller holds mu.
func (rs *runs) returned() bool {
	return rs.count(func(r *run) bool { return r.stage == stageStarted && (r.inJob || !r.called) }) <= rs.unnamed &&
		len(rs.hooks) == 0 // mutation:shutdown-awaits-hooks
}

// count counts the live runs that match and call no Shutdown named by its
// context; the caller holds mu.
func (rs *runs) count(match func(*run) bool) int {
	n := 0
	for r := range rs.live {
		if rs.callers[r] == 0 && match(r) {
			n++
		}
	}
	return n
}

// await waits until cond, called with mu held, is true or ctx ends, and
// reports whether cond came true.
func (rs *runs) await(ctx context.Context, cond func() bool) bool {
	for {
		rs.mu.Lock()
		ok, changed := cond(), rs.changes()
		rs.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// unrecorded is how many ended runs are not recorded yet.
func (rs *runs) unrecorded() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.records
}

// move sets r's stage; the caller holds mu.
func (rs *runs) move(r *run, s stage) {
	r.stage = s
	rs.notify()
}

// notify wakes the waits on a change (changes); the caller holds mu. A
// change nobody waits for, as most of a crowded tick's are, makes no
// channel.
func (rs *runs) notify() {
	if rs.watched {
		close(rs.changed)
		rs.changed, rs.watched = make(chan struct{}), false
	}
}

// changes returns the channel the next change closes; the caller holds mu.
func (rs *runs) changes() <-chan struct{} {
	rs.watched = true
	return rs.changed
}

// stop gives up every run that has not started and waits, up to d or ctx's
// end, until each run is either started or gone: the claims on the wire
// have come back (a run whose claim holds starts) and the claims of runs
// given up are given back. From then on no run starts.
func (rs *runs) stop(ctx context.Context, d time.Duration) {
	rs.mu.Lock()
	rs.stopping = true
	for r := range rs.live {
		if r.stage == stageFired || r.stage == stageClaimed { // mutation:stop-spares-started
			r.cancel(errStopped)
		}
	}
	rs.mu.Unlock()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		rs.mu.Lock()
		pending := 0
		for r := range rs.live {
			// A run that started is awaited until its job is called: no
			// job is called after Stop returns.
			if r.stage != stageStarted || !r.called { // mutation:stop-before-call
				pending++
			}
		}
		changed := rs.changes()
		rs.mu.Unlock()
		if pending == 0 {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			rs.giveUpUnstarted()
			return
		case <-deadline.C:
			rs.giveUpUnstarted()
			return
		}
	}
}

// giveUpUnstarted gives up every run that has not started: claims still on
// the wire are given back when they return.
func (rs *runs) giveUpUnstarted() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for r := range rs.live {
		if r.stage != stageStarted {
			r.cancel(errStopped)
		}
	}
}

// abandonTerm gives up with cause the runs of term ts that have not
// started: ts has ended, and its successor claims their ticks.
func (rs *runs) abandonTerm(ts *termState, cause error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for r := range rs.live {
		if r.term == ts && r.stage != stageStarted { // mutation:term-end-abandons
			r.cancel(cause)
		}
	}
}

// remove gives up the runs of entry id that have not started, and returns
// the earliest tick of the schedule among them, for a job added again
// under its name to fire again (reload.go); a caught-up or buffered tick is
// left to the catch-up and the buffer.
func (rs *runs) remove(id EntryID) (givenUp time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.ofEntry[id] {
		if r.stage != stageStarted {
			r.cancel(errRemoved)
			if !r.removed {
				r.removed = true
				rs.removing++
			}
			if r.scheduled() && !r.catchUp && r.buf == nil && (givenUp.IsZero() || r.tick.Before(givenUp)) {
				givenUp = r.tick
			}
		}
	}
	return givenUp
}

// removedTick reports whether a run of r's job and tick that Remove gave up
// is still live. rs.mu is held.
func (rs *runs) removedTick(r *run) bool {
	for o := range rs.live {
		if o.removed && o.job.name == r.job.name && o.tick.Equal(r.tick) && o.scheduled() {
			return true
		}
	}
	return false
}

// awaitRemoved waits, up to d, until no run of r's job and tick that Remove
// gave up is left: a job added again under its name (a reload) fires such a
// tick again, and its claim must come after the given-up run has given its
// claim back, or it would find the tick claimed, by this very replica.
//
// The deadline's timer is made, and the change channel taken, at the first
// wait: a crowded tick's runs, which wait for none, make no timer, and
// leave the channel untaken, so that their stages' changes make no new one
// (notify).
func (rs *runs) awaitRemoved(r *run, d time.Duration) {
	var deadline *time.Timer
	for {
		rs.mu.Lock()
		if rs.removing == 0 || !rs.removedTick(r) {
			rs.mu.Unlock()
			return
		}
		changed := rs.changes()
		rs.mu.Unlock()
		if deadline == nil {
			deadline = time.NewTimer(d) // real time: it waits for etcd
			defer deadline.Stop()
		}
		select {
		case <-changed:
		case <-deadline.C:
			return
		case <-r.ctx.Done():
			return
		}
	}
}

// interrupt cancels the runs that started, and the hooks being called,
// with ErrShutdown.
func (rs *runs) interrupt() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for r := range rs.live {
		if r.stage == stageStarted {
			r.cancel(ErrShutdown)
		}
	}
	for cancel := range rs.hooks {
		(*cancel)(ErrShutdown) // mutation:hook-shutdown
	}
	rs.interrupted = true
}

// hookCalled takes in the cancel function of a hook's context, for
// Shutdown, until the returned function is called; after Shutdown's
// context ended, it cancels it at once.
func (rs *runs) hookCalled(cancel context.CancelCauseFunc) (returned func()) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.interrupted {
		cancel(ErrShutdown)
	}
	if rs.hooks == nil {
		rs.hooks = map[*context.CancelCauseFunc]struct{}{}
	}
	key := &cancel
	rs.hooks[key] = struct{}{}
	return func() {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		delete(rs.hooks, key)
		rs.notify()
	}
}

// idle returns a context done once no run is left and every record is
// written: at once if none is now.
func (rs *runs) idle() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.live) == 0 && rs.records == 0 {
		cancel()
	} else {
		rs.idlers = append(rs.idlers, cancel)
	}
	return ctx
}

// wakeIdlers ends the idle contexts once nothing is left; the caller holds
// mu.
func (rs *runs) wakeIdlers() {
	if len(rs.live) > 0 || rs.records > 0 {
		return
	}
	for _, cancel := range rs.idlers {
		cancel()
	}
	rs.idlers = nil
}

// twin reports whether another run of r's job and tick than r has a claim
// on the wire or holding, and whether every such run's is on the wire.
func (rs *runs) twin(r *run) (twin, sent bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	sent = true
	for q := range rs.live {
		if q != r && q.job.name == r.job.name && q.tick.Equal(r.tick) && q.stage >= stageSent {
			twin = true
			sent = sent && q.stage == stageSent
		}
	}
	return twin, twin && sent
}

// unstartedOfATermBefore reports whether a run of entry's tick, fired under
// a term other than ts, has not started: a run its term's end gives up.
// Asked of every job at a new term, so it reads the entry's runs only.
func (rs *runs) unstartedOfATermBefore(entry EntryID, tick time.Time, ts *termState) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.ofEntry[entry] {
		if r.tick.Equal(tick) && r.scheduled() && r.term != nil && r.term != ts && r.stage != stageStarted {
			return true
		}
	}
	return false
}
