package election

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Errors of claims.
var (
	// ErrClaimed means the sequence, or a later one, was claimed already.
	ErrClaimed = errors.New("election: already claimed")
	// ErrNotLeader means the claim required a term that is no longer current.
	ErrNotLeader = errors.New("election: term is not current")
	// ErrNeverClaimed means a claim made with IfClaimedBefore found no
	// earlier claim at its key.
	ErrNeverClaimed = errors.New("election: never claimed before")
	// ErrBusy means the claim was exclusive and a run is in progress.
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

// ClaimOption adds a condition or a side effect to a claim.
type ClaimOption func(*claimOptions)

type claimOptions struct {
	term   *Fence
	holder string
	marker string
	lease  clientv3.LeaseID
	absent []absence
	resume bool
}

// absence is a condition that no key exists at key (or under it, as a
// prefix), failing the claim with err.
type absence struct {
	key    string
	prefix bool
	err    error
}

// UnderTerm makes the claim commit only while term is current, so a deposed
// leader cannot claim.
func UnderTerm(term Fence) ClaimOption {
	return func(o *claimOptions) { o.term = &term }
}

// ClaimedBy records who claims, for status and history.
func ClaimedBy(identity string) ClaimOption {
	return func(o *claimOptions) { o.holder = identity }
}

// WithMarker also creates key, attached to lease, in the same transaction:
// an in-progress marker that disappears with its holder's session. The
// claim's Fence is the marker's.
func WithMarker(key string, lease clientv3.LeaseID) ClaimOption {
	return func(o *claimOptions) { o.marker, o.lease = key, lease }
}

// Exclusive makes the claim fail with ErrBusy while any key under prefix
// exists: no two runs overlap when their markers live under prefix.
func Exclusive(prefix string) ClaimOption {
	return func(o *claimOptions) { o.absent = append(o.absent, absence{key: prefix, prefix: true, err: ErrBusy}) }
}

// IfClaimedBefore makes the claim fail with ErrNeverClaimed when nothing was
// ever claimed at its key. cronx uses it to catch up a tick missed during a
// failover only for jobs that have run in the cluster before, not on a
// cluster's first start.
func IfClaimedBefore() ClaimOption {
	return func(o *claimOptions) { o.resume = true }
}

// UnlessExists makes the claim fail with err while key exists; cronx uses it
// for a job's pause flag.
func UnlessExists(key string, err error) ClaimOption {
	return func(o *claimOptions) { o.absent = append(o.absent, absence{key: key, err: err}) }
}

// Claim is a claimed sequence number.
type Claim struct {
	// Seq is the claimed sequence (for cronx, the tick's nominal time).
	Seq int64
	// Revision is the etcd revision of the claim: a fencing token that grows
	// with every claim.
	Revision int64
	// Fence is the marker's fence when the claim made one.
	Fence Fence
}

// seqWidth is the width of the zero-padded sequence at the head of a claim
// value, so that etcd's byte-wise comparison of values orders sequences.
const seqWidth = 20

// ClaimSeq claims seq at key once for the whole cluster: it commits, in one
// transaction, only if every sequence claimed at key before is lower, and
// only while the options' conditions hold. It returns ErrClaimed,
// ErrNotLeader or ErrBusy when a condition fails. seq must not be negative.
func ClaimSeq(ctx context.Context, client *clientv3.Client, key string, seq int64, opts ...ClaimOption) (Claim, error) {
	if client == nil {
		return Claim{}, errors.New("election: nil etcd client")
	}
	if key == "" || seq < 0 {
		return Claim{}, fmt.Errorf("election: claim %q seq %d: want a key and a sequence of 0 or more", key, seq)
	}
	var o claimOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	bound := fmt.Sprintf("%0*d", seqWidth, seq)
	val := bound + " " + o.holder

	var conds []clientv3.Cmp
	if o.term != nil {
		conds = append(conds, o.term.Cmp()) // mutation:claim-term
	}
	for _, a := range o.absent {
		cmp := clientv3.Compare(clientv3.CreateRevision(a.key), "=", 0)
		if a.prefix {
			cmp = cmp.WithPrefix()
		}
		conds = append(conds, cmp)
	}
	then := []clientv3.Op{clientv3.OpPut(key, val)}
	if o.marker != "" {
		// A fresh marker, so its create revision is the claim's.
		o.absent = append(o.absent, absence{key: o.marker, err: ErrBusy})
		conds = append(conds, clientv3.Compare(clientv3.CreateRevision(o.marker), "=", 0))
		then = append(then, clientv3.OpPut(o.marker, val, clientv3.WithLease(o.lease)))
	}
	// Read back what failed, to say why.
	var orElse []clientv3.Op
	orElse = append(orElse, clientv3.OpGet(key))
	if o.term != nil {
		orElse = append(orElse, clientv3.OpGet(o.term.Key, clientv3.WithKeysOnly()))
	}
	for _, a := range o.absent {
		opts := []clientv3.OpOption{clientv3.WithCountOnly()}
		if a.prefix {
			opts = append(opts, clientv3.WithPrefix())
		}
		orElse = append(orElse, clientv3.OpGet(a.key, opts...))
	}

	// A value compare fails on a missing key, so a key that does not exist
	// yet is claimed by comparing its absence; if another claim creates it
	// between two tries, the value is compared again.
	exists := true
	for range 3 {
		cmp := clientv3.Compare(clientv3.Value(key), "<", bound)
		if !exists {
			cmp = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		}
		resp, err := client.Txn(ctx).If(append([]clientv3.Cmp{cmp}, conds...)...).Then(then...).Else(orElse...).Commit()
		if err != nil {
			return Claim{}, fmt.Errorf("election: claim %s seq %d: %w", key, seq, err)
		}
		if resp.Succeeded {
			c := Claim{Seq: seq, Revision: resp.Header.Revision}
			if o.marker != "" {
				c.Fence = Fence{Key: o.marker, Revision: resp.Header.Revision}
			}
			return c, nil
		}
		rs := resp.Responses
		// A tick done already is the plainest reason, so it is told first.
		last := rs[0].GetResponseRange().Kvs
		if len(last) > 0 {
			done, holder, err := parseClaim(string(last[0].Value))
			if err != nil {
				return Claim{}, fmt.Errorf("claim %s seq %d: %w (%v)", key, seq, ErrClaimed, err)
			}
			if done >= seq {
				return Claim{}, &ClaimedError{Key: key, Want: seq, Seq: done, Holder: holder}
			}
		}
		i := 1
		if o.term != nil {
			kvs := rs[i].GetResponseRange().Kvs
			if len(kvs) == 0 || kvs[0].CreateRevision != o.term.Revision {
				return Claim{}, fmt.Errorf("claim %s seq %d: %w", key, seq, ErrNotLeader)
			}
			i++
		}
		for _, a := range o.absent {
			if rs[i].GetResponseRange().Count > 0 {
				return Claim{}, fmt.Errorf("claim %s seq %d: %w", key, seq, a.err)
			}
			i++
		}
		// Only the key's existence can have changed: try the other compare.
		exists = len(last) > 0
		if !exists && o.resume {
			return Claim{}, fmt.Errorf("claim %s seq %d: %w", key, seq, ErrNeverClaimed)
		}
	}
	return Claim{}, fmt.Errorf("election: claim %s seq %d: the key changed under every try", key, seq)
}

// ClaimItem is one claim of ClaimAll.
type ClaimItem struct {
	Key  string
	Seq  int64
	Opts []ClaimOption
	// Fresh says the key is not expected to exist yet: its absence is
	// compared instead of its value, which a missing key would fail.
	Fresh bool
}

// maxClaimCompares keeps a ClaimAll transaction within etcd's default limit
// of 128 operations in each part of a transaction.
const maxClaimCompares = 128

// ErrClaimConflict means ClaimAll committed nothing because a condition of
// at least one item failed; ClaimSeq on each item tells which and why.
var ErrClaimConflict = errors.New("election: a claim of the batch failed")

// ClaimAll claims every item in one transaction, or none, with the same
// conditions ClaimSeq would check for each; conditions shared by items, such
// as one term, are compared once. It lets a leader claim many jobs due on
// one tick in a few round trips. On ErrClaimConflict nothing was claimed.
func ClaimAll(ctx context.Context, client *clientv3.Client, items []ClaimItem) ([]Claim, error) {
	if client == nil {
		return nil, errors.New("election: nil etcd client")
	}
	seen := map[string]bool{}
	var conds []clientv3.Cmp
	var then []clientv3.Op
	markers := make([]string, len(items))
	for i, it := range items {
		if it.Key == "" || it.Seq < 0 {
			return nil, fmt.Errorf("election: claim %q seq %d: want a key and a sequence of 0 or more", it.Key, it.Seq)
		}
		var o claimOptions
		for _, opt := range it.Opts {
			if opt != nil {
				opt(&o)
			}
		}
		bound := fmt.Sprintf("%0*d", seqWidth, it.Seq)
		val := bound + " " + o.holder
		add := func(id string, c clientv3.Cmp) {
			if !seen[id] {
				seen[id] = true
				conds = append(conds, c)
			}
		}
		if it.Fresh {
			add("new "+it.Key, clientv3.Compare(clientv3.CreateRevision(it.Key), "=", 0))
		} else {
			add("seq "+it.Key, clientv3.Compare(clientv3.Value(it.Key), "<", bound))
		}
		if o.term != nil {
			add(fmt.Sprintf("term %s %d", o.term.Key, o.term.Revision), o.term.Cmp()) // mutation:claimall-term
		}
		for _, a := range o.absent {
			c := clientv3.Compare(clientv3.CreateRevision(a.key), "=", 0)
			if a.prefix {
				c = c.WithPrefix()
			}
			add(fmt.Sprintf("absent %v %s", a.prefix, a.key), c)
		}
		then = append(then, clientv3.OpPut(it.Key, val))
		if o.marker != "" {
			add("absent false "+o.marker, clientv3.Compare(clientv3.CreateRevision(o.marker), "=", 0))
			then = append(then, clientv3.OpPut(o.marker, val, clientv3.WithLease(o.lease)))
			markers[i] = o.marker
		}
	}
	if len(conds) > maxClaimCompares || len(then) > maxClaimCompares {
		return nil, fmt.Errorf("election: %d claims need %d compares and %d puts; etcd takes %d of each per transaction",
			len(items), len(conds), len(then), maxClaimCompares)
	}
	resp, err := client.Txn(ctx).If(conds...).Then(then...).Commit()
	if err != nil {
		return nil, fmt.Errorf("election: claim %d items: %w", len(items), err)
	}
	if !resp.Succeeded {
		return nil, ErrClaimConflict
	}
	claims := make([]Claim, len(items))
	for i, it := range items {
		claims[i] = Claim{Seq: it.Seq, Revision: resp.Header.Revision}
		if markers[i] != "" {
			claims[i].Fence = Fence{Key: markers[i], Revision: resp.Header.Revision}
		}
	}
	return claims, nil
}

// LastClaim returns the highest sequence claimed at key and who claimed it;
// ok is false when nothing was claimed there.
func LastClaim(ctx context.Context, client *clientv3.Client, key string) (seq int64, holder string, ok bool, err error) {
	resp, err := client.Get(ctx, key)
	if err != nil {
		return 0, "", false, fmt.Errorf("election: read claim %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, "", false, nil
	}
	seq, holder, err = parseClaim(string(resp.Kvs[0].Value))
	if err != nil {
		return 0, "", false, fmt.Errorf("election: claim %s: %w", key, err)
	}
	return seq, holder, true, nil
}

func parseClaim(v string) (int64, string, error) {
	num, holder, _ := strings.Cut(v, " ")
	seq, err := strconv.ParseInt(num, 10, 64)
	if err != nil || len(num) != seqWidth {
		return 0, "", fmt.Errorf("malformed claim value %q", v)
	}
	return seq, holder, nil
}

// Release deletes a claim's marker while it is still the claim's own.
func Release(ctx context.Context, client *clientv3.Client, c Claim) error {
	if c.Fence.Key == "" {
		return nil
	}
	_, err := client.Txn(ctx).If(c.Fence.Cmp()).Then(clientv3.OpDelete(c.Fence.Key)).Commit()
	if err != nil {
		return fmt.Errorf("election: release %s: %w", c.Fence.Key, err)
	}
	return nil
}

// ErrNotWithdrawn means a claim could not be withdrawn: a later claim
// replaced it, or it was never made.
var ErrNotWithdrawn = errors.New("election: claim already superseded")

// Withdraw gives back claim c at key, made and not acted on: while key still
// holds c, it sets key back to prev (claimed by holder) and deletes c's
// marker, in one transaction, so the sequence can be claimed again, for
// example by a successor. It returns ErrNotWithdrawn once another claim has
// replaced c.
func Withdraw(ctx context.Context, client *clientv3.Client, key string, c Claim, prev int64, holder string) error {
	if prev < 0 || prev >= c.Seq {
		return fmt.Errorf("election: withdraw %s: previous sequence %d not below the claim's %d", key, prev, c.Seq)
	}
	then := []clientv3.Op{clientv3.OpPut(key, fmt.Sprintf("%0*d %s", seqWidth, prev, holder))}
	if c.Fence.Key != "" {
		then = append(then, clientv3.OpDelete(c.Fence.Key))
	}
	resp, err := client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", c.Revision)).Then(then...).Commit()
	if err != nil {
		return fmt.Errorf("election: withdraw %s: %w", key, err)
	}
	if !resp.Succeeded {
		return ErrNotWithdrawn
	}
	return nil
}
