package claims

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/nested"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ClaimItem is one claim of ClaimEach.
type ClaimItem struct {
	Key  string
	Seq  int64
	Opts []election.ClaimOption
	// Held says that Key is known to hold a claim (the caller's own last
	// one): the first transaction claims it by its value alone, so its
	// puts go once in the request, not once for each way of claiming it.
	// A key not there after all is claimed by its absence in the second.
	Held bool
}

// MaxEach is how many items one ClaimEach transaction takes within etcd's
// default --max-txn-ops of 128: a nested transaction per item, eachGroup
// of them to a transaction nested in it, and each item's own few
// operations on each of its levels (up to about 15 along a path) within
// what is left.
const MaxEach = 256

// eachGroup is how many items a transaction nested in ClaimEach's holds.
const eachGroup = 64 // mutation:claimeach-group

// ClaimEach claims every item, each on its own: an item whose conditions
// fail leaves the others to commit. Each item checks what
// election.ClaimSeq would check for it, and an item's error is the one
// ClaimSeq would return (ErrClaimed as a *election.ClaimedError, ErrBusy,
// an Absence's error, ErrNeverClaimed); an item whose key is missing is
// claimed by comparing its absence. Items may share one term, given by the
// first item's UnderTerm: when the term has ended nothing commits and
// every item fails with ErrNotLeader.
//
// Cost: one transaction when every item's conditions hold, as on a
// crowded tick, whether each job ran before or this is its first claim; a
// second for the items that did not commit in it (a paused or busy job, a
// tick claimed already, a Held item whose key is not there), which reads
// why they fail. Each is a small
// transaction per item inside one.
//
// A transaction etcd refuses as larger than its --max-request-bytes, as
// items of long keys can make it, goes again as two of half the items.
//
// The error returned is etcd's when it answered none of the first
// transactions (nothing is known to have committed) or a bad item; the
// items' outcomes are in errs. An item whose transaction etcd did not
// answer has etcd's error, and may have committed.
func ClaimEach(ctx context.Context, client *clientv3.Client, items []ClaimItem) (claims []election.Claim, errs []error, err error) {
	if client == nil {
		return nil, nil, errors.New("election: nil etcd client")
	}
	if len(items) > MaxEach {
		return nil, nil, fmt.Errorf("election: %d claims in one transaction; etcd takes %d", len(items), MaxEach)
	}
	var term *claimcond.Term
	opts := make([]claimcond.Options, len(items))
	first := make([]clientv3.Op, len(items))
	for i, it := range items {
		if it.Key == "" || it.Seq < 0 {
			return nil, nil, fmt.Errorf("election: claim %q seq %d: want a key and a sequence of 0 or more", it.Key, it.Seq)
		}
		o := claimcond.Apply(it.Opts)
		if i == 0 {
			term = o.Term
		} else if (o.Term == nil) != (term == nil) || o.Term != nil && *o.Term != *term {
			return nil, nil, fmt.Errorf("election: claim %q: items of one ClaimEach share one term", it.Key)
		}
		opts[i] = o
		first[i] = claimOp(it, o, false)
	}
	done := commitEach(ctx, client, term, first)
	if err := done.failed(); err != nil {
		return nil, nil, fmt.Errorf("election: claim %d items: %w", len(items), err)
	}
	claims = make([]election.Claim, len(items))
	errs = make([]error, len(items))
	var rest []int
	for i, it := range items {
		switch c := done[i]; {
		case c.err != nil:
			errs[i] = fmt.Errorf("claim %s seq %d: %w", it.Key, it.Seq, c.err)
		case !c.term:
			errs[i] = fmt.Errorf("claim %s seq %d: %w", it.Key, it.Seq, election.ErrNotLeader)
		case claimed(c.r): // mutation:claimeach-first
			claims[i] = claimAt(it, opts[i], c.rev)
		default:
			rest = append(rest, i)
		}
	}
	if len(rest) == 0 {
		return claims, errs, nil
	}
	ops := make([]clientv3.Op, len(rest))
	for j, i := range rest {
		ops[j] = claimOp(items[i], opts[i], true)
	}
	done = commitEach(ctx, client, term, ops)
	for j, i := range rest {
		it, c := items[i], done[j]
		if c.err != nil {
			errs[i] = fmt.Errorf("claim %s seq %d: %w", it.Key, it.Seq, c.err)
			continue
		}
		if !c.term {
			errs[i] = fmt.Errorf("claim %s seq %d: %w", it.Key, it.Seq, election.ErrNotLeader)
			continue
		}
		ok, reads := outcome(c.r)
		if ok {
			claims[i] = claimAt(it, opts[i], c.rev)
			continue
		}
		errs[i] = whyNot(it, opts[i], reads)
	}
	return claims, errs, nil
}

