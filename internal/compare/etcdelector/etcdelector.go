// Package etcdelector is a gocron v2 Elector on etcd, written the way a gocron
// user would write one: a plain concurrency.Election campaigned in the
// background, and IsLeader answering from what the campaign last learned.
//
// It uses etcd's concurrency package rather than baton's election package on
// purpose: the comparison asks what gocron users get from the usual tools,
// and baton's fenced leadership is the thing being compared against.
//
// Its limits are those of the pattern, kept on purpose: IsLeader reads a flag
// that the session clears only when its keepalive learns that the lease is
// gone, so a leader that was paused past its TTL believes it still leads
// until its first keepalive after waking; and nothing fences the job itself.
package etcdelector

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-co-op/gocron/v2"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// ErrNotLeader is IsLeader's answer on a replica that does not lead.
var ErrNotLeader = errors.New("etcdelector: not the leader")

// Elector campaigns for leadership of one election until Close.
type Elector struct {
	cli    *clientv3.Client
	prefix string
	id     string
	ttl    int

	leader atomic.Bool
	rev    atomic.Int64 // the leader key's create revision while leading

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ gocron.Elector = (*Elector)(nil)

// New starts campaigning on prefix as id, with sessions of ttl (whole
// seconds, at least one).
func New(cli *clientv3.Client, prefix, id string, ttl time.Duration) *Elector {
	ctx, cancel := context.WithCancel(context.Background())
	e := &Elector{cli: cli, prefix: prefix, id: id, ttl: max(1, int(ttl/time.Second)), cancel: cancel}
	e.wg.Add(1)
	go e.campaign(ctx)
	return e
}

// IsLeader returns nil while this replica leads, ErrNotLeader otherwise.
func (e *Elector) IsLeader(context.Context) error {
	if e.leader.Load() {
		return nil
	}
	return ErrNotLeader
}

// Fence is the leader key's create revision while this replica leads, 0
// otherwise. gocron never sees it; the ledger records it.
func (e *Elector) Fence() int64 { return e.rev.Load() }

// Close stops campaigning and, when leading, resigns so that another replica
// takes over at once instead of after the TTL.
func (e *Elector) Close() {
	e.cancel()
	e.wg.Wait()
}

func (e *Elector) campaign(ctx context.Context) {
	defer e.wg.Done()
	for ctx.Err() == nil {
		s, err := concurrency.NewSession(e.cli, concurrency.WithTTL(e.ttl))
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		el := concurrency.NewElection(s, e.prefix)
		if err := el.Campaign(ctx, e.id); err != nil {
			s.Close()
			sleep(ctx, time.Second)
			continue
		}
		e.rev.Store(el.Rev())
		e.leader.Store(true)
		select {
		case <-s.Done(): // the lease is gone: expired or revoked
		case <-ctx.Done():
		}
		e.leader.Store(false)
		e.rev.Store(0)
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = el.Resign(rctx)
		cancel()
		s.Close()
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
