package election

import (
	"context"
	"errors"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Errors of the mutex.
var (
	// ErrLocked means TryLock found the lock held or waited for.
	ErrLocked = errors.New("election: lock is held by another holder")
	// ErrNotLocked means Unlock was called on a Mutex that does not hold its lock.
	ErrNotLocked = errors.New("election: mutex is not locked")
	// ErrAlreadyLocked means Lock or TryLock was called on a Mutex that holds
	// its lock already; a Mutex is not reentrant.
	ErrAlreadyLocked = errors.New("election: mutex is already locked by this holder")
	// ErrLockLost means the holder's key was deleted or replaced while its
	// session lived: another holder may have the lock since.
	ErrLockLost = errors.New("election: lock lost")
)

// Mutex is a distributed lock on P/lock/<name>, laid out as etcd's
// concurrency.Mutex on that prefix, so `etcdctl lock` and concurrency.Mutex
// holders exclude baton holders and the reverse.
//
// Each hold has a session of its own, granted by Lock and revoked by Unlock:
// two Mutex values in one process are two holders and exclude each other. A
// Mutex is safe for concurrent use, but holds one lock at a time.
type Mutex struct {
	client *clientv3.Client
	name   string
	prefix string // P/lock/<name>/
	opts   *options

	// turn admits one Lock or TryLock at a time. mu guards sess, fence and
	// hold and is never held across a round trip, so Fence, Context and
	// Owned answer while a Lock waits.
	turn  chan struct{}
	mu    sync.Mutex
	sess  *Session
	fence Fence
	// hold is done when the hold ends (holdContext); release ends it.
	hold    context.Context
	release context.CancelCauseFunc
}

// NewMutex returns a mutex for the lock name. It validates its arguments and
// does no I/O.
func NewMutex(client *clientv3.Client, name string, opts ...Option) (*Mutex, error) {
	if client == nil {
		return nil, errNilClient
	}
	if err := checkName("lock", name); err != nil {
		return nil, err
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Mutex{client: client, name: name, prefix: o.prefix + "/lock/" + name + "/", opts: o, turn: make(chan struct{}, 1)}, nil
}

// Lock blocks until the lock is held or ctx is done. When ctx ends first,
// Lock withdraws from the queue and returns ctx's error.
func (m *Mutex) Lock(ctx context.Context) error {
	return m.acquire(ctx, true)
}

// TryLock takes the lock if nobody holds or waits for it, and returns
// ErrLocked otherwise. ctx bounds the round trips.
func (m *Mutex) TryLock(ctx context.Context) error {
	return m.acquire(ctx, false)
}

func (m *Mutex) acquire(ctx context.Context, wait bool) error {
	select {
	case m.turn <- struct{}{}:
		defer func() { <-m.turn }()
	case <-ctx.Done():
		return fmt.Errorf("election: lock %q: %w", m.name, ctx.Err())
	}
	m.mu.Lock()
	last, lastHold := m.sess, m.hold
	m.mu.Unlock()
	if last != nil {
		if lastHold.Err() == nil {
			return fmt.Errorf("lock %q: %w", m.name, ErrAlreadyLocked)
		}
		// The last hold was lost, but its lease, and the key on it, may live
		// on the server until the TTL runs out and would queue ahead of this
		// hold: revoke it first.
		last.Close(ctx)
		m.mu.Lock()
		if m.sess == last {
			m.release(ErrSessionClosed)
			m.sess, m.fence, m.hold, m.release = nil, Fence{}, nil, nil
		}
		m.mu.Unlock()
	}
	sess, err := newSession(ctx, m.client, m.opts)
	if err != nil {
		return fmt.Errorf("election: lock %q: %w", m.name, err)
	}
	fence, err := m.enqueue(ctx, sess, wait)
	if err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.opts.ttl)
		sess.Close(cctx)
		cancel()
		return err
	}
	hold, release := holdContext(sess, m.client, fence, fence.Revision, ErrLockLost)
	m.mu.Lock()
	m.sess, m.fence, m.hold, m.release = sess, fence, hold, release
	m.mu.Unlock()
	m.opts.logger.Info("baton: locked", "lock", m.name, "identity", m.opts.identity, "fence", fence.Revision)
	return nil
}

