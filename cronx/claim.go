package cronx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
	"github.com/batonhq/baton/internal/clock"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// claimer claims ticks in etcd before they run. It owns the runners'
// session (whose lease binds each run's in-progress marker), the retries of
// claims while etcd does not answer, the batching of a leader's claims
// (batch.go), the claims made ahead of a crowded tick (preclaim.go), the
// latest tick each job fired in claim mode (supersede.go), and the triage of
// claims that failed.
type claimer struct {
	identity string
	keys     layout
	eopts    []election.Option
	client   func() *clientv3.Client // nil until one is made from the environment
	clock    clock.Clock
	runs     *jobWaiter // work the client must outlive
	logger   Logger
	mode     Mode
	// notRun reports a tick not run; watchSession, a session granted.
	notRun       func(job string, tick time.Time, reason Reason, err error)
	watchSession func(*election.Session)
	refusals     *refusals   // told of each claim etcd refused or answered
	ttl          *ttlRefusal // etcd's refusal of the TTL, which no retry mends

	sessMu sync.Mutex // held while sess is replaced; never taken under mu
	mu     sync.Mutex
	sess   *election.Session // the runners' session, for in-progress markers

	slots chan struct{} // one token per single claim in flight
	batch *batcher      // leader mode's claims of live ticks
	fired firedTicks    // claim mode: the latest tick of each job

	premu sync.Mutex
	pre   map[preclaimKey]*preclaim // leader mode: runs claimed ahead of their tick
}

func newClaimer(co *coordinator) *claimer {
	cl := &claimer{
		identity: co.identity,
		keys:     co.keys,
		eopts:    co.eopts,
		client:   co.etcd,
		clock:    co.clock,
		runs:     &co.runs,
		logger:   co.logger,
		mode:     co.mode,
		slots:    make(chan struct{}, maxClaims),

		notRun:       co.notRun,
		watchSession: co.watchSession,
		refusals:     co.refusals,
		ttl:          newTTLRefusal(co),
	}
	cl.batch = newBatcher(cl)
	return cl
}

// session returns the runners' session, making a new one when there is
// none or the last was lost.
//
// Granting a lease waits for etcd, up to etcdTimeout when it is
// unreachable, so it is done under sessMu only: mu must stay free for the
// claims that read the session, and the coordinator's lock for AddJob, Stop
// and the cluster operations, which must not wait for etcd.
func (cl *claimer) session(ctx context.Context) (*election.Session, error) {
	cl.sessMu.Lock()
	defer cl.sessMu.Unlock()
	client := cl.client()
	cl.mu.Lock()
	old := cl.sess
	cl.mu.Unlock()
	if old != nil && old.Context().Err() == nil {
		return old, nil
	}
	if err := cl.ttl.refusal(); err != nil {
		return nil, err
	}
	if old != nil {
		cl.mu.Lock()
		cl.sess = nil
		cl.mu.Unlock()
		cl.runs.add()
		go func() {
			defer cl.runs.done()
			closeQuietly(old)
		}()
	}
	sctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	s, err := election.NewSession(sctx, client, cl.eopts...)
	if err != nil {
		return nil, cl.ttl.note(err)
	}
	cl.mu.Lock()
	cl.sess = s
	cl.mu.Unlock()
	cl.watchSession(s)
	return s, nil
}

// closeSession closes the runners' session, once no run holds a marker.
func (cl *claimer) closeSession() {
	cl.sessMu.Lock()
	defer cl.sessMu.Unlock()
	cl.mu.Lock()
	s := cl.sess
	cl.sess = nil
	cl.mu.Unlock()
	cl.ttl.reset()
	if s != nil {
		closeQuietly(s)
	}
}

// closeQuietly closes s, revoking its lease, within closeTimeout.
func closeQuietly(s *election.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	s.Close(ctx)
}

