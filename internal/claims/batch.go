package claims

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ClaimItem is one claim of ClaimAll.
type ClaimItem struct {
	Key  string
	Seq  int64
	Opts []election.ClaimOption
	// Fresh says the key is not expected to exist yet: its absence is
	// compared instead of its value, which a missing key would fail.
	Fresh bool
}

// maxClaimCompares keeps a ClaimAll transaction within etcd's default limit
// of 128 operations in each part of a transaction.
const maxClaimCompares = 128

// ErrClaimConflict means ClaimAll committed nothing because a condition of
// at least one item failed; election.ClaimSeq on each item tells which and
// why.
var ErrClaimConflict = errors.New("election: a claim of the batch failed")

// ClaimAll claims every item in one transaction, or none, with the same
// conditions election.ClaimSeq would check for each; conditions shared by
// items, such as one term, are compared once. It lets a leader claim many
// jobs due on one tick in a few round trips. On ErrClaimConflict nothing was
// claimed.
func ClaimAll(ctx context.Context, client *clientv3.Client, items []ClaimItem) ([]election.Claim, error) {
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
		o := claimcond.Apply(it.Opts)
		bound := claimcond.Bound(it.Seq)
		val := claimcond.Value(it.Seq, o.Holder)
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
		if o.Term != nil {
			add(fmt.Sprintf("term %s %d", o.Term.Key, o.Term.Revision), o.Term.Cmp()) // mutation:claimall-term
		}
		for _, a := range o.Absent {
			c := clientv3.Compare(clientv3.CreateRevision(a.Key), "=", 0)
			if a.Prefix {
				c = c.WithPrefix()
			}
			add(fmt.Sprintf("absent %v %s", a.Prefix, a.Key), c)
		}
		then = append(then, clientv3.OpPut(it.Key, val))
		if o.Marker != "" {
			add("absent false "+o.Marker, clientv3.Compare(clientv3.CreateRevision(o.Marker), "=", 0))
			then = append(then, clientv3.OpPut(o.Marker, val, clientv3.WithLease(o.Lease)))
			markers[i] = o.Marker
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
	claims := make([]election.Claim, len(items))
	for i, it := range items {
		claims[i] = election.Claim{Seq: it.Seq, Revision: resp.Header.Revision}
		if markers[i] != "" {
			claims[i].Fence = election.Fence{Key: markers[i], Revision: resp.Header.Revision}
		}
	}
	return claims, nil
}
