package election

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Errors of the election.
var (
	// ErrNoLeader means nobody leads the election now.
	ErrNoLeader = errors.New("election: no leader")
	// ErrLeadershipLost means a term ended without the leader resigning: its
	// key was deleted or its session was lost.
	ErrLeadershipLost = errors.New("election: leadership lost")
	// ErrClientClosed means the etcd client was closed under a running call.
	ErrClientClosed = errors.New("election: etcd client closed")
	// errResigned is the cause of a term's context after a resignation.
	errResigned = errors.New("election: resigned")
)

// Term is one period of leadership of one instance.
type Term struct {
	Fence
	// Election is the election's name.
	Election string
	// Identity is the leader's identity.
	Identity string
	// Lease is the leader's session lease; the leader key is attached to it.
	Lease clientv3.LeaseID
	// Since is when, by the leader's clock, it was elected.
	Since time.Time
	// Elected is the etcd revision at which the leadership was recorded:
	// every write made under an earlier term (UnderTerm) is at or before
	// it, and every write of this term after it.
	Elected int64
}

// Leader describes who leads an election, as any observer sees it.
type Leader struct {
	// Identity is the leader's identity (the raw value for a candidate that is
	// not baton, such as `etcdctl elect`).
	Identity string
	// Since is when the leader was elected, by its own clock; zero when the
	// leader did not record it.
	Since time.Time
	// Fence is the leader's key and create revision; its Key is empty when
	// there is no leader.
	Fence Fence
}

// None reports whether l stands for "no leader".
func (l Leader) None() bool { return l.Fence.Key == "" }

// Elector is a candidate in the election P/election/<name>. The key layout is
// that of etcd's concurrency.Election on that prefix, so baton, etcdctl elect
// and concurrency.Election candidates compete as equals.
type Elector struct {
	client *clientv3.Client
	name   string
	prefix string // P/election/<name>/
	opts   *options
}

// New returns a candidate for the election name. It validates its arguments
// and does no I/O; Run campaigns.
func New(client *clientv3.Client, name string, opts ...Option) (*Elector, error) {
	if client == nil {
		return nil, errNilClient
	}
	if err := checkName("election", name); err != nil {
		return nil, err
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	return &Elector{client: client, name: name, prefix: o.prefix + "/election/" + name + "/", opts: o}, nil
}

// Name is the election's name.
func (e *Elector) Name() string { return e.name }

// Client is the etcd client the candidate campaigns with.
func (e *Elector) Client() *clientv3.Client { return e.client }

// Prefix is the key prefix P under which the election lives.
func (e *Elector) Prefix() string { return e.opts.prefix }

// TTL is the candidate's session TTL.
func (e *Elector) TTL() time.Duration { return e.opts.ttl }

// Identity is this candidate's identity.
func (e *Elector) Identity() string { return e.opts.identity }

// Run campaigns until ctx is done. Each time the candidate is elected it calls
// lead with the term and a context that is done when the term ends: at the
// session's safe deadline, when the leader key is deleted, or when ctx is
// done. lead must return when its context is done.
//
// After a lost term or session, Run campaigns again on a fresh session, with
// backoff while etcd is unreachable. If lead returns while its term is
// current, Run resigns and returns nil. When ctx is done Run resigns, revokes
// its session and returns ctx.Err(); nothing it started outlives it.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context, term Term)) error {
	if lead == nil {
		return errors.New("election: Run with a nil lead function")
	}
	failures := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.client.Ctx().Err() != nil {
			return ErrClientClosed
		}
		// Bound the grant: the client waits for a connection by default, and
		// Run must log and back off while etcd is unreachable.
		gctx, gcancel := context.WithTimeout(ctx, e.opts.ttl)
		sess, err := newSession(gctx, e.client, e.opts)
		gcancel()
		if err != nil {
			if errors.Is(err, ErrTTLBelowMinimum) {
				return err
			}
			if ctx.Err() == nil {
				e.opts.logger.Warn("baton: cannot start a session", "election", e.name, "err", err)
			}
			failures++
			if !e.pause(ctx, failures) {
				return ctx.Err()
			}
			continue
		}
		done, err := e.term(ctx, sess, lead)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.ttl)
		sess.Close(cctx)
		cancel()
		if done {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.opts.logger.Info("baton: campaigning again", "election", e.name, "cause", err)
		if err != nil && !errors.Is(err, ErrLeadershipLost) {
			failures++
		} else {
			failures = 0
		}
		if !e.pause(ctx, failures) {
			return ctx.Err()
		}
	}
}

