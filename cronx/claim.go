package cronx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claims"
	"github.com/batonhq/baton/internal/leasepool"
)

// claimer claims a run in etcd before it starts, and gives back a claim
// whose run does not start. It retries a claim while etcd does not answer,
// batches a leader's claims of live ticks (batch.go), and knows, in claim
// mode, the latest tick each job fired (supersede.go). The runners' leases,
// which bind each run's in-progress marker, are its sessions' (session.go).
type claimer struct {
	co       *coordinator
	sessions *leasepool.Pool
	ttl      *ttlRefusal   // etcd's refusal of the TTL, which no retry mends
	slots    chan struct{} // one token per single claim in flight
	batch    *batcher      // leader mode's claims of live ticks
	gate     claimGate     // the goroutines of the runs that wait for batch
	fired    firedTicks    // claim mode: the latest tick of each job
}

func newClaimer(co *coordinator) *claimer {
	ttl := newTTLRefusal(co)
	cl := &claimer{co: co, sessions: newRunnerSessions(co, ttl), ttl: ttl, slots: make(chan struct{}, maxClaims)}
	cl.batch = newBatcher(cl)
	return cl
}

// claimRun claims r, retrying while etcd does not answer, until r's
// misfire deadline or its context's end: a tick through its job's claim
// key, a trigger through its request (trigger.go).
func (cl *claimer) claimRun(r *run) (held, error) {
	if r.triggered() {
		return cl.claimTrigger(r)
	}
	if r.buf != nil {
		return cl.claimBuffered(r) // a tick resumed from its job's buffer (buffer.go)
	}
	if r.recovery != nil {
		return *r.recovery, nil // claimed as it was decided (recovery.go)
	}
	if r.bf != nil {
		return cl.claimBackfill(r)
	}
	co := cl.co
	key, seq, marker := co.writes.tick(r)
	ts := r.term
	// In claim mode, a claim made under a later session than the one live
	// when the tick fired (etcd was out meanwhile) must find the job's claim
	// key. The key is missing then only if etcd came back without its data,
	// and another replica may have run the tick before the data was lost;
	// so the tick is given up. (A leader's claims die with its term.)
	claimMode := ts == nil
	firedGen, hadSession := cl.sessions.Generation()
	latest := co.deadline(r)
	backoff := retryBackoff
	// A try sent and not answered may have committed (unanswered.go): a
	// refusal after one reads the marker it may have left, and giving up
	// releases that marker.
	unanswered := false
	var floor int64
	if ts != nil {
		floor = ts.term.Fence.Revision
	}
	adopted := func() (held, bool) {
		if unanswered { // mutation:unanswered-not-adopted
			return cl.adoptUnanswered(r, marker, seq, floor)
		}
		return held{}, false
	}
	giveUp := func(err error) (held, error) {
		if unanswered && r.scheduled() {
			return held{}, &givenUpUnanswered{err, marker, seq, floor} // released once triaged
		}
		cl.releaseIfUnanswered(r, unanswered, marker, seq, floor, 0)
		return held{}, err
	}
	for try := 1; ; try++ {
		var err error
		// A lease may take until etcd is back: a later tick may have come
		// due meanwhile. A leader's batch of claims takes one lease for
		// all of its markers (batch.go).
		var sess *election.Session
		var gen uint64
		var serr error
		if claimMode {
			sess, gen, serr = cl.sessions.Reserve(r.ctx, claimMarkerLeaseKeys, 1) // mutation:claim-marker-leases
		}
		if claimMode && cl.fired.superseded(r.job.name, r.tick) {
			if serr == nil {
				cl.sessions.Put(sess)
				cl.sessions.Landed(sess, 1)
			}
			return giveUp(errSuperseded)
		}
		if serr == nil {
			opts := co.writes.tickClaim(r, ts, claimMode && hadSession && gen != firedGen)
			var c election.Claim
			var share *tickShare
			var index int
			if ts != nil {
				res := cl.batch.claim(&claimReq{run: r, key: key, seq: seq, marker: marker, opts: opts, term: ts.term.Fence})
				c, sess, share, index, err = res.claim, res.sess, res.share, res.index, res.err
				// Its place at the gate goes to the next run as the first
				// answer comes: retries while etcd is out, a buffered turn
				// or a wait for the run before, go on in this goroutine.
				r.answered() // mutation:gate-first-answer
			} else {
				c, err = cl.claimSingle(r, key, seq, append(opts, claims.WithMarker(marker, sess.Lease())))
				cl.sessions.Landed(sess, 1)
			}
			if err == nil {
				co.rep.refusals.accepted()
				return held{claim: c, sess: sess, share: share, index: index}, nil
			}
			if sess != nil && share == nil {
				cl.sessions.Put(sess) // no marker was written
			}
			var lost *unansweredError
			unanswered = unanswered || errors.As(err, &lost)
			if errors.Is(err, election.ErrTTLBelowMinimum) {
				return held{}, err // no retry mends it
			}
			if errors.Is(err, errNotSent) {
				return giveUp(fmt.Errorf("%w (%v)", context.Cause(r.ctx), err))
			}
			if errors.Is(err, errNoSlot) {
				return giveUp(fmt.Errorf("no claim before the misfire deadline: %w", err))
			}
			refused := errors.Is(err, election.ErrClaimed) || errors.Is(err, election.ErrBusy) || errors.Is(err, ErrPaused) ||
				errors.Is(err, election.ErrNotLeader) || errors.Is(err, claims.ErrNeverClaimed) || errors.Is(err, ErrMaxRuns)
			if !refused {
				unanswered = true // sent, and no answer came back
			} else if h, ok := adopted(); ok {
				return h, nil
			}
			if errors.Is(err, election.ErrBusy) && buffering(r.job.policy.overlap) {
				return cl.bufferTick(r) // buffer.go
			}
			if errors.Is(err, election.ErrClaimed) && buffering(r.job.policy.overlap) {
				return cl.joinBuffered(r, err)
			}
			if refused {
				co.rep.refusals.accepted()
				if try > 1 {
					err = &retriedError{err}
				}
				return held{}, err
			}
		} else if errors.Is(serr, election.ErrTTLBelowMinimum) {
			return held{}, serr // no retry mends it
		} else {
			err = serr
		}
		// Retried all the same: etcd may accept the claim before its
		// deadline, once space is freed or a permission granted.
		r.rs.unsend(r) // waiting again, for etcd
		if err := retry(r, err, &backoff, latest, "claim"); err != nil {
			return giveUp(err)
		}
	}
}

