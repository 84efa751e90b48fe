package nested

import (
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestGroupsKeepTheOpsInOrder: 250 operations in groups of 64 are four
// transactions of 64, 64, 64 and 58, and their responses read back in the
// operations' order.
func TestGroupsKeepTheOpsInOrder(t *testing.T) {
	ops := make([]clientv3.Op, 250)
	for i := range ops {
		ops[i] = clientv3.OpGet(fmt.Sprintf("k%03d", i))
	}
	groups := Group(ops, 64)
	var sizes []int
	var resps []*etcdserverpb.ResponseOp
	n := 0
	for _, g := range groups {
		_, then, _ := g.Txn()
		sizes = append(sizes, len(then))
		var rs []*etcdserverpb.ResponseOp
		for _, op := range then {
			if want := fmt.Sprintf("k%03d", n); string(op.KeyBytes()) != want {
				t.Fatalf("operation %d reads %s, want %s", n, op.KeyBytes(), want)
			}
			// Each response counts its operation's place.
			rs = append(rs, &etcdserverpb.ResponseOp{Response: &etcdserverpb.ResponseOp_ResponseRange{
				ResponseRange: &etcdserverpb.RangeResponse{Count: int64(n)}}})
			n++
		}
		resps = append(resps, &etcdserverpb.ResponseOp{Response: &etcdserverpb.ResponseOp_ResponseTxn{
			ResponseTxn: &etcdserverpb.TxnResponse{Succeeded: true, Responses: rs}}})
	}
	if fmt.Sprint(sizes) != "[64 64 64 58]" {
		t.Errorf("groups of %v, want [64 64 64 58]", sizes)
	}
	flat := Responses(resps)
	if len(flat) != len(ops) {
		t.Fatalf("%d responses, want %d", len(flat), len(ops))
	}
	for i, r := range flat {
		if r.GetResponseRange().Count != int64(i) {
			t.Fatalf("response %d is operation %d's", i, r.GetResponseRange().Count)
		}
	}
	if len(Group(nil, 64)) != 0 {
		t.Error("no operations make a group")
	}
}

// TestBytesCountsNestedValues: a transaction's size counts the keys and
// values of the operations nested in it.
func TestBytesCountsNestedValues(t *testing.T) {
	put := clientv3.OpPut("key", string(make([]byte, 1000)))
	txn := clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision("key"), "=", 1)},
		[]clientv3.Op{put, clientv3.OpTxn(nil, []clientv3.Op{put}, nil)}, nil)
	if n := Bytes(txn); n < 2006 || n > 2006+8*opOverhead {
		t.Errorf("Bytes = %d, want the two puts' 2006 bytes and a little", n)
	}
}
