package election

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/internal/claimcond"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Errors of claims.
var (
	// ErrClaimed means the sequence, or a later one, was claimed already.
	ErrClaimed = errors.New("election: already claimed")
	// ErrNotLeader means the claim required a term that is no longer current.
	ErrNotLeader = errors.New("election: term is not current")
	// ErrBusy means a run is in progress that the claim must not overlap: a
	// once-claim's (ClaimOnce), or one that a claim's conditions exclude.
	ErrBusy = errors.New("election: a run is in progress")
)

// ClaimedError is the ErrClaimed of a claim that found Seq, as high as its
// own or higher, claimed at Key by Holder (ClaimedBy's identity).
type ClaimedError struct {
	Key    string
	Want   int64 // the sequence the failed claim asked for
	Seq    int64
	Holder string
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("claim %s seq %d: %v (seq %d, by %q)", e.Key, e.Want, ErrClaimed, e.Seq, e.Holder)
}

// Unwrap makes errors.Is(err, ErrClaimed) hold.
func (e *ClaimedError) Unwrap() error { return ErrClaimed }

// ClaimOption adds a condition or a side effect to a claim: ClaimedBy,
// UnderTerm.
type ClaimOption func(*claimOptions)

type claimOptions = claimcond.Options

// UnderTerm makes the claim commit only while term is current, so a deposed
// leader cannot claim.
func UnderTerm(term Fence) ClaimOption {
	return func(o *claimOptions) { o.Term = &claimcond.Term{Key: term.Key, Revision: term.Revision} }
}

// ClaimedBy records who claims, for LastClaim and ClaimedError.
func ClaimedBy(identity string) ClaimOption {
	return func(o *claimOptions) { o.Holder = identity }
}

// Claim is a claimed sequence number.
type Claim struct {
	// Seq is the claimed sequence (for a schedule, a tick's time).
	Seq int64
	// Revision is the etcd revision of the claim: a fencing token that grows
	// with every claim.
	Revision int64
	// Fence is the fence of the claim's in-progress marker, when the claim
	// made one; it is zero otherwise.
	Fence Fence
}

