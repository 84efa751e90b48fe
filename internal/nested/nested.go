// Package nested lets one etcd transaction hold more operations than
// etcd's --max-txn-ops, by grouping them into transactions nested in it:
// etcd counts each level's operations against the limit, less those of
// the levels around it, so a transaction of g groups of n operations, each
// holding at most k more along any path, is within a limit of g+n+k.
package nested

import (
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Group groups ops into transactions of at most per operations each, with
// no compare, to be the operations of one transaction.
func Group(ops []clientv3.Op, per int) []clientv3.Op {
	groups := make([]clientv3.Op, 0, (len(ops)+per-1)/per)
	for len(ops) > 0 {
		n := min(len(ops), per)
		groups = append(groups, clientv3.OpTxn(nil, ops[:n:n], nil))
		ops = ops[n:]
	}
	return groups
}

// Responses is the responses of the operations that Group grouped, in
// their order, from the responses of its groups.
func Responses(groups []*etcdserverpb.ResponseOp) []*etcdserverpb.ResponseOp {
	var rs []*etcdserverpb.ResponseOp
	for _, g := range groups {
		rs = append(rs, g.GetResponseTxn().GetResponses()...)
	}
	return rs
}

// Bytes is about what op adds to a request: its keys and values, its
// nested transactions' included, and opOverhead for each operation and
// compare.
func Bytes(op clientv3.Op) int {
	n := opOverhead + len(op.KeyBytes()) + len(op.RangeBytes()) + len(op.ValueBytes())
	if op.IsTxn() {
		cmps, then, els := op.Txn()
		for i := range cmps {
			n += opOverhead + len(cmps[i].KeyBytes()) + len(cmps[i].ValueBytes())
		}
		for _, o := range append(then[:len(then):len(then)], els...) {
			n += Bytes(o)
		}
	}
	return n
}

// opOverhead is about what an operation or a compare adds to a request
// beside its keys and values.
const opOverhead = 16
