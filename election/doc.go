// Package election gives a cluster of processes one leader, mutual exclusion
// and once-only claims, on etcd, with fencing and a safe local deadline.
//
// # Guarantees, and what they assume
//
// A leader's (or lock holder's) work runs under a context that is cancelled
// at the session's safe local deadline: the send time of the last keepalive
// the server acknowledged, plus the lease TTL, less a margin (WithMargin).
// The server renews a lease when it receives a keepalive, which is after it
// was sent, so it cannot expire the lease before that moment. Work that stops
// when its context is done has therefore stopped before another instance can
// be elected, even when this one is partitioned from etcd or was paused.
//
// This holds when:
//
//   - clocks run at about the same rate: the local clock and the etcd leader's
//     may disagree on the time of day by any amount, but over one TTL they
//     must not drift apart by more than the margin (default: a tenth of the
//     TTL, at least 500 ms). Only the monotonic clock is used;
//   - work notices its context within the margin. A process that is paused
//     (SIGSTOP, a long GC, a frozen VM) for longer than that cannot notice
//     anything; for that case every term, hold and claim carries a fencing
//     token (Fence) to put in the transactions of the work itself, so a
//     deposed holder's writes fail wherever they are checked;
//   - etcd is linearizable, which it is for the calls made here.
//
// A term's fence lasts as long as the term: a leader that resigns gives it up
// at once, and a leader deposed when its lease expired loses it with the
// lease. Work that a resigning leader lets finish, and that must still
// write, is fenced by a key of its own bound to a lease that outlives the
// term until the work ends (a Session's, with Fence{Key, Revision} of that
// key), so its writes succeed after a graceful resignation and fail once the
// lease has expired.
//
// A candidate that loses its session (lease expired, revoked, or etcd
// restarted with no data) campaigns again on a fresh session by itself, with
// backoff while etcd cannot be reached. Nothing blocks without a context;
// every goroutine the package starts ends with the call or object that
// started it.
//
// # Keys
//
// Under a prefix P (WithPrefix, BATON_PREFIX, default "/baton"):
//
//	P/election/<name>/<lease>   an Elector, exactly as etcd's concurrency.Election
//	P/lock/<name>/<lease>       a Mutex, exactly as etcd's concurrency.Mutex
//	P/once/<key>/running        a once-claim's run, bound to its session
//	P/once/<key>                a once-claim's success, leased for its window
//
// so `etcdctl elect P/election/<name> x` and `etcdctl lock P/lock/<name>`
// compete with baton as equals. Claims (ClaimSeq) are at keys their caller
// chooses. A term, a hold and a once-claim each watch their own key: its
// deletion (etcdctl del) or replacement ends them, as their lease's loss
// does.
//
// # Use
//
// An Elector (New) campaigns in Run and calls a function for each Term it
// wins; Elector.Leader and Observe tell anyone who leads, as a Leader. A
// Mutex (NewMutex) is a lock with Lock, TryLock and Unlock, one session per
// hold; Holder tells who holds it. A Session (NewSession) is the lease under
// both, with the safe deadline as its context; its Err reads the clock
// itself, so that work about to start under it can ask, right then, whether
// the deadline has passed. Terms, holds and claims each carry a Fence.
//
// ClaimSeq claims a sequence number (a tick of a schedule, a batch, a
// version) once for the whole cluster: the first claim of a sequence wins,
// and a claim of a lower sequence after it fails. The Claim it returns
// carries the claim's revision, a fencing token. Its ClaimOption values are
// ClaimedBy, which records who claimed, for LastClaim and ClaimedError, and
// UnderTerm, which makes the claim commit only while a term is current.
// ClaimOnce runs a piece of work once for a key however often it is asked
// to: the claim is held by a session while the work runs, and only a
// success is recorded, for a window; CheckOnceKey validates such a key.
//
// Errors are values to branch on with errors.Is: ErrNoLeader,
// ErrLeadershipLost and ErrClientClosed of elections; ErrLocked,
// ErrNotLocked, ErrAlreadyLocked and ErrLockLost (the holder's key deleted
// or replaced: the cause of the hold's context) of locks; ErrSessionExpired,
// ErrLeaseLost, ErrSessionClosed and ErrTTLBelowMinimum of sessions (the
// cause of a session's, and so of a term's or a hold's, context); ErrClaimed
// (a *ClaimedError) and ErrNotLeader of claims; ErrDone, ErrBusy and
// ErrClaimLost (also the cause of a claim's context when its marker is
// deleted or replaced) of once-claims, whose ErrDone and ErrBusy come as a
// *OnceError.
//
// This package holds what an application needs. The machinery that only
// baton's own scheduler uses, built on the same claims, is internal to the
// module: in-progress markers, the conditions that keep runs from
// overlapping, batched claims and withdrawn claims (internal/claims), and
// the detection of an etcd that came back empty (internal/emptyetcd).
//
// Configuration follows the environment, and explicit options win: the
// BATON_ETCD_* variables give a Connection (ConnectionFromEnv, dialling
// within DefaultDialTimeout unless told otherwise), and BATON_PREFIX, BATON_ID
// and BATON_TTL (whole seconds, "10" or "10s", up to MaxTTL; see ParseTTL)
// the defaults of the Option values WithPrefix, WithIdentity and WithTTL
// (taken by New, NewMutex, NewSession, ClaimOnce and Resolve), which are
// DefaultPrefix, DefaultIdentity and DefaultTTL. Resolve returns the
// Settings they give; WithMargin and WithLogger tune the safe deadline and
// the logging; CheckName validates a name.
package election