// retry waits backoff before the next try of r's claim, which etcd did not
// take (err), and doubles it; or says why no try follows: r's context
// ended, or the try would come after latest (unless zero), the deadline of
// what. Retries pace against etcd, which runs on real time whatever the
// Cron's clock.
func retry(r *run, err error, backoff *time.Duration, latest time.Time, what string) error {
	r.co.rep.refusals.refused(err)
	if r.ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", context.Cause(r.ctx), err)
	}
	if !latest.IsZero() && r.co.clock.Now().Add(*backoff).After(latest) {
		return fmt.Errorf("no %s before the misfire deadline: %w", what, err)
	}
	sleep(r.ctx, *backoff)
	*backoff = min(2**backoff, maxRetryBackoff)
	return nil
}

// errNotSent is the outcome of a claim given up before it was sent.
var errNotSent = errors.New("the claim was not sent")

// errNoSlot is the outcome of a claim that waited for a slot among
// maxClaims until its misfire deadline: etcd answered the claims ahead of
// it too slowly.
var errNoSlot = fmt.Errorf("the claim waited for one of %d in flight to come back, and was not sent", maxClaims)

// retriedError is the outcome of a claim that etcd answered only after
// retries: while etcd was out, the job's later ticks were being claimed too.
type retriedError struct{ error }

func (e *retriedError) Unwrap() error { return e.error }

// claimSingle sends one claim of r, waiting for a slot among maxClaims
// until r's misfire deadline: a tick whose claim could not go out by then
// is reported, not sent late.
func (cl *claimer) claimSingle(r *run, key string, seq int64, opts []election.ClaimOption) (election.Claim, error) {
	select {
	case cl.slots <- struct{}{}:
	default:
		// Every slot is taken: a crowded tick on an etcd that is slow to
		// answer.
		co := cl.co
		t := co.clock.NewTimer(co.deadline(r).Sub(co.clock.Now()))
		defer t.Stop()
		select {
		case cl.slots <- struct{}{}:
		case <-r.ctx.Done():
			return election.Claim{}, errNotSent
		case <-t.C(): // mutation:slot-wait-unbounded
			return election.Claim{}, errNoSlot
		}
	}
	defer func() { <-cl.slots }()
	if !r.rs.send(r) {
		return election.Claim{}, errNotSent
	}
	// Once sent, the claim is awaited even if the run is given up
	// meanwhile: a claim that commits is given back, where giving up on it
	// would leave its tick claimed and never run.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), etcdTimeout)
	defer cancel()
	return election.ClaimSeq(ctx, cl.co.conn.etcd(), key, seq, opts...)
}

// giveBack gives back the claim of a run that does not start: a tick's
// claim key goes back to the sequence before it, so that another replica
// (a successor, or this one's next resync) can claim it, and its marker
// goes; a trigger's request is put back. It retries while etcd does not
// answer, within withdrawTimeout.
func (cl *claimer) giveBack(r *run, c held) {
	co := cl.co
	if c.share != nil {
		// Its job's claim key was not moved: the record's settle leaves
		// it out.
		c.share.decide(c.index, false)
		c.share.end()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
	defer cancel()
	var err error
	switch {
	case r.buf != nil:
		err = cl.giveBackBuffered(ctx, r, c)
	case r.triggered():
		err = cl.giveBackTrigger(ctx, r, c)
	case r.bf != nil:
		err = cl.giveBackBackfill(ctx, r, c)
	default:
		err = co.writes.withdrawTick(ctx, co.conn.etcd(), r, c.claim)
	}
	if err != nil {
		co.logger.Error(err, "cronx: a claim whose run did not start could not be given back; its tick will not run",
			"job", r.job.name, "tick", r.tick)
	}
	cl.sessions.Put(c.sess) // the marker is gone, or goes with its lease
}