// pause sleeps for an exponential, jittered backoff after n failures in a
// row (none after zero), and reports false if ctx ended first.
func (e *Elector) pause(ctx context.Context, n int) bool {
	if n == 0 {
		return ctx.Err() == nil
	}
	d := 100 * time.Millisecond << min(n-1, 6)
	d = min(d, e.opts.ttl)
	d = d/2 + rand.N(d/2+1)
	t := e.opts.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// term campaigns on sess and, once elected, runs lead. It reports whether
// lead returned while leading (so Run ends), and why the term ended.
func (e *Elector) term(ctx context.Context, sess *Session, lead func(context.Context, Term)) (bool, error) {
	// Everything in this term is bound to both the caller and the session.
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(sess.Context(), func() { cancel(context.Cause(sess.Context())) })
	defer stop()

	w, err := openQueueWatch(tctx, e.client, e.prefix)
	if err != nil {
		return false, err
	}
	defer w.close()
	key := fmt.Sprintf("%s%x", e.prefix, int64(sess.Lease()))
	rev, err := putKey(tctx, e.client, key, encodeValue(e.opts.identity, time.Time{}), sess.Lease())
	if err != nil {
		return false, err
	}
	if err := w.waitPredecessors(tctx, rev); err != nil {
		return false, err
	}
	w.close()
	since := e.opts.clock.Now()
	resp, err := e.client.Txn(tctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
		Then(clientv3.OpPut(key, encodeValue(e.opts.identity, since), clientv3.WithLease(sess.Lease()))).
		Commit()
	if err != nil {
		return false, fmt.Errorf("election: record leadership: %w", err)
	}
	if !resp.Succeeded {
		return false, ErrLeadershipLost
	}
	t := Term{
		Fence:    Fence{Key: key, Revision: rev}, // mutation:term-fence
		Election: e.name,
		Identity: e.opts.identity,
		Lease:    sess.Lease(),
		Since:    since,
		Elected:  resp.Header.Revision,
	}
	e.opts.logger.Info("baton: elected", "election", e.name, "identity", t.Identity, "fence", rev)

	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		if err := watchOwnKey(tctx, e.client, t.Fence, resp.Header.Revision, ErrLeadershipLost); err != nil {
			cancel(err)
		}
	}()
	lead(tctx, t)
	stillLeading := tctx.Err() == nil
	cause := context.Cause(tctx)
	cancel(errResigned)
	<-watchDone

	// Resign: delete the key so the next candidate is elected at once.
	if e.client.Ctx().Err() != nil {
		return stillLeading, ErrClientClosed
	}
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.ttl)
	_, rerr := e.client.Txn(rctx).If(t.Cmp()).Then(clientv3.OpDelete(key)).Commit() // mutation:resign
	rcancel()
	if rerr != nil {
		e.opts.logger.Warn("baton: resign failed; the lease will expire instead", "election", e.name, "err", rerr)
	} else {
		e.opts.logger.Info("baton: resigned", "election", e.name, "identity", t.Identity)
	}
	if stillLeading {
		return true, nil
	}
	return false, cause
}

// putKey creates key with the lease unless it exists, and returns its create
// revision.
func putKey(ctx context.Context, client *clientv3.Client, key, val string, lease clientv3.LeaseID) (int64, error) {
	resp, err := client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, val, clientv3.WithLease(lease))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("election: create %s: %w", key, err)
	}
	if resp.Succeeded {
		return resp.Header.Revision, nil
	}
	return resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision, nil
}

// queueWatch watches an election or lock prefix for deletions. It is
// opened before the candidate reads who is ahead of it, so no deletion after
// that read is missed, and early, because a watch that starts at a past
// revision can lag behind for a while on the server.
type queueWatch struct {
	client *clientv3.Client
	prefix string
	ctx    context.Context
	cancel context.CancelFunc
	ch     clientv3.WatchChan
}

// openQueueWatch starts the watch and returns once the server has created
// it. It retries until ctx ends.
func openQueueWatch(ctx context.Context, client *clientv3.Client, prefix string) (*queueWatch, error) {
	w := &queueWatch{client: client, prefix: prefix}
	for {
		w.ctx, w.cancel = context.WithCancel(clientv3.WithRequireLeader(ctx))
		w.ch = client.Watch(w.ctx, prefix, clientv3.WithPrefix(), clientv3.WithFilterPut(), clientv3.WithCreatedNotify())
		wr, ok := <-w.ch
		if ok && wr.Err() == nil && wr.Created {
			return w, nil
		}
		w.cancel()
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return nil, fmt.Errorf("election: watch %s: %w", prefix, context.Cause(ctx))
		}
	}
}

