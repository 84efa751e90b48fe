package cronx

import (
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// nested groups ops into nested transactions of at most per operations
// each, with no compare, so that one transaction holds more operations
// than etcd's --max-txn-ops: etcd counts each level's operations against
// the limit, less those of the levels around it, so the groups, per and
// the operations inside each op together stay within maxTxnOps.
func nested(ops []clientv3.Op, per int) []clientv3.Op {
	groups := make([]clientv3.Op, 0, (len(ops)+per-1)/per)
	for len(ops) > 0 {
		n := min(len(ops), per)
		groups = append(groups, clientv3.OpTxn(nil, ops[:n:n], nil))
		ops = ops[n:]
	}
	return groups
}

// unnested is the responses of the operations that nested grouped, in
// their order.
func unnested(groups []*etcdserverpb.ResponseOp) []*etcdserverpb.ResponseOp {
	var rs []*etcdserverpb.ResponseOp
	for _, g := range groups {
		rs = append(rs, g.GetResponseTxn().GetResponses()...)
	}
	return rs
}

// opBytes is about what op adds to a request: its keys and values, its
// nested transactions' included, and opOverhead for each operation and
// compare.
func opBytes(op clientv3.Op) int {
	n := opOverhead + len(op.KeyBytes()) + len(op.RangeBytes()) + len(op.ValueBytes())
	if op.IsTxn() {
		cmps, then, els := op.Txn()
		for i := range cmps {
			n += opOverhead + len(cmps[i].KeyBytes()) + len(cmps[i].ValueBytes())
		}
		for _, o := range append(then[:len(then):len(then)], els...) {
			n += opBytes(o)
		}
	}
	return n
}
