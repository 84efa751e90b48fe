package cronx

import (
	"context"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/leasepool"
)

// A replica's runners' leases are a pool (internal/leasepool), which tells
// which lease each in-progress marker and registration goes on: the
// markers one transaction of claims puts on one lease that held fewer than
// markerLeaseKeys when they were reserved (in claim mode
// claimMarkerLeaseKeys), a term's registrations regBatch to a transaction
// on one that held none (publish.go), a job added later on one that held
// fewer than regLeaseKeys. A marker outlives a term given up on Stop until
// its run ends, and dies with the lease of a replica cut off.
//
// Cost: a lease granted per batch of claims in flight with runs still in
// progress (in claim mode, per claimMarkerLeaseKeys runs in progress at
// once; kept for the next crowded tick), per regBatch jobs of a term's
// registrations and per regLeaseKeys added later, each kept alive every
// TTL/3; no marker's put checks more than markerLeaseKeys keys, whatever
// the jobs, no registration of a term's any, and no registration's more
// than regLeaseKeys.

// newRunnerSessions returns the pool of co's runners' leases: each a
// session of co's election options, granted within etcdTimeout unless
// etcd refused the TTL for good (ttl), and watched by the replica's
// reports; a lease of registrations found lost has them published again.
func newRunnerSessions(co *coordinator, ttl *ttlRefusal) *leasepool.Pool {
	grant := func(ctx context.Context) (*election.Session, error) {
		if err := ttl.refusal(); err != nil {
			return nil, err
		}
		sctx, cancel := context.WithTimeout(ctx, etcdTimeout)
		defer cancel()
		sess, err := election.NewSession(sctx, co.conn.etcd(), co.eopts...)
		if err != nil {
			return nil, ttl.note(err)
		}
		co.rep.watchSession(sess)
		return sess, nil
	}
	lost := func() {
		// The publisher registers under its own lock: asked from a
		// goroutine, which Stop waits for.
		co.work.add()
		go func() {
			defer co.work.done()
			co.specs.publishAll()
		}()
	}
	return leasepool.New(grant, lost, closeTimeout)
}