func (w *queueWatch) close() { w.cancel() }

// waitPredecessors returns once no key under the watch's prefix has a create
// revision below rev: the candidate is first in line. All it costs etcd
// while it waits is the one watch; a deletion wakes a candidate only to
// check a key name, and only the one right behind the deleted key reads.
func (w *queueWatch) waitPredecessors(ctx context.Context, rev int64) error {
	opts := append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(rev-1), clientv3.WithKeysOnly())
	for {
		resp, err := w.client.Get(ctx, w.prefix, opts...)
		if err != nil {
			// A brief loss of etcd's quorum must not cost the candidate its
			// place in line; the session's deadline ends the wait if it lasts.
			if !sleepCtx(ctx, 100*time.Millisecond) {
				return fmt.Errorf("election: read candidates: %w", err)
			}
			continue
		}
		if len(resp.Kvs) == 0 {
			return nil
		}
		if err := w.waitDelete(ctx, string(resp.Kvs[0].Key), resp.Header.Revision); err != nil {
			return err
		}
	}
}

// waitDelete returns when key is deleted after revision after, or when the
// watch had to be reopened (the caller then reads again).
func (w *queueWatch) waitDelete(ctx context.Context, key string, after int64) error {
	for {
		select {
		case wr, ok := <-w.ch:
			if !ok || wr.Err() != nil {
				w.cancel()
				nw, err := openQueueWatch(ctx, w.client, w.prefix)
				if err != nil {
					return err
				}
				*w = *nw
				return nil
			}
			for _, ev := range wr.Events {
				if string(ev.Kv.Key) == key && ev.Kv.ModRevision > after {
					return nil
				}
			}
		case <-ctx.Done():
			return fmt.Errorf("election: wait for %s: %w", key, context.Cause(ctx))
		}
	}
}

// watchOwnKey returns lost when the fence's key is deleted or replaced after
// revision rev, and nil when ctx ends.
func watchOwnKey(ctx context.Context, client *clientv3.Client, f Fence, rev int64, lost error) error {
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for wr := range client.Watch(wctx, f.Key, clientv3.WithRev(rev+1)) {
			if wr.Err() != nil {
				break
			}
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE || ev.Kv.CreateRevision != f.Revision {
					cancel()
					return lost
				}
			}
			rev = wr.Header.Revision
		}
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		// The watch broke (compaction, lost raft leader): check the key,
		// retrying until the session's deadline ends the term.
		gctx, gcancel := context.WithTimeout(ctx, time.Second)
		resp, err := client.Get(gctx, f.Key)
		gcancel()
		if err != nil {
			sleepCtx(ctx, 100*time.Millisecond)
			continue
		}
		if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != f.Revision {
			return lost
		}
		rev = resp.Header.Revision
	}
	return nil
}

// leaderValue is what a baton candidate stores in its key.
type leaderValue struct {
	ID    string    `json:"id"`
	Since time.Time `json:"since,omitzero"`
}

func encodeValue(id string, since time.Time) string {
	b, _ := json.Marshal(leaderValue{ID: id, Since: since})
	return string(b)
}

func decodeLeader(kv *mvccpb.KeyValue) Leader {
	l := Leader{Fence: Fence{Key: string(kv.Key), Revision: kv.CreateRevision}}
	var v leaderValue
	if json.Unmarshal(kv.Value, &v) == nil && v.ID != "" {
		l.Identity, l.Since = v.ID, v.Since
	} else {
		l.Identity = string(kv.Value)
	}
	return l
}

// Leader returns who leads the election now, or ErrNoLeader.
func (e *Elector) Leader(ctx context.Context) (Leader, error) {
	return currentLeader(ctx, e.client, e.prefix)
}

func currentLeader(ctx context.Context, client *clientv3.Client, prefix string) (Leader, error) {
	resp, err := client.Get(ctx, prefix, clientv3.WithFirstCreate()...)
	if err != nil {
		return Leader{}, fmt.Errorf("election: read leader: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return Leader{}, ErrNoLeader
	}
	return decodeLeader(resp.Kvs[0]), nil
}

// sleepCtx waits d, and reports false if ctx ended first. It paces retries
// against etcd, which run on real time whatever the clock.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
