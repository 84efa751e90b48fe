// Package leasepool owns which lease each of a replica's leased keys goes
// on: runs' in-progress markers and job registrations.
//
// etcd applies a put that carries a lease in time linear in the keys
// already on the lease when auth is on and the user is not root
// (etcd-io/etcd#15993), so no key goes on a lease that holds more than the
// caller allows: a transaction's markers go on one lease where each of
// their puts checks fewer than open keys (and where none sent before and
// not answered would find as many, committed after them), registrations
// on one that holds fewer than open, and a new lease is granted when none
// does, as Cilium's kvstore lease manager does. A lease is granted when a
// key first needs it and again after one is lost.
//
// Cost: a lease granted whenever no lease of the pool has room, each kept
// alive by its session every TTL/3 until the pool closes or the lease is
// lost.
package leasepool

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/batonhq/baton/election"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Pool is a replica's leases. Granting a lease waits for etcd, up to the
// grant function's own bound when etcd is unreachable, so it is done under
// grantMu only: mu stays free for the claims that read the leases.
type Pool struct {
	grant        func(context.Context) (*election.Session, error)
	lost         func()
	closeTimeout time.Duration

	grantMu sync.Mutex // held while a lease is granted; never taken under mu
	mu      sync.Mutex
	markers []*lease
	regs    []*lease
	regOf   map[string]*lease // job → the lease its registration is on
	gen     uint64            // leases found lost so far
	made    bool              // a lease was granted since the last Close

	// Expired, set by tests only, stands for a session whose safe deadline
	// has passed while the session's own timer waits to be served.
	Expired func() bool
}

// lease is one lease of the pool, the keys it holds now or is to hold,
// and the transactions sent with some of them and not yet answered.
type lease struct {
	sess *election.Session
	keys int
	// sent holds the size of each transaction that puts keys reserved on
	// the lease and has not been answered: one sent earlier may commit
	// after one sent later, and then finds the later one's keys there.
	sent []int
}

// add counts n keys more on l, put by one transaction, which is tracked
// as sent if sent.
func (l *lease) add(n int, sent bool) {
	l.keys += n
	if sent && n > 0 {
		l.sent = append(l.sent, n)
	}
}

// fits reports whether n keys more, put in one transaction, leave every
// put on the lease checking fewer than open keys, whatever order the
// transactions sent commit in: the new one finds at most the keys held or
// reserved now, and one sent before it, of m keys, all but its own m.
func (l *lease) fits(open, n int) bool {
	if l.keys >= open { // mutation:lease-keys
		return false
	}
	for _, m := range l.sent {
		if l.keys+n-m >= open { // mutation:lease-keys-sent
			return false
		}
	}
	return true
}

// New returns an empty pool. grant grants a lease, as a session; lost is
// called when a lease that held registrations is found lost, so that they
// are written again, under the pool's lock: it must not wait, nor call the
// pool; a lease is revoked within closeTimeout as the pool closes.
func New(grant func(context.Context) (*election.Session, error), lost func(), closeTimeout time.Duration) *Pool {
	return &Pool{grant: grant, lost: lost, closeTimeout: closeTimeout, regOf: map[string]*lease{}}
}

// Generation counts the leases found lost; had says whether any lease was
// granted. A claim made at a later generation than its tick was fired at
// follows an etcd outage.
func (p *Pool) Generation() (gen uint64, had bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pruneLocked()
	return p.gen, p.made
}

// Holds is nil while sess, a claim's session, holds, and otherwise why it
// does not: asked right before a job starts, since the session's context
// is cancelled by a goroutine that a loaded machine can run late.
func (p *Pool) Holds(sess *election.Session) error {
	if p.Expired != nil && p.Expired() {
		return election.ErrSessionExpired
	}
	return sess.Err()
}

// Reserve returns the session of a lease for n markers put in one
// transaction, on a lease where each of their puts checks fewer than open
// keys (fits), counted on it until put each, and the generation it was
// taken at. The caller tells Landed once the transaction is answered.
func (p *Pool) Reserve(ctx context.Context, open, n int) (*election.Session, uint64, error) {
	l, gen, err := p.take(ctx, &p.markers, open, n)
	if err != nil {
		return nil, 0, err
	}
	return l.sess, gen, nil
}

// Landed tells that the transaction of n markers reserved on sess has been
// answered, or was never sent: its puts are done, or are not to come.
// One that got no answer may yet commit, and its puts then find the keys
// put on the lease since: a cost left to the rare request etcd takes and
// does not answer.
func (p *Pool) Landed(sess *election.Session, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.markers {
		if l.sess == sess {
			if i := slices.Index(l.sent, n); i >= 0 {
				l.sent = slices.Delete(l.sent, i, i+1)
			}
			return
		}
	}
}

// Put uncounts a marker reserved on sess: released, given back, or never
// written.
func (p *Pool) Put(sess *election.Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.markers {
		if l.sess == sess {
			l.keys = max(l.keys-1, 0)
			return
		}
	}
}

