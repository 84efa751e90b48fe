package cronx

import (
	"context"
	"slices"
	"sync"

	"github.com/batonhq/baton/election"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// runnerSession owns which lease each of this replica's leased keys goes
// on: runs' in-progress markers and job registrations. etcd applies a put
// that carries a lease in time linear in the keys already on the lease
// when auth is on and the user is not root (etcd-io/etcd#15993), so no
// marker goes on a lease that holds more than a few keys: the markers one
// transaction of claims puts go on one lease that held fewer than
// markerLeaseKeys when they were reserved (and where none sent before and
// not answered would find as many, committed after them), a term's registrations
// regBatch to a transaction on one that held none (publish.go), a job
// added later on one that held fewer than regLeaseKeys, and a new lease is
// granted when none does (as Cilium's kvstore lease manager does).
// A lease is made when a key first needs it and again after one is lost;
// a marker outlives a term given up on Stop until its run ends, and dies
// with the lease of a replica cut off.
//
// Cost: a lease granted per batch of claims in flight with runs still in
// progress (in claim mode, per claimMarkerLeaseKeys runs in progress at
// once; kept for the next crowded tick), per regBatch jobs of a
// term's registrations and per regLeaseKeys added later, each kept alive
// every TTL/3; no marker's put checks more than
// markerLeaseKeys keys, whatever the jobs, no registration of a term's
// any, and no registration's more than regLeaseKeys.
//
// Granting a lease waits for etcd, up to etcdTimeout when it is
// unreachable, so it is done under grant only: mu must stay free for the
// claims that read the leases.
type runnerSession struct {
	co  *coordinator
	ttl *ttlRefusal // etcd's refusal of the TTL, which no retry mends

	grant   sync.Mutex // held while a lease is granted; never taken under mu
	mu      sync.Mutex
	markers []*pooledLease
	regs    []*pooledLease
	regOf   map[string]*pooledLease // job → the lease its registration is on
	gen     uint64                  // leases found lost so far
	made    bool                    // a lease was granted since the last close

	// expired, set by tests only, stands for a session whose safe deadline
	// has passed while the session's own timer waits to be served.
	expired func() bool
}

// pooledLease is one lease of the pool, the keys it holds now or is to
// hold, and the transactions sent with some of them and not yet answered.
type pooledLease struct {
	sess *election.Session
	keys int
	// sent holds the size of each transaction that puts keys reserved on
	// the lease and has not been answered: one sent earlier may commit
	// after one sent later, and then finds the later one's keys there.
	sent []int
}

// add counts n keys more on p, put by one transaction, which is tracked
// as sent if sent.
func (p *pooledLease) add(n int, sent bool) {
	p.keys += n
	if sent && n > 0 {
		p.sent = append(p.sent, n)
	}
}

// fits reports whether n keys more, put in one transaction, leave every
// put on the lease checking fewer than open keys, whatever order the
// transactions sent commit in: the new one finds at most the keys held or
// reserved now, and one sent before it, of m keys, all but its own m.
func (p *pooledLease) fits(open, n int) bool {
	if p.keys >= open { // mutation:lease-keys
		return false
	}
	for _, m := range p.sent {
		if p.keys+n-m >= open { // mutation:lease-keys-sent
			return false
		}
	}
	return true
}

func newRunnerSession(co *coordinator) *runnerSession {
	return &runnerSession{co: co, ttl: newTTLRefusal(co), regOf: map[string]*pooledLease{}}
}

// generation counts the leases found lost; had says whether any lease was
// granted. A claim made at a later generation than its tick was fired at
// follows an etcd outage.
func (s *runnerSession) generation() (gen uint64, had bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	return s.gen, s.made
}

// holds is nil while sess, a claim's session, holds, and otherwise why it
// does not: asked right before a job starts, since the session's context
// is cancelled by a goroutine that a loaded machine can run late.
func (s *runnerSession) holds(sess *election.Session) error {
	if s.expired != nil && s.expired() {
		return election.ErrSessionExpired
	}
	return sess.Err()
}

// reserve returns the session of a lease for n markers put in one
// transaction, on a lease where each of their puts checks fewer than open
// keys (fits), counted on it until put each, and the generation it was
// taken at. The caller tells landed once the transaction is answered.
func (s *runnerSession) reserve(ctx context.Context, open, n int) (*election.Session, uint64, error) {
	p, gen, err := s.take(ctx, &s.markers, open, n)
	if err != nil {
		return nil, 0, err
	}
	return p.sess, gen, nil
}

// landed tells that the transaction of n markers reserved on sess has been
// answered, or was never sent: its puts are done, or are not to come.
// One that got no answer may yet commit, and its puts then find the keys
// put on the lease since: a cost left to the rare request etcd takes and
// does not answer.
func (s *runnerSession) landed(sess *election.Session, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.markers {
		if p.sess == sess {
			if i := slices.Index(p.sent, n); i >= 0 {
				p.sent = slices.Delete(p.sent, i, i+1)
			}
			return
		}
	}
}

// put uncounts a marker reserved on sess: released, given back, or never
// written.
func (s *runnerSession) put(sess *election.Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.markers {
		if p.sess == sess {
			p.keys = max(p.keys-1, 0)
			return
		}
	}
}

// live reports whether id is one of this replica's live marker leases.
func (s *runnerSession) live(id clientv3.LeaseID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.markers {
		if p.sess.Lease() == id && p.sess.Context().Err() == nil {
			return true
		}
	}
	return false
}

// ours returns the session of the live marker lease with ID id, counting
// one more key on it if counted; nil when no lease of this replica has
// that ID.
func (s *runnerSession) ours(id clientv3.LeaseID, counted bool) *election.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.markers {
		if p.sess.Lease() == id && p.sess.Context().Err() == nil {
			if counted {
				p.keys++
			}
			return p.sess
		}
	}
	return nil
}

