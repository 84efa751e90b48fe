package cronx

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Observer receives the events of a Cron: jobs added, runs started and
// ended, ticks not run and why, leadership gained and lost, the etcd session
// lost and regained, etcd refusing writes and accepting them again, etcd
// found empty, a job's hook failed. Each field is optional; a nil one
// ignores its events. The metrics package builds Prometheus metrics on an Observer.
//
// An observer cannot slow the scheduler. Each observer given to
// WithObserver has a queue of QueueSize events (DefaultObserverQueue when
// not above zero) and a goroutine of its own that calls its functions one
// at a time, in the order the events happened on this replica, while
// events wait, and yields to the runs after each. When an observer is so
// slow that its queue is full, further events are dropped, never waited
// for: OnDropped, when set, is then told how many, before the next event it
// gets. An event it has no function for is neither queued nor dropped. The
// goroutine ends once the queue is empty, so none outlives the events of a
// stopped Cron. A function that panics does not end the program: the panic
// is logged as an error, with the function's name (OnRunStarted, ...) and
// the stack, once per event, and the observer gets the events that follow;
// every observer's OnObserverPanic is told (ObserverPanic), except of a
// panic of OnObserverPanic itself.
type Observer struct {
	OnJobAdded         func(JobAdded)
	OnRunStarted       func(RunStarted)
	OnRunEnded         func(RunEnded)
	OnTickNotRun       func(TickNotRun)
	OnLeadershipGained func(Leadership)
	OnLeadershipLost   func(Leadership)
	OnSessionLost      func(Session)
	OnSessionRegained  func(Session)
	OnEtcdRefused      func(EtcdRefusal)
	OnEtcdAccepted     func(EtcdRefusal)
	OnEtcdEmpty        func(EtcdEmpty)
	OnHookFailed       func(HookFailed)
	// OnBackfill is told each step of a backfill this replica runs
	// (BackfillProgress).
	OnBackfill func(BackfillProgress)
	// OnStartAsked is told of each run at start (WithRunAtStart) that this
	// replica asked for.
	OnStartAsked func(StartAsked)
	// OnTickBuffered is told a tick that waits for the run in progress
	// (BufferOne, BufferAll), by the replica that buffered it.
	OnTickBuffered func(TickBuffered)
	// OnJobEnded is told that a job reached its WithMaxRuns.
	OnJobEnded func(JobEnded)
	// OnJobOutcome is told a job's outcome (JobOutcome) each time this
	// replica records one of its runs, and etcd's at each Start.
	OnJobOutcome func(JobOutcome)
	// OnObserverPanic is told that a function of an observer of the Cron
	// panicked.
	OnObserverPanic func(ObserverPanic)
	// OnDropped is told the number of events dropped because the queue was
	// full since it was last called.
	OnDropped func(n int)
	// QueueSize is how many events may wait for the observer.
	QueueSize int
}

// DefaultObserverQueue is an observer's queue size when QueueSize is not
// above zero:
// a burst of ten thousand runs on one tick emits twice as many events.
const DefaultObserverQueue = 1 << 15

// WithObserver sends the Cron's events to each of obs, each through a queue
// of its own. It may be given more than once; the observers add up.
func WithObserver(obs ...Observer) Option {
	return func(c *Cron) {
		for _, o := range obs {
			q := newObserverQueue(o)
			// Read at a panic, once every option has been applied.
			q.logger = func() Logger { return c.logger }
			q.panicked = func(fn string) {
				ev := ObserverPanic{Function: fn}
				if c.coord != nil {
					ev.Scheduler = c.coord.name
				}
				c.observers.emit(ev)
			}
			c.observers = append(c.observers, q)
		}
	}
}

// observers are the queues of a Cron's observers.
type observers []*observerQueue

// emit queues ev for every observer; it never blocks.
func (obs observers) emit(ev any) {
	for _, q := range obs {
		q.push(ev)
	}
}

// observerQueue delivers events to one observer.
type observerQueue struct {
	o      Observer
	size   int
	logger func() Logger // where a panic of the observer is reported
	// panicked tells the Cron's observers of a panic of the function fn.
	panicked func(fn string)
	dropped  atomic.Int64 // dropped in all

	mu      sync.Mutex
	items   []observerCall // the calls of the observer's functions, in order
	pending int            // dropped and not yet told to OnDropped
	running bool           // a goroutine delivers
}

func newObserverQueue(o Observer) *observerQueue {
	size := o.QueueSize
	if size <= 0 {
		size = DefaultObserverQueue
	}
	return &observerQueue{o: o, size: size}
}