// Live reports whether id is one of the pool's live marker leases.
func (p *Pool) Live(id clientv3.LeaseID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.markers {
		if l.sess.Lease() == id && l.sess.Context().Err() == nil {
			return true
		}
	}
	return false
}

// Ours returns the session of the live marker lease with ID id, counting
// one more key on it if counted; nil when no lease of the pool has that
// ID.
func (p *Pool) Ours(id clientv3.LeaseID, counted bool) *election.Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.markers {
		if l.sess.Lease() == id && l.sess.Context().Err() == nil {
			if counted {
				l.keys++
			}
			return l.sess
		}
	}
	return nil
}

// Markers is the markers counted on the pool's marker leases, and how
// many leases there are.
func (p *Pool) Markers() (keys, leases int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.markers {
		keys += l.keys
	}
	return keys, len(p.markers)
}

// Register returns the jobs among jobs whose registrations are to be
// written, and the lease they go on, all in one transaction, one that
// holds fewer than open keys: a job registered on a live lease need not be
// written again.
func (p *Pool) Register(ctx context.Context, jobs []string, open int) (clientv3.LeaseID, []string, error) {
	p.mu.Lock()
	p.pruneLocked()
	var fresh []string
	for _, job := range jobs {
		if _, ok := p.regOf[job]; !ok {
			fresh = append(fresh, job)
		}
	}
	p.mu.Unlock()
	if len(fresh) == 0 {
		return 0, nil, nil
	}
	l, _, err := p.take(ctx, &p.regs, open, len(fresh))
	if err != nil {
		return 0, nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := fresh[:0]
	for _, job := range fresh {
		if _, ok := p.regOf[job]; ok { // registered meanwhile
			l.keys--
			continue
		}
		p.regOf[job] = l
		kept = append(kept, job)
	}
	return l.sess.Lease(), kept, nil
}

// Registered returns the lease of job's registration, if it has one.
func (p *Pool) Registered(job string) (clientv3.LeaseID, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.regOf[job]
	if !ok || l.sess.Context().Err() != nil {
		return 0, false
	}
	return l.sess.Lease(), true
}

// Unregister forgets job's registration, deleted or never written: the
// next Register writes it again.
func (p *Pool) Unregister(job string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.regOf[job]; ok {
		l.keys = max(l.keys-1, 0)
		delete(p.regOf, job)
	}
}

// take returns a lease of pool with room for n keys more, counting them
// on it, granting one when none has room.
func (p *Pool) take(ctx context.Context, pool *[]*lease, open, n int) (*lease, uint64, error) {
	if l, gen := p.roomIn(pool, open, n); l != nil {
		return l, gen, nil
	}
	p.grantMu.Lock()
	defer p.grantMu.Unlock()
	// Another caller may have granted one while this one waited.
	if l, gen := p.roomIn(pool, open, n); l != nil {
		return l, gen, nil
	}
	sess, err := p.grant(ctx)
	if err != nil {
		return nil, 0, err
	}
	l := &lease{sess: sess}
	l.add(n, pool == &p.markers)
	p.mu.Lock()
	defer p.mu.Unlock()
	*pool = append(*pool, l)
	p.made = true
	return l, p.gen, nil
}

// roomIn returns a live lease of pool with room for n keys more, counting
// them on it, and for markers the transaction that puts them as sent;
// nil if none has room. A lease has room while the n fit (lease.fits):
// each put then checks fewer than open keys, however many are put beside it
// in one transaction.
func (p *Pool) roomIn(pool *[]*lease, open, n int) (*lease, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pruneLocked()
	for _, l := range *pool {
		if l.fits(open, n) {
			l.add(n, pool == &p.markers)
			return l, p.gen
		}
	}
	return nil, p.gen
}

// pruneLocked drops the leases found lost, with the registrations they
// held, which are to be written again.
func (p *Pool) pruneLocked() {
	lost := false
	keep := func(pool []*lease) []*lease {
		kept := pool[:0]
		for _, l := range pool {
			if l.sess.Context().Err() == nil {
				kept = append(kept, l)
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
	p.markers = keep(p.markers)
	n := len(p.regs)
	p.regs = keep(p.regs)
	if !lost {
		return
	}
	p.gen++
	if len(p.regs) != n {
		for job, l := range p.regOf {
			if l.sess.Context().Err() != nil {
				delete(p.regOf, job)
			}
		}
		// The registrations went with the lease: whoever writes them is
		// told.
		p.lost()
	}
}

// Close closes every lease, once no run holds a marker, each within the
// pool's closeTimeout and all at once.
func (p *Pool) Close() {
	p.grantMu.Lock()
	defer p.grantMu.Unlock()
	p.mu.Lock()
	pools := append(p.markers, p.regs...)
	p.markers, p.regs = nil, nil
	clear(p.regOf)
	p.made = false
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range pools {
		wg.Go(func() { p.closeQuietly(l.sess) })
	}
	wg.Wait()
}

// closeQuietly closes s, revoking its lease, within closeTimeout.
func (p *Pool) closeQuietly(s *election.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), p.closeTimeout)
	defer cancel()
	s.Close(ctx)
}