func (m *Mutex) enqueue(ctx context.Context, sess *Session, wait bool) (Fence, error) {
	// Waiting ends when the session is lost, too.
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(sess.Context(), func() { cancel(context.Cause(sess.Context())) })
	defer stop()

	var w *queueWatch
	if wait {
		var err error
		if w, err = openQueueWatch(wctx, m.client, m.prefix); err != nil {
			return Fence{}, fmt.Errorf("election: lock %q: %w", m.name, err)
		}
		defer w.close()
	}
	key := fmt.Sprintf("%s%x", m.prefix, int64(sess.Lease()))
	rev, err := putKey(wctx, m.client, key, m.opts.identity, sess.Lease())
	if err != nil {
		return Fence{}, fmt.Errorf("election: lock %q: %w", m.name, err)
	}
	f := Fence{Key: key, Revision: rev}
	if !wait {
		resp, err := m.client.Get(wctx, m.prefix, append(clientv3.WithFirstCreate(), clientv3.WithKeysOnly())...)
		if err != nil {
			return Fence{}, fmt.Errorf("election: lock %q: %w", m.name, err)
		}
		if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != rev {
			return Fence{}, fmt.Errorf("lock %q: %w", m.name, ErrLocked)
		}
		return f, nil
	}
	if err := w.waitPredecessors(wctx, rev); err != nil {
		if cause := context.Cause(wctx); cause != nil && ctx.Err() == nil {
			err = cause // the session was lost while waiting
		}
		return Fence{}, fmt.Errorf("election: lock %q: %w", m.name, err)
	}
	return f, nil
}

// Unlock releases the lock: it deletes the holder's key, so the next waiter
// gets the lock at once, and revokes the hold's session. It returns
// ErrNotLocked if the Mutex does not hold the lock. ctx bounds the round
// trips. Once it returns, the hold no longer uses the client (its watch of
// its key has ended), which may then be closed.
func (m *Mutex) Unlock(ctx context.Context) error {
	m.mu.Lock()
	sess, f, release := m.sess, m.fence, m.release
	m.sess, m.fence, m.hold, m.release = nil, Fence{}, nil, nil
	m.mu.Unlock()
	if sess == nil {
		return fmt.Errorf("lock %q: %w", m.name, ErrNotLocked)
	}
	// Ended before the key's deletion, which is not a loss.
	release(ErrSessionClosed)
	_, derr := m.client.Txn(ctx).If(f.Cmp()).Then(clientv3.OpDelete(f.Key)).Commit()
	cerr := sess.Close(ctx)
	if derr != nil {
		return fmt.Errorf("election: unlock %q: %w", m.name, derr)
	}
	if cerr != nil {
		return fmt.Errorf("election: unlock %q: %w", m.name, cerr)
	}
	m.opts.logger.Info("baton: unlocked", "lock", m.name, "identity", m.opts.identity)
	return nil
}

// Fence identifies the current hold; its Revision is the fencing token. It is
// zero when the Mutex holds nothing.
func (m *Mutex) Fence() Fence {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fence
}

// Context is done when the current hold ends: at its session's safe
// deadline, when its lease is lost, when its key is deleted or replaced
// (ErrLockLost), or on Unlock. Work done under the lock should run under it.
// Without a hold it returns a done context.
func (m *Mutex) Context() context.Context {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sess == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(ErrNotLocked)
		return ctx
	}
	return m.hold
}

// Owned reads etcd and reports whether this Mutex holds the lock now.
func (m *Mutex) Owned(ctx context.Context) (bool, error) {
	f := m.Fence()
	if f.Key == "" {
		return false, nil
	}
	resp, err := m.client.Get(ctx, m.prefix, append(clientv3.WithFirstCreate(), clientv3.WithKeysOnly())...)
	if err != nil {
		return false, fmt.Errorf("election: lock %q: %w", m.name, err)
	}
	return len(resp.Kvs) == 1 && string(resp.Kvs[0].Key) == f.Key && resp.Kvs[0].CreateRevision == f.Revision, nil
}

// Holder returns who holds the lock name under prefix, as a Leader (Identity
// is the holder's, Since is zero), or ErrNoLeader when nobody holds it.
func Holder(ctx context.Context, client *clientv3.Client, prefix, name string) (Leader, error) {
	if client == nil {
		return Leader{}, errNilClient
	}
	if err := checkName("lock", name); err != nil {
		return Leader{}, err
	}
	l, err := currentLeader(ctx, client, prefix+"/lock/"+name+"/")
	if err != nil {
		return Leader{}, err
	}
	return l, nil
}
