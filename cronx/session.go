package cronx

import (
	"context"
	"sync"

	"github.com/batonhq/baton/election"
)

// runnerSession is the runners' session of a coordinated Cron: the lease
// that binds each run's in-progress marker, made when a claim first needs
// it and again after one is lost. Its marker outlives a term given up on
// Stop until the run ends, and dies with the lease of a replica cut off.
//
// Granting a lease waits for etcd, up to etcdTimeout when it is
// unreachable, so it is done under grant only: mu must stay free for the
// claims that read the session.
type runnerSession struct {
	co  *coordinator
	ttl *ttlRefusal // etcd's refusal of the TTL, which no retry mends

	grant sync.Mutex // held while the session is replaced; never taken under mu
	mu    sync.Mutex
	sess  *election.Session

	// expired, set by tests only, stands for a session whose safe deadline
	// has passed while the session's own timer waits to be served.
	expired func() bool
}

func newRunnerSession(co *coordinator) *runnerSession {
	return &runnerSession{co: co, ttl: newTTLRefusal(co)}
}

// current returns the session live now, if any, and whether there was one.
func (s *runnerSession) current() (*election.Session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == nil {
		return nil, false
	}
	if s.sess.Context().Err() != nil {
		return nil, true
	}
	return s.sess, true
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

// get returns the session, making a new one when there is none or the last
// was lost.
func (s *runnerSession) get(ctx context.Context) (*election.Session, error) {
	s.grant.Lock()
	defer s.grant.Unlock()
	s.mu.Lock()
	old := s.sess
	s.mu.Unlock()
	if old != nil && old.Context().Err() == nil {
		return old, nil
	}
	co := s.co
	if err := s.ttl.refusal(); err != nil {
		return nil, err
	}
	if old != nil {
		// The lost session's lease is not revoked: a job of a run under it
		// may not have returned yet, since its context ended, and its
		// marker must stay until the server expires the lease, at least
		// the margin after the safe deadline, lest another run of a Forbid
		// job start beside it. The keepalives ended with the session.
		s.mu.Lock()
		s.sess = nil // mutation:lost-not-revoked
		s.mu.Unlock()
	}
	sctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	sess, err := election.NewSession(sctx, co.conn.etcd(), co.eopts...)
	if err != nil {
		return nil, s.ttl.note(err)
	}
	s.mu.Lock()
	s.sess = sess
	s.mu.Unlock()
	co.rep.watchSession(sess)
	if old != nil {
		// The registrations of this replica's jobs went with the old lease.
		co.specs.publishAll()
	}
	return sess, nil
}

// close closes the session, once no run holds a marker.
func (s *runnerSession) close() {
	s.grant.Lock()
	defer s.grant.Unlock()
	s.mu.Lock()
	sess := s.sess
	s.sess = nil
	s.mu.Unlock()
	s.ttl.reset()
	if sess != nil {
		closeQuietly(sess)
	}
}

// closeQuietly closes s, revoking its lease, within closeTimeout.
func closeQuietly(s *election.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	s.Close(ctx)
}
