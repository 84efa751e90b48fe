package election

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// holdContext is the context of a hold of f, a key on sess's lease put at
// revision rev: done with the session, and when the key is deleted or
// replaced (etcdctl del, an operator's cleanup), with lost, wrapped to name
// the key, as its cause: a hold whose key is gone excludes nobody. A key
// deleted with its lease (revoked, or expired) ends the session instead,
// with ErrLeaseLost. The watch ends with the context; release ends the
// hold and returns once the watch has ended, so that a client closed after
// an Unlock is not in use.
func holdContext(sess *Session, client *clientv3.Client, f Fence, rev int64, lost error) (hold context.Context, release context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(sess.Context())
	lost = fmt.Errorf("%w: its key %s was deleted or replaced", lost, f.Key)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if err := watchOwnKey(ctx, client, f, rev, lost); err != nil {
			if leaseGone(ctx, client, sess.Lease()) {
				sess.lose(ErrLeaseLost)
			}
			cancel(err) // mutation:hold-key-unwatched
		}
	}()
	return ctx, func(cause error) {
		cancel(cause)
		<-watched // mutation:hold-watch-outlives-release
	}
}

// leaseGone reports whether etcd says the lease no longer exists; a lease
// whose state cannot be read within a second is taken to live.
func leaseGone(ctx context.Context, client *clientv3.Client, lease clientv3.LeaseID) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp, err := client.TimeToLive(ctx, lease)
	return err == nil && resp.TTL <= 0
}