// committed is what became of one item's op in a ClaimEach transaction:
// etcd's error, or whether the transaction's term held, its revision and
// the op's response.
type committed struct {
	err  error
	term bool
	rev  int64
	r    *etcdserverpb.ResponseOp
}

// commitAll tells what became of each of the ops of commitEach.
type commitAll []committed

// failed is etcd's error when no op was answered, else nil.
func (c commitAll) failed() error {
	var err error
	for _, op := range c {
		if op.err == nil {
			return nil
		}
		err = op.err
	}
	return err
}

// commitEach commits ops, one transaction per item, under term if there is
// one. A transaction etcd refuses as too large (--max-request-bytes: items
// of long keys, each of which a transaction holds several times) goes
// again as two of half the items, so that no item is refused for the
// length of the others'.
func commitEach(ctx context.Context, client *clientv3.Client, term *claimcond.Term, ops []clientv3.Op) commitAll {
	txn := client.Txn(ctx)
	if term != nil {
		txn = txn.If(term.Cmp()) // mutation:claimeach-term
	}
	resp, err := txn.Then(nested.Group(ops, eachGroup)...).Commit()
	if TooLarge(err) && len(ops) > 1 { // mutation:claimeach-unsplit
		half := len(ops) / 2
		return append(commitEach(ctx, client, term, ops[:half]), commitEach(ctx, client, term, ops[half:])...)
	}
	done := make(commitAll, len(ops))
	if err != nil {
		for i := range done {
			done[i].err = err
		}
		return done
	}
	for i, r := range nested.Responses(resp.Responses) {
		done[i] = committed{term: resp.Succeeded, rev: resp.Header.Revision, r: r}
	}
	return done
}

// TooLarge reports whether err refuses a request for its size: etcd's
// (--max-request-bytes), or the client's before it sent it (its
// MaxCallSendMsgSize, gRPC's "trying to send message larger than max").
func TooLarge(err error) bool {
	if errors.Is(err, rpctypes.ErrRequestTooLarge) {
		return true
	}
	s, ok := status.FromError(err)
	return ok && s.Code() == codes.ResourceExhausted && strings.Contains(s.Message(), "larger than max")
}

// claimAt is the claim of it committed at rev.
func claimAt(it ClaimItem, o claimcond.Options, rev int64) election.Claim {
	c := election.Claim{Seq: it.Seq, Revision: rev}
	if o.Marker != "" {
		c.Fence = election.Fence{Key: o.Marker, Revision: rev}
	}
	return c
}

// writes are an item's claim, given its conditions other than its key's:
// the compares of its absences, counter and marker, and the puts of its key,
// counter and marker.
func writes(it ClaimItem, o claimcond.Options) (conds []clientv3.Cmp, then []clientv3.Op) {
	for _, a := range o.Absent {
		c := clientv3.Compare(clientv3.CreateRevision(a.Key), "=", 0)
		if a.Prefix {
			c = c.WithPrefix()
		}
		conds = append(conds, c)
	}
	val := claimcond.Value(it.Seq, o.Holder)
	then = []clientv3.Op{clientv3.OpPut(it.Key, val)}
	if o.Counter != nil {
		conds = append(conds, o.Counter.Cmp())
		then = append(then, o.Counter.Op())
	}
	if o.Marker != "" {
		conds = append(conds, clientv3.Compare(clientv3.CreateRevision(o.Marker), "=", 0))
		then = append(then, clientv3.OpPut(o.Marker, val, clientv3.WithLease(o.Lease)))
	}
	return conds, then
}

// earlier compares that the item's key holds a claim of an earlier sequence.
func earlier(it ClaimItem) clientv3.Cmp {
	return clientv3.Compare(clientv3.Value(it.Key), "<", claimcond.Bound(it.Seq))
}

// claimOp is one item's claim: a transaction on the item's conditions
// other than its key's, in which a transaction claims it by its key's
// value, or else one by its absence (a Held item's first, by its value
// alone); with reads, each way of failing reads back what failed. Each compare is written once: etcd's client copies a
// compare at every step that builds a request, a large part of what a
// crowded tick's claims cost the replica.
func claimOp(it ClaimItem, o claimcond.Options, withReads bool) clientv3.Op {
	conds, then := writes(it, o)
	if it.Held && !withReads { // mutation:claimeach-held
		return clientv3.OpTxn(conds, []clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{earlier(it)}, then, nil)}, nil)
	}
	var reads []clientv3.Op
	if withReads {
		reads = readsOf(it, o)
	}
	absent := append([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(it.Key), "=", 0)}, unclaimed(it, o)...)
	return clientv3.OpTxn(conds, []clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{earlier(it)}, then,
		[]clientv3.Op{clientv3.OpTxn(absent, then, reads)})}, reads) // mutation:claimeach-first-absent
}

