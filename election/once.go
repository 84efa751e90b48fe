package election

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A once-claim runs a piece of work once for a key however often it is
// asked to, as a retried timer asks: the work runs only if no run of the key
// succeeded within a window and none is running now.
//
// While the work runs, the claim is a marker at P/once/<key>/running bound
// to a session of its own: a holder that crashes frees the key within the
// session's TTL, and a run longer than the window still excludes every
// other caller. Only a success is recorded, at P/once/<key> with a lease of
// the window's length; a failed run gives the key back at once.

// Errors of once-claims.
var (
	// ErrDone means a run of the key succeeded within the window.
	ErrDone = errors.New("election: already done within the window")
	// ErrClaimLost means the claim's session ended (etcd unreachable past
	// the safe deadline, or the lease lost), or its marker was deleted or
	// replaced, before the run was recorded.
	ErrClaimLost = errors.New("election: once-claim lost")
)

// OnceError is the ErrDone or ErrBusy of a once-claim, with who succeeded
// or runs, and since when.
type OnceError struct {
	Key string
	By  string
	At  time.Time
	Err error // ErrDone or ErrBusy
}

func (e *OnceError) Error() string {
	return fmt.Sprintf("once %q: %v (by %q at %s)", e.Key, e.Err, e.By, e.At.Format(time.RFC3339))
}

// Unwrap makes errors.Is(err, ErrDone) or errors.Is(err, ErrBusy) hold.
func (e *OnceError) Unwrap() error { return e.Err }

// onceRecord is the value of a once-claim's keys.
type onceRecord struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// Once is a held once-claim.
type Once struct {
	client   *clientv3.Client
	session  *Session
	key      string // P/once/<key>: the record of a success
	identity string
	window   time.Duration
	fence    Fence
	// hold is done when the claim ends (holdContext); release ends it.
	hold    context.Context
	release context.CancelCauseFunc
}

// CheckOnceKey validates a once-claim's key: one segment of an etcd key,
// without '/', white space or control characters, at most 200 bytes.
func CheckOnceKey(key string) error {
	switch {
	case key == "":
		return errors.New("election: once key is empty")
	case len(key) > 200:
		return fmt.Errorf("election: once key %.20q...: longer than 200 bytes", key)
	case strings.ContainsFunc(key, func(r rune) bool { return r == '/' || unicode.IsSpace(r) || !unicode.IsPrint(r) }):
		return fmt.Errorf("election: once key %q: no '/', white space or control characters", key)
	}
	return nil
}

// ClaimOnce claims key for one run, unless a run of it succeeded within
// window (a *OnceError wrapping ErrDone) or one runs now (wrapping ErrBusy).
// It opens a session with the options' prefix, identity and TTL; the claim
// lasts as long as the session, until Succeeded or Release. ctx bounds the
// claim only.
func ClaimOnce(ctx context.Context, client *clientv3.Client, key string, window time.Duration, opts ...Option) (*Once, error) {
	if client == nil {
		return nil, errNilClient
	}
	if err := CheckOnceKey(key); err != nil {
		return nil, err
	}
	if window < time.Second || window%time.Second != 0 || window > MaxTTL {
		return nil, fmt.Errorf("election: once %q: window %v: want whole seconds from 1s to %v", key, window, MaxTTL)
	}
	o, err := buildOptions(opts)
	if err != nil {
		return nil, err
	}
	sess, err := newSession(ctx, client, o)
	if err != nil {
		return nil, err
	}
	c := &Once{client: client, session: sess, key: o.prefix + "/once/" + key, identity: o.identity, window: window}
	marker := c.key + "/running"
	val, _ := json.Marshal(onceRecord{By: o.identity, At: o.clock.Now().UTC()})
	resp, err := client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(c.key), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(marker), "=", 0)).
		Then(clientv3.OpPut(marker, string(val), clientv3.WithLease(sess.Lease()))).
		Else(clientv3.OpGet(c.key), clientv3.OpGet(marker)).
		Commit()
	if err != nil {
		c.closeSession()
		return nil, fmt.Errorf("election: once %q: %w", key, err)
	}
	if !resp.Succeeded { // mutation:once-claim
		c.closeSession()
		for i, why := range []error{ErrDone, ErrBusy} {
			if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) > 0 {
				var rec onceRecord
				_ = json.Unmarshal(kvs[0].Value, &rec) // a foreign value still excludes
				return nil, &OnceError{Key: key, By: rec.By, At: rec.At, Err: why}
			}
		}
		return nil, fmt.Errorf("election: once %q: the keys changed during the claim; try again", key)
	}
	c.fence = Fence{Key: marker, Revision: resp.Header.Revision}
	c.hold, c.release = holdContext(sess, client, c.fence, resp.Header.Revision, ErrClaimLost)
	return c, nil
}

// Fence is the claim's fencing token: its marker's create revision.
func (c *Once) Fence() Fence { return c.fence }

// Context is done when the claim may be lost: at the session's safe
// deadline, when its lease is gone, when its marker is deleted or replaced
// (ErrClaimLost), or after Succeeded or Release. Work done under it ends
// before another caller can claim the key.
func (c *Once) Context() context.Context { return c.hold }

// Succeeded records a successful run, so the key is done for the window,
// and ends the claim. It returns ErrClaimLost when the claim was lost
// before the record: another caller may have claimed the key since.
func (c *Once) Succeeded(ctx context.Context) error {
	defer c.closeSession()
	if c.hold.Err() != nil {
		if cause := context.Cause(c.hold); errors.Is(cause, ErrClaimLost) {
			return cause
		}
		return fmt.Errorf("%w: %v", ErrClaimLost, context.Cause(c.hold))
	}
	// Ended before the record deletes the marker, which is not a loss.
	c.release(ErrSessionClosed)
	lease, err := c.client.Grant(ctx, int64(c.window/time.Second))
	if err != nil {
		return fmt.Errorf("election: once %s: record success: %w", c.key, err)
	}
	val, _ := json.Marshal(onceRecord{By: c.identity, At: c.session.opts.clock.Now().UTC()})
	resp, err := c.client.Txn(ctx).
		If(c.fence.Cmp()).
		Then(clientv3.OpPut(c.key, string(val), clientv3.WithLease(lease.ID)), clientv3.OpDelete(c.fence.Key)).
		Commit()
	if err == nil && !resp.Succeeded {
		err = ErrClaimLost
	}
	if err != nil {
		_, _ = c.client.Revoke(context.WithoutCancel(ctx), lease.ID)
		return fmt.Errorf("election: once %s: record success: %w", c.key, err)
	}
	return nil
}

// Release ends the claim without recording a success, so the next caller
// runs the work. If etcd cannot be reached the claim lapses with its
// session's TTL.
func (c *Once) Release(ctx context.Context) error {
	c.release(ErrSessionClosed)
	return c.session.Close(ctx)
}

func (c *Once) closeSession() {
	if c.release != nil { // nil when the claim failed
		c.release(ErrSessionClosed)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.session.opts.ttl)
	defer cancel()
	_ = c.session.Close(ctx)
}