// claim claims r's tick, retrying while etcd does not answer, until latest
// (the misfire policy's deadline) or ctx ends.
func (cl *claimer) claim(ctx context.Context, r run, ts *termState, latest time.Time) (election.Claim, *election.Session, error) {
	key, seq := cl.keys.last(r.job), r.tick.UnixNano()
	marker := cl.keys.tickMarker(r.job, seq)
	if r.triggered != 0 {
		key, seq = cl.keys.triggered(r.job), r.triggered
		marker = cl.keys.triggerMarker(r.job, r.triggered)
	}
	// In claim mode, a claim made under a later session than the one live
	// when the tick fired (etcd was out meanwhile) must find the job's claim
	// key. The key is missing then only if etcd came back without its data,
	// and another replica may have run the tick before the data was lost;
	// so the tick is given up. (A leader's claims die with its term.)
	claimMode := ts == nil && r.triggered == 0
	var firedUnder *election.Session
	hadSession := false
	if claimMode {
		cl.mu.Lock()
		firedUnder, hadSession = cl.sess, cl.sess != nil
		cl.mu.Unlock()
		if firedUnder != nil && firedUnder.Context().Err() != nil {
			firedUnder = nil
		}
	}
	backoff := retryBackoff
	for try := 1; ; try++ {
		var err error
		sess, serr := cl.session(ctx)
		if claimMode && cl.fired.superseded(r.job, r.tick) {
			return election.Claim{}, nil, errSuperseded
		}
		if serr == nil {
			opts := []election.ClaimOption{
				election.ClaimedBy(cl.identity),
				claims.WithMarker(marker, sess.Lease()),
			}
			if r.triggered == 0 {
				opts = append(opts, claims.UnlessExists(cl.keys.paused(r.job), ErrPaused)) // mutation:pause
			}
			if ts != nil {
				opts = append(opts, election.UnderTerm(ts.term.Fence)) // mutation:under-term
			}
			if r.overlap == Forbid || r.overlap == Replace && r.triggered != 0 { // mutation:forbid
				opts = append(opts, claims.Exclusive(cl.keys.running(r.job)))
			}
			if r.catchUp || claimMode && hadSession && sess != firedUnder {
				opts = append(opts, claims.IfClaimedBefore())
			}
			var c election.Claim
			if ts != nil && !r.catchUp && r.triggered == 0 {
				c, err = cl.batch.claim(&claimReq{ctx: ctx, key: key, seq: seq, opts: opts, term: ts.term.Fence})
			} else {
				c, err = cl.claimSingle(ctx, key, seq, opts)
			}
			if err == nil {
				cl.refusals.accepted()
				return c, sess, nil
			}
			if errors.Is(err, election.ErrClaimed) || errors.Is(err, election.ErrBusy) || errors.Is(err, ErrPaused) ||
				errors.Is(err, election.ErrNotLeader) || errors.Is(err, claims.ErrNeverClaimed) {
				cl.refusals.accepted() // etcd weighed the claim's conditions
				if try > 1 {
					err = &retriedError{err}
				}
				return election.Claim{}, nil, err
			}
		} else if errors.Is(serr, election.ErrTTLBelowMinimum) {
			return election.Claim{}, nil, serr // no retry mends it
		} else {
			err = serr
		}
		// Retried all the same: etcd may accept the claim before its
		// deadline, once space is freed or a permission granted.
		cl.refusals.refused(err)
		if ctx.Err() != nil {
			return election.Claim{}, nil, fmt.Errorf("%w (%v)", context.Cause(ctx), err)
		}
		if cl.clock.Now().Add(backoff).After(latest) {
			return election.Claim{}, nil, fmt.Errorf("no claim before the misfire deadline: %w", err)
		}
		// Retries pace against etcd, which runs on real time whatever the
		// Cron's clock.
		sleep(ctx, backoff)
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// retriedError is the outcome of a claim that etcd answered only after
// retries: while etcd was out, the job's later ticks were being claimed too.
type retriedError struct{ error }

func (e *retriedError) Unwrap() error { return e.error }

// claimSingle sends one claim, waiting for a slot among maxClaims.
func (cl *claimer) claimSingle(ctx context.Context, key string, seq int64, opts []election.ClaimOption) (election.Claim, error) {
	select {
	case cl.slots <- struct{}{}:
	case <-ctx.Done():
		return election.Claim{}, context.Cause(ctx)
	}
	defer func() { <-cl.slots }()
	if ctx.Err() != nil {
		return election.Claim{}, context.Cause(ctx) // not sent: nothing to learn
	}
	// Once sent, the claim is awaited even if ctx ends: a claim that
	// commits as the scheduler stops is run (Stop's context waits for it),
	// where giving up on it would leave its tick claimed and never run.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), etcdTimeout)
	defer cancel()
	return election.ClaimSeq(cctx, cl.client(), key, seq, opts...)
}
