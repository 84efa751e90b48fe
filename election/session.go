package election

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Errors that end a session. context.Cause of Session.Context returns one.
var (
	// ErrSessionExpired means no keepalive was acknowledged in time: the
	// safe local deadline passed, and the server may expire the lease at any
	// moment after it.
	ErrSessionExpired = errors.New("election: session expired: no keepalive acknowledged before the safe deadline")
	// ErrLeaseLost means the server no longer has the session's lease: it
	// expired, was revoked, or etcd lost its data.
	ErrLeaseLost = errors.New("election: session lease lost")
	// ErrSessionClosed means Close was called.
	ErrSessionClosed = errors.New("election: session closed")
	// ErrTTLBelowMinimum means the server raised the requested TTL to its
	// own minimum lease TTL, which is longer than the one asked for.
	ErrTTLBelowMinimum = errors.New("election: TTL below the server's minimum lease TTL")
)

// Session is an etcd lease kept alive by this process, with a context that is
// cancelled at the safe local deadline: the send time of the last
// acknowledged keepalive plus the TTL, less the margin. The server cannot
// expire the lease before that moment, because it renews the lease when it
// receives a keepalive, after it was sent. So work done under the context ends
// before another instance can be granted what the lease holds.
type Session struct {
	client *clientv3.Client
	opts   *options
	lease  clientv3.LeaseID
	ka     *keepAlives // the client's keepalive stream (keepalive.go)

	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the keepalive loop has exited

	mu       sync.Mutex
	deadline time.Time
	closed   bool
	lastErr  error // why the last keepalive failed; nil once one is acknowledged
}

// NewSession grants a lease with the configured TTL and keeps it alive until
// Close or until the session is lost. ctx bounds the grant only.
func NewSession(ctx context.Context, client *clientv3.Client, opts ...Option) (*Session, error) {
	if client == nil {
		return nil, errNilClient
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	return newSession(ctx, client, o)
}

func newSession(ctx context.Context, client *clientv3.Client, o *options) (*Session, error) {
	sent := o.clock.Now()
	resp, err := client.Grant(ctx, int64(o.ttl/time.Second))
	if err != nil {
		return nil, fmt.Errorf("election: grant lease: %w", err)
	}
	if granted := time.Duration(resp.TTL) * time.Second; granted != o.ttl {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.ttl)
		client.Revoke(rctx, resp.ID)
		cancel()
		return nil, fmt.Errorf("%w: asked for %v, the server grants at least %v", ErrTTLBelowMinimum, o.ttl, granted)
	}
	sctx, cancel := context.WithCancelCause(context.Background())
	s := &Session{
		client:   client,
		opts:     o,
		lease:    resp.ID,
		ka:       keepAlivesOf(client),
		ctx:      sctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		deadline: sent.Add(o.ttl - o.margin),
	}
	go s.keepAlive()
	return s, nil
}

// Lease is the session's lease ID.
func (s *Session) Lease() clientv3.LeaseID { return s.lease }

// Context is done at the safe local deadline, when the lease is lost, or on
// Close; context.Cause tells which.
func (s *Session) Context() context.Context { return s.ctx }

// Done is Context().Done().
func (s *Session) Done() <-chan struct{} { return s.ctx.Done() }

// Err is nil while the session holds, and otherwise the cause of its end.
// It reads the clock itself, so a deadline that has passed ends the session
// at once, before the session's own timer is served (on a loaded machine,
// that timer's goroutine can run late): work about to start under the
// session asks Err first, and what Err allows started before the deadline.
func (s *Session) Err() error {
	if s.ctx.Err() == nil && !s.opts.clock.Now().Before(s.Deadline()) { // mutation:session-err-deadline
		s.lose(ErrSessionExpired)
	}
	return context.Cause(s.ctx)
}

// Deadline is the current safe local deadline. Each acknowledged keepalive
// moves it forward.
func (s *Session) Deadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline
}

// Close stops the keepalives and revokes the lease, which deletes every key
// attached to it. ctx bounds the revoke; if it cannot reach the server the
// lease expires by itself after the TTL. Close is idempotent.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	s.cancel(ErrSessionClosed)
	<-s.done
	if already || s.client.Ctx().Err() != nil {
		return nil // nothing to revoke with; the lease expires by itself
	}
	_, err := s.client.Revoke(ctx, s.lease) // mutation:revoke
	if err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("election: revoke lease %x: %w", int64(s.lease), err)
	}
	return nil
}

type keepAliveResult struct {
	sent time.Time
	ttl  time.Duration
	err  error
}

// keepAlive sends a keepalive every TTL/3, retries sooner after a failure, and
// ends the session when the deadline passes or the lease is gone. One request
// is in flight at a time, so each acknowledgement is matched to its send time.
func (s *Session) keepAlive() {
	defer close(s.done)
	defer s.ka.release()
	o := s.opts
	interval := o.ttl / 3
	retry := max(o.ttl/20, 100*time.Millisecond)

	reqCtx, cancelReqs := context.WithCancel(s.ctx)
	defer cancelReqs()
	results := make(chan keepAliveResult, 1)
	inFlight := false

	next := o.clock.NewTimer(interval)
	defer next.Stop()
	expire := o.clock.NewTimer(s.Deadline().Sub(o.clock.Now()))
	defer expire.Stop()

	for {
		select {
		case <-s.ctx.Done():
			if inFlight {
				cancelReqs()
				<-results
			}
			return
		case <-expire.C():
			s.lose(ErrSessionExpired) // mutation:deadline-cancel
		case <-next.C():
			if inFlight {
				continue
			}
			inFlight = true
			go func() {
				sent := o.clock.Now()
				ctx, cancel := context.WithTimeout(reqCtx, o.ttl)
				ttl, err := s.ka.once(ctx, s.lease)
				cancel()
				r := keepAliveResult{sent: sent, err: err}
				if err == nil {
					r.ttl = time.Duration(ttl) * time.Second
				}
				results <- r
			}()
		case r := <-results:
			inFlight = false
			switch {
			case errors.Is(r.err, rpctypes.ErrLeaseNotFound):
				s.lose(ErrLeaseLost)
			case r.err != nil:
				s.mu.Lock()
				s.lastErr = r.err
				s.mu.Unlock()
				if s.ctx.Err() == nil {
					o.logger.Warn("baton: lease keepalive failed", "lease", fmt.Sprintf("%x", int64(s.lease)), "err", r.err)
				}
				next.Reset(retry)
			default:
				d := r.sent.Add(r.ttl - o.margin) // mutation:deadline-from-send
				s.mu.Lock()
				s.lastErr = nil
				if d.After(s.deadline) {
					s.deadline = d
				}
				d = s.deadline
				s.mu.Unlock()
				expire.Reset(d.Sub(o.clock.Now()))
				next.Reset(interval)
			}
		}
	}
}

// lose ends the session with cause; an expiry names what etcd said to the
// last keepalive (a revoked permission refuses them: etcd checks that the
// user may write the lease's keys).
func (s *Session) lose(cause error) {
	s.mu.Lock()
	last := s.lastErr
	s.mu.Unlock()
	if errors.Is(cause, ErrSessionExpired) && last != nil {
		cause = fmt.Errorf("%w; the last keepalive: %w", cause, last)
	}
	if s.ctx.Err() == nil {
		s.opts.logger.Warn("baton: session lost", "lease", fmt.Sprintf("%x", int64(s.lease)), "cause", cause)
	}
	s.cancel(cause)
}