// ClaimSeq claims seq at key once for the whole cluster: it commits, in one
// transaction, only if every sequence claimed at key before is lower, and
// only while the options' conditions hold. It returns ErrClaimed (a
// *ClaimedError naming who claimed) when seq or a later one was claimed, and
// ErrNotLeader when UnderTerm's term has ended. seq must not be negative.
func ClaimSeq(ctx context.Context, client *clientv3.Client, key string, seq int64, opts ...ClaimOption) (Claim, error) {
	if client == nil {
		return Claim{}, errNilClient
	}
	if key == "" || seq < 0 {
		return Claim{}, fmt.Errorf("election: claim %q seq %d: want a key and a sequence of 0 or more", key, seq)
	}
	o := claimcond.Apply(opts)
	bound := claimcond.Bound(seq)
	val := claimcond.Value(seq, o.Holder)

	var conds []clientv3.Cmp
	if o.Term != nil {
		conds = append(conds, o.Term.Cmp()) // mutation:claim-term
	}
	for _, a := range o.Absent {
		cmp := clientv3.Compare(clientv3.CreateRevision(a.Key), "=", 0)
		if a.Prefix {
			cmp = cmp.WithPrefix()
		}
		conds = append(conds, cmp)
	}
	then := []clientv3.Op{clientv3.OpPut(key, val)}
	if o.Counter != nil {
		conds = append(conds, o.Counter.Cmp())
		then = append(then, o.Counter.Op())
	}
	if o.Marker != "" {
		// A fresh marker, so its create revision is the claim's.
		o.Absent = append(o.Absent, claimcond.Absence{Key: o.Marker, Err: ErrBusy})
		conds = append(conds, clientv3.Compare(clientv3.CreateRevision(o.Marker), "=", 0))
		then = append(then, clientv3.OpPut(o.Marker, val, clientv3.WithLease(o.Lease)))
	}
	// Read back what failed, to say why.
	var orElse []clientv3.Op
	orElse = append(orElse, clientv3.OpGet(key))
	if o.Term != nil {
		orElse = append(orElse, clientv3.OpGet(o.Term.Key, clientv3.WithKeysOnly()))
	}
	for _, a := range o.Absent {
		opts := []clientv3.OpOption{clientv3.WithCountOnly()}
		if a.Prefix {
			opts = append(opts, clientv3.WithPrefix())
		}
		orElse = append(orElse, clientv3.OpGet(a.Key, opts...))
	}
	if o.Known != nil {
		orElse = append(orElse, clientv3.OpGet(o.Known.Key))
	}
	if o.Counter != nil {
		orElse = append(orElse, clientv3.OpGet(o.Counter.Key, clientv3.WithKeysOnly()))
	}

	// A value compare fails on a missing key, so a key that does not exist
	// yet is claimed by comparing its absence; if another claim creates it
	// between two tries, the value is compared again.
	exists := true
	for range 3 {
		cmps := []clientv3.Cmp{clientv3.Compare(clientv3.Value(key), "<", bound)}
		if !exists {
			cmps = []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}
			if o.Known != nil {
				cmps = append(cmps, o.Known.Cmps(seq)...)
			}
		}
		resp, err := client.Txn(ctx).If(append(cmps, conds...)...).Then(then...).Else(orElse...).Commit()
		if err != nil {
			return Claim{}, fmt.Errorf("election: claim %s seq %d: %w", key, seq, err)
		}
		if resp.Succeeded {
			c := Claim{Seq: seq, Revision: resp.Header.Revision}
			if o.Marker != "" {
				c.Fence = Fence{Key: o.Marker, Revision: resp.Header.Revision}
			}
			return c, nil
		}
		rs := resp.Responses
		// A tick done already is the plainest reason, so it is told first.
		last := rs[0].GetResponseRange().Kvs
		if len(last) > 0 {
			done, holder, err := claimcond.Parse(string(last[0].Value))
			if err != nil {
				return Claim{}, fmt.Errorf("claim %s seq %d: %w (%v)", key, seq, ErrClaimed, err)
			}
			if done >= seq {
				return Claim{}, &ClaimedError{Key: key, Want: seq, Seq: done, Holder: holder}
			}
		}
		i := 1
		if o.Term != nil {
			kvs := rs[i].GetResponseRange().Kvs
			if len(kvs) == 0 || kvs[0].CreateRevision != o.Term.Revision {
				return Claim{}, fmt.Errorf("claim %s seq %d: %w", key, seq, ErrNotLeader)
			}
			i++
		}
		for _, a := range o.Absent {
			if rs[i].GetResponseRange().Count > 0 {
				return Claim{}, fmt.Errorf("claim %s seq %d: %w", key, seq, a.Err)
			}
			i++
		}
		if o.Counter != nil {
			c := rs[len(rs)-1].GetResponseRange().Kvs
			if len(c) > 0 && o.Counter.Reached(c[0].Version) {
				return Claim{}, fmt.Errorf("claim %s seq %d: %w", key, seq, o.Counter.Err)
			}
		}
		// Only the key's existence (or, never claimed, what vouches for
		// it) can have changed: try the other compare.
		exists = len(last) > 0
		if !exists && o.NeverClaimed != nil {
			known := false
			if o.Known != nil {
				if kvs := rs[i].GetResponseRange().Kvs; len(kvs) > 0 {
					known = o.Known.Holds(kvs[0], seq)
				}
			}
			if !known {
				return Claim{}, fmt.Errorf("claim %s seq %d: %w", key, seq, o.NeverClaimed)
			}
		}
	}
	return Claim{}, fmt.Errorf("election: claim %s seq %d: the key changed under every try", key, seq)
}

// LastClaim returns the highest sequence claimed at key and who claimed it;
// ok is false when nothing was claimed there.
func LastClaim(ctx context.Context, client *clientv3.Client, key string) (seq int64, holder string, ok bool, err error) {
	if client == nil {
		return 0, "", false, errNilClient
	}
	resp, err := client.Get(ctx, key)
	if err != nil {
		return 0, "", false, fmt.Errorf("election: read claim %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, "", false, nil
	}
	seq, holder, err = claimcond.Parse(string(resp.Kvs[0].Value))
	if err != nil {
		return 0, "", false, fmt.Errorf("election: claim %s: %w", key, err)
	}
	return seq, holder, true, nil
}