// outcome tells whether claimOp's transaction claimed its item, and if
// not, the reads of the way it failed (none without reads).
func outcome(r *etcdserverpb.ResponseOp) (ok bool, reads []*etcdserverpb.ResponseOp) {
	outer := r.GetResponseTxn()
	if !outer.GetSucceeded() {
		return false, outer.GetResponses()
	}
	held := outer.GetResponses()[0].GetResponseTxn()
	if held.GetSucceeded() {
		return true, nil
	}
	if len(held.GetResponses()) == 0 {
		return false, nil // a Held item's claim by its value, which failed
	}
	absent := held.GetResponses()[0].GetResponseTxn()
	return absent.GetSucceeded(), absent.GetResponses()
}

// claimed tells whether claimOp's transaction claimed its item.
func claimed(r *etcdserverpb.ResponseOp) bool {
	ok, _ := outcome(r)
	return ok
}

// unclaimed are the compares an item's claim by its key's absence adds to
// the others: none, unless the item may be claimed only if claimed before
// or known from before its sequence.
func unclaimed(it ClaimItem, o claimcond.Options) []clientv3.Cmp {
	switch {
	case o.NeverClaimed == nil:
		return nil
	case o.Known != nil:
		return o.Known.Cmps(it.Seq)
	default:
		// Never claimed: nothing may commit. A compare that cannot hold
		// keeps the reads that say so.
		return []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(it.Key), "!=", 0)}
	}
}

// readsOf reads what an item's claim compares: its key, each absence, its
// marker and its counter, in the order whyNot reads them.
func readsOf(it ClaimItem, o claimcond.Options) []clientv3.Op {
	reads := []clientv3.Op{clientv3.OpGet(it.Key)}
	for _, a := range o.Absent {
		opts := []clientv3.OpOption{clientv3.WithCountOnly()}
		if a.Prefix {
			opts = append(opts, clientv3.WithPrefix())
		}
		reads = append(reads, clientv3.OpGet(a.Key, opts...))
	}
	if o.Marker != "" {
		reads = append(reads, clientv3.OpGet(o.Marker, clientv3.WithCountOnly()))
	}
	if o.Counter != nil {
		reads = append(reads, clientv3.OpGet(o.Counter.Key, clientv3.WithKeysOnly()))
	}
	return reads
}

// whyNot is the error of an item that did not commit, from its reads: the
// key, each absence and the marker, as readsOf reads them.
func whyNot(it ClaimItem, o claimcond.Options, rs []*etcdserverpb.ResponseOp) error {
	last := rs[0].GetResponseRange().Kvs
	absent := len(last) == 0
	if len(last) > 0 {
		done, holder, err := claimcond.Parse(string(last[0].Value))
		if err != nil {
			return fmt.Errorf("claim %s seq %d: %w (%v)", it.Key, it.Seq, election.ErrClaimed, err)
		}
		if done >= it.Seq {
			return &election.ClaimedError{Key: it.Key, Want: it.Seq, Seq: done, Holder: holder}
		}
	}
	i := 1
	for _, a := range o.Absent {
		if rs[i].GetResponseRange().Count > 0 {
			return fmt.Errorf("claim %s seq %d: %w", it.Key, it.Seq, a.Err)
		}
		i++
	}
	if o.Marker != "" && rs[i].GetResponseRange().Count > 0 {
		return fmt.Errorf("claim %s seq %d: %w", it.Key, it.Seq, election.ErrBusy)
	}
	if o.Counter != nil {
		if c := rs[len(rs)-1].GetResponseRange().Kvs; len(c) > 0 && o.Counter.Reached(c[0].Version) {
			return fmt.Errorf("claim %s seq %d: %w", it.Key, it.Seq, o.Counter.Err)
		}
	}
	if absent && o.NeverClaimed != nil {
		return fmt.Errorf("claim %s seq %d: %w", it.Key, it.Seq, o.NeverClaimed)
	}
	// The transaction reads what it compared, so only a value that is no
	// claim's, which the compare cannot order, is left.
	return fmt.Errorf("claim %s seq %d: %w", it.Key, it.Seq, errNotAClaim)
}

// errNotAClaim is the outcome of an item whose key holds a value that is
// not a claim's.
var errNotAClaim = errors.New("election: the claim key holds no claim")
