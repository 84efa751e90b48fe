package claims

import (
	"context"
	"errors"
	"fmt"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/nested"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// MaxRefusals is how many items one Refusals read takes: a read of each
// item's key, refusalGroup of them to a transaction nested in it, within
// etcd's default --max-txn-ops.
const MaxRefusals = 1024

// refusalGroup is how many reads a transaction nested in Refusals' holds.
const refusalGroup = 64

// Refusals reads, in one read-only transaction under the items' term (as
// ClaimEach takes it), each item's key, and returns for each item the
// refusal ClaimEach would give it because its key holds a claim at or
// after its sequence (a *election.ClaimedError), or nil for an item
// ClaimEach would try. A term that has ended reads nothing and refuses no
// item (ok false): ClaimEach then tells each item so.
//
// Cost: one read, which etcd serves without a raft proposal, where the
// claims of items claimed already are two write transactions (ClaimEach).
// A new term's catch-up, after a handover, is mostly such items.
func Refusals(ctx context.Context, client *clientv3.Client, items []ClaimItem) (refusals []error, ok bool, err error) {
	if client == nil {
		return nil, false, errors.New("election: nil etcd client")
	}
	if len(items) > MaxRefusals {
		return nil, false, fmt.Errorf("election: %d claims read in one transaction; at most %d", len(items), MaxRefusals)
	}
	reads := make([]clientv3.Op, len(items))
	var term *claimcond.Term
	for i, it := range items {
		if i == 0 {
			term = claimcond.Apply(it.Opts).Term
		}
		reads[i] = clientv3.OpGet(it.Key)
	}
	txn := client.Txn(ctx)
	if term != nil {
		txn = txn.If(term.Cmp()) // mutation:refusals-term
	}
	resp, err := txn.Then(nested.Group(reads, refusalGroup)...).Commit()
	if err != nil {
		return nil, false, fmt.Errorf("election: read %d claims: %w", len(items), err)
	}
	if !resp.Succeeded {
		return nil, false, nil
	}
	refusals = make([]error, len(items))
	for i, r := range nested.Responses(resp.Responses) {
		kvs := r.GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue
		}
		seq, holder, err := claimcond.Parse(string(kvs[0].Value))
		if err == nil && seq >= items[i].Seq { // mutation:refusals-claimed
			refusals[i] = &election.ClaimedError{Key: items[i].Key, Want: items[i].Seq, Seq: seq, Holder: holder}
		}
	}
	return refusals, true, nil
}