// push queues ev, or drops it when the queue is full. An event the
// observer has no function for takes no place in its queue.
func (q *observerQueue) push(ev any) {
	call := q.o.call(ev)
	if call.f == nil {
		return
	}
	q.mu.Lock()
	if len(q.items) >= q.size {
		q.pending++
		q.mu.Unlock()
		q.dropped.Add(1)
		return
	}
	q.items = append(q.items, call)
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start {
		go q.drain()
	}
}

// drain delivers queued events until none is left.
func (q *observerQueue) drain() {
	for {
		q.mu.Lock()
		dropped := q.pending
		q.pending = 0
		if len(q.items) == 0 {
			q.running = false
			q.items = nil // let a burst's backing array go
			q.mu.Unlock()
			// Told without the goroutine: a push meanwhile starts another.
			q.deliver(q.o.droppedCall(dropped))
			return
		}
		call := q.items[0]
		q.items[0] = observerCall{}
		q.items = q.items[1:]
		q.mu.Unlock()
		q.deliver(q.o.droppedCall(dropped))
		q.deliver(call)
		// Runs that are starting go first: an observer's work may wait,
		// a run's start may not.
		runtime.Gosched()
	}
}

// deliver makes call. A panic in it is reported and goes no further: the
// observer's goroutine goes on with the next event.
func (q *observerQueue) deliver(call observerCall) {
	if call.f == nil {
		return
	}
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		stack, err := panicked(p)
		logger := DefaultLogger
		if q.logger != nil {
			logger = q.logger()
		}
		logger.Error(fmt.Errorf("panic: %w", err), "cronx: an observer panicked; it gets the events that follow",
			"observer", call.name, "stack", stack)
		if q.panicked != nil && call.name != "OnObserverPanic" {
			q.panicked(call.name)
		}
	}()
	call.f()
}

// observerCall is the call of one of an Observer's functions.
type observerCall struct {
	name string // the function's field, for the log: "OnRunStarted"
	f    func() // nil when the observer has no function for the event
}

// call returns the call of o's function for ev.
func (o *Observer) call(ev any) observerCall {
	switch ev := ev.(type) {
	case JobAdded:
		return bind("OnJobAdded", o.OnJobAdded, ev)
	case RunStarted:
		return bind("OnRunStarted", o.OnRunStarted, ev)
	case RunEnded:
		return bind("OnRunEnded", o.OnRunEnded, ev)
	case TickNotRun:
		return bind("OnTickNotRun", o.OnTickNotRun, ev)
	case leadershipGained:
		return bind("OnLeadershipGained", o.OnLeadershipGained, Leadership(ev))
	case leadershipLost:
		return bind("OnLeadershipLost", o.OnLeadershipLost, Leadership(ev))
	case sessionLost:
		return bind("OnSessionLost", o.OnSessionLost, Session(ev))
	case sessionRegained:
		return bind("OnSessionRegained", o.OnSessionRegained, Session(ev))
	case etcdRefused:
		return bind("OnEtcdRefused", o.OnEtcdRefused, EtcdRefusal(ev))
	case etcdAccepted:
		return bind("OnEtcdAccepted", o.OnEtcdAccepted, EtcdRefusal(ev))
	case EtcdEmpty:
		return bind("OnEtcdEmpty", o.OnEtcdEmpty, ev)
	case HookFailed:
		return bind("OnHookFailed", o.OnHookFailed, ev)
	case StartAsked:
		return bind("OnStartAsked", o.OnStartAsked, ev)
	case TickBuffered:
		return bind("OnTickBuffered", o.OnTickBuffered, ev)
	case JobEnded:
		return bind("OnJobEnded", o.OnJobEnded, ev)
	case JobOutcome:
		return bind("OnJobOutcome", o.OnJobOutcome, ev)
	case BackfillProgress:
		return bind("OnBackfill", o.OnBackfill, ev)
	case ObserverPanic:
		return bind("OnObserverPanic", o.OnObserverPanic, ev)
	}
	return observerCall{}
}

// droppedCall is the call of o.OnDropped with n, none when n is 0.
func (o *Observer) droppedCall(n int) observerCall {
	if n == 0 {
		return observerCall{}
	}
	return bind("OnDropped", o.OnDropped, n)
}

// bind is f, named name, called with ev; no call when f is nil.
func bind[E any](name string, f func(E), ev E) observerCall {
	if f == nil {
		return observerCall{}
	}
	return observerCall{name: name, f: func() { f(ev) }}
}

// ObserverPanic is a function of one of a Cron's observers that panicked,
// named as its field is (OnRunEnded, ...); the panic and its stack are in
// the log.
type ObserverPanic struct {
	Scheduler string // empty for a Cron without etcd
	Function  string
}

// The events that share a type with their opposite, told apart in a queue.
type (
	leadershipGained Leadership
	leadershipLost   Leadership
	sessionLost      Session
	sessionRegained  Session
	etcdRefused      EtcdRefusal
	etcdAccepted     EtcdRefusal
)