// register returns the jobs among jobs whose registrations are to be
// written, and the lease they go on, all in one transaction, one that
// holds fewer than open keys: a job registered on a live lease need not be
// written again.
func (s *runnerSession) register(ctx context.Context, jobs []string, open int) (clientv3.LeaseID, []string, error) {
	s.mu.Lock()
	s.pruneLocked()
	var fresh []string
	for _, job := range jobs {
		if _, ok := s.regOf[job]; !ok {
			fresh = append(fresh, job)
		}
	}
	s.mu.Unlock()
	if len(fresh) == 0 {
		return 0, nil, nil
	}
	p, _, err := s.take(ctx, &s.regs, open, len(fresh))
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := fresh[:0]
	for _, job := range fresh {
		if _, ok := s.regOf[job]; ok { // registered meanwhile
			p.keys--
			continue
		}
		s.regOf[job] = p
		kept = append(kept, job)
	}
	return p.sess.Lease(), kept, nil
}

// registered returns the lease of job's registration, if it has one.
func (s *runnerSession) registered(job string) (clientv3.LeaseID, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.regOf[job]
	if !ok || p.sess.Context().Err() != nil {
		return 0, false
	}
	return p.sess.Lease(), true
}

// unregister forgets job's registration, deleted or never written: the
// next register writes it again.
func (s *runnerSession) unregister(job string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.regOf[job]; ok {
		p.keys = max(p.keys-1, 0)
		delete(s.regOf, job)
	}
}

// take returns a lease of pool with room for n keys more, counting them
// on it, granting one when none has room.
func (s *runnerSession) take(ctx context.Context, pool *[]*pooledLease, open, n int) (*pooledLease, uint64, error) {
	if p, gen := s.roomIn(pool, open, n); p != nil {
		return p, gen, nil
	}
	s.grant.Lock()
	defer s.grant.Unlock()
	// Another caller may have granted one while this one waited.
	if p, gen := s.roomIn(pool, open, n); p != nil {
		return p, gen, nil
	}
	co := s.co
	if err := s.ttl.refusal(); err != nil {
		return nil, 0, err
	}
	sctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	sess, err := election.NewSession(sctx, co.conn.etcd(), co.eopts...)
	if err != nil {
		return nil, 0, s.ttl.note(err)
	}
	p := &pooledLease{sess: sess}
	p.add(n, pool == &s.markers)
	s.mu.Lock()
	*pool = append(*pool, p)
	s.made = true
	gen := s.gen
	s.mu.Unlock()
	co.rep.watchSession(sess)
	return p, gen, nil
}

// roomIn returns a live lease of pool with room for n keys more, counting
// them on it, and for markers the transaction that puts them as sent;
// nil if none has room. A lease has room while the n fit (pooledLease.fits):
// each put then checks fewer than open keys, however many are put beside it
// in one transaction.
func (s *runnerSession) roomIn(pool *[]*pooledLease, open, n int) (*pooledLease, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked()
	for _, p := range *pool {
		if p.fits(open, n) {
			p.add(n, pool == &s.markers)
			return p, s.gen
		}
	}
	return nil, s.gen
}

// pruneLocked drops the leases found lost, with the registrations they
// held, which are to be written again.
func (s *runnerSession) pruneLocked() {
	lost := false
	keep := func(pool []*pooledLease) []*pooledLease {
		kept := pool[:0]
		for _, p := range pool {
			if p.sess.Context().Err() == nil {
				kept = append(kept, p)
				continue
			}
			// A lost lease is not revoked: a job of a run under it may not
			// have returned yet, since its context ended, and its marker
			// must stay until the server expires the lease, at least the
			// margin after the safe deadline, lest another run of a Forbid
			// job start beside it. The keepalives ended with the session.
			lost = true // mutation:lost-not-revoked
		}
		clear(pool[len(kept):])
		return kept
	}
	s.markers = keep(s.markers)
	n := len(s.regs)
	s.regs = keep(s.regs)
	if !lost {
		return
	}
	s.gen++
	if len(s.regs) != n {
		for job, p := range s.regOf {
			if p.sess.Context().Err() != nil {
				delete(s.regOf, job)
			}
		}
		// The registrations went with the lease; the publisher, which
		// registers under its own lock, is asked from a goroutine.
		co := s.co
		co.work.add()
		go func() {
			defer co.work.done()
			co.specs.publishAll()
		}()
	}
}

// close closes every lease, once no run holds a marker.
func (s *runnerSession) close() {
	s.grant.Lock()
	defer s.grant.Unlock()
	s.mu.Lock()
	pools := append(s.markers, s.regs...)
	s.markers, s.regs = nil, nil
	clear(s.regOf)
	s.made = false
	s.mu.Unlock()
	s.ttl.reset()
	// At once: each waits up to closeTimeout when etcd does not answer.
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Go(func() { closeQuietly(p.sess) })
	}
	wg.Wait()
}

// closeQuietly closes s, revoking its lease, within closeTimeout.
func closeQuietly(s *election.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	s.Close(ctx)
}
