package election

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Fence identifies one term of leadership, one hold of a lock or one claimed
// run. Its Revision is a fencing token: it grows with every new term, hold or
// claim, so a downstream system that remembers the highest token it has seen
// can refuse a write from a holder that was deposed while paused.
type Fence struct {
	// Key is the etcd key whose existence makes the fence valid.
	Key string
	// Revision is the fencing token: the key's create revision.
	Revision int64
}

// Cmp is a comparison that holds only while the fence is current. Put it in
// the If of a transaction so the transaction commits only while this term,
// hold or run is still the current one:
//
//	client.Txn(ctx).If(term.Cmp()).Then(clientv3.OpPut(k, v)).Commit()
func (f Fence) Cmp() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(f.Key), "=", f.Revision)
}

// Valid reads etcd and reports whether the fence is still current.
func (f Fence) Valid(ctx context.Context, client *clientv3.Client) (bool, error) {
	if client == nil {
		return false, errNilClient
	}
	resp, err := client.Get(ctx, f.Key, clientv3.WithKeysOnly())
	if err != nil {
		return false, fmt.Errorf("election: check fence %s: %w", f.Key, err)
	}
	return len(resp.Kvs) == 1 && resp.Kvs[0].CreateRevision == f.Revision, nil
}

// String formats the fence for logs and environment variables.
func (f Fence) String() string { return fmt.Sprintf("%s@%d", f.Key, f.Revision) }
