package etcdtest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// StartQuota runs a one-member cluster whose database may grow to bytes,
// as `etcd --quota-backend-bytes` says: a write that would take it past
// them is refused, and the member raises its NOSPACE alarm, which refuses
// every write until space is freed and the alarm disarmed (Fill, Free).
func StartQuota(t testing.TB, bytes int64) *Member {
	t.Helper()
	return StartWith(t, Options{QuotaBackendBytes: bytes})
}

// fillKey is the key Fill writes to and Free deletes.
const fillKey = "etcdtest/fill"

// Fill writes to a member started by StartQuota until it is out of space:
// it has raised its NOSPACE alarm and refuses every write.
func (m *Member) Fill(t testing.TB) {
	t.Helper()
	cli := m.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	big := strings.Repeat("x", 256<<10)
	for {
		_, err := cli.Put(ctx, fillKey, big)
		if errors.Is(err, rpctypes.ErrNoSpace) {
			return
		}
		if err != nil {
			t.Fatalf("etcdtest: fill %s: %v", m.name, err)
		}
	}
}

// Free does what an operator does for a member out of space: it deletes
// what Fill wrote, compacts, defragments and disarms the alarm, and
// returns once the member accepts a write again.
func (m *Member) Free(t testing.TB) {
	t.Helper()
	cli := m.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	del, err := cli.Delete(ctx, fillKey)
	if err == nil {
		_, err = cli.Compact(ctx, del.Header.Revision, clientv3.WithCompactPhysical())
	}
	if err == nil {
		_, err = cli.Defragment(ctx, m.Endpoint())
	}
	var alarms *clientv3.AlarmResponse
	if err == nil {
		alarms, err = cli.AlarmList(ctx)
	}
	for i := 0; err == nil && i < len(alarms.Alarms); i++ {
		_, err = cli.AlarmDisarm(ctx, (*clientv3.AlarmMember)(alarms.Alarms[i]))
	}
	if err == nil {
		_, err = cli.Put(ctx, fillKey, "")
	}
	if err != nil {
		t.Fatalf("etcdtest: free %s: %v", m.name, err)
	}
}
