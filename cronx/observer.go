package cronx

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Observer receives the events of a Cron: jobs added, runs started and
// ended, ticks not run and why, leadership gained and lost, the etcd session
// lost and regained, etcd refusing writes and accepting them again, etcd
// found empty. Each field is optional; a nil one ignores its
// events. The metrics package builds Prometheus metrics on an Observer.
//
// An observer cannot slow the scheduler. Each observer given to
// WithObserver has a queue of QueueSize events (DefaultObserverQueue when
// not above zero) and a goroutine of its own that calls its functions one
// at a time, in the order the events happened on this replica, while
// events wait, and yields to the runs after each. When an observer is so
// slow that its queue is full, further events are dropped, never waited
// for: OnDropped, when set, is then told how many, before the next event it
// gets. An event it has no function for is neither queued nor dropped. The goroutine ends once the queue is empty, so none outlives the
// events of a stopped Cron.
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
			c.observers = append(c.observers, newObserverQueue(o))
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
	o       Observer
	size    int
	dropped atomic.Int64 // dropped in all

	mu      sync.Mutex
	items   []func() // the calls of the observer's functions, in order
	pending int      // dropped and not yet told to OnDropped
	running bool     // a goroutine delivers
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
	if call == nil {
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
			if dropped > 0 && q.o.OnDropped != nil {
				// Told without the goroutine: a push meanwhile starts another.
				q.o.OnDropped(dropped)
			}
			return
		}
		call := q.items[0]
		q.items[0] = nil
		q.items = q.items[1:]
		q.mu.Unlock()
		if dropped > 0 && q.o.OnDropped != nil {
			q.o.OnDropped(dropped)
		}
		call()
		// Runs that are starting go first: an observer's work may wait,
		// a run's start may not.
		runtime.Gosched()
	}
}

// call returns the call of o's function for ev, nil when o has none.
func (o *Observer) call(ev any) func() {
	switch ev := ev.(type) {
	case JobAdded:
		return bind(o.OnJobAdded, ev)
	case RunStarted:
		return bind(o.OnRunStarted, ev)
	case RunEnded:
		return bind(o.OnRunEnded, ev)
	case TickNotRun:
		return bind(o.OnTickNotRun, ev)
	case leadershipGained:
		return bind(o.OnLeadershipGained, Leadership(ev))
	case leadershipLost:
		return bind(o.OnLeadershipLost, Leadership(ev))
	case sessionLost:
		return bind(o.OnSessionLost, Session(ev))
	case sessionRegained:
		return bind(o.OnSessionRegained, Session(ev))
	case etcdRefused:
		return bind(o.OnEtcdRefused, EtcdRefusal(ev))
	case etcdAccepted:
		return bind(o.OnEtcdAccepted, EtcdRefusal(ev))
	case EtcdEmpty:
		return bind(o.OnEtcdEmpty, ev)
	}
	return nil
}

// bind is f called with ev, nil when f is nil.
func bind[E any](f func(E), ev E) func() {
	if f == nil {
		return nil
	}
	return func() { f(ev) }
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
