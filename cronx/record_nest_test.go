package cronx

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/clock"
	"github.com/batonhq/baton/internal/etcdtest"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// TestAFullBatchOfRecordsIsTwoTransactions: 500 runs queued together are
// recorded in one read and one write (a crowded tick's records are under
// one request per hundred runs), more operations than etcd's
// --max-txn-ops takes in one level, and each history holds its run and
// each run's marker is released; when their histories hold long errors,
// the write is split below etcd's request limit and nothing is lost.
func TestAFullBatchOfRecordsIsTwoTransactions(t *testing.T) {
	t.Parallel()
	for _, long := range []bool{false, true} {
		t.Run(fmt.Sprintf("long-histories=%v", long), func(t *testing.T) {
			t.Parallel()
			recordsInTransactions(t, long)
		})
	}
}

func recordsInTransactions(t *testing.T, long bool) {
	sp := etcdtest.Shared(t)
	var txns, bytes atomic.Int64
	cli := sp.TxnSeeingClient(t, func(txn *etcdserverpb.TxnRequest) {
		if touchesHistory(txn) {
			txns.Add(1)
			bytes.Store(max(bytes.Load(), int64(proto.Size(txn))))
		}
	})
	name := fmt.Sprintf("record-nest-%v", long)
	c := New(WithSeconds(), withClock(clock.NewFake(t0)), WithLocation(time.UTC), WithLogger(DiscardLogger),
		WithEtcd(cli), WithName(name), WithElection(election.WithIdentity("a")))
	c.Start()
	t.Cleanup(func() { shutdown(t, c, "a") })
	co := c.coord
	eventually(t, wait, func() (bool, string) { return co.conn.etcd() != nil, "no etcd client" })
	cli = co.conn.etcd()
	ctx := t.Context()

	batch := make([]finishItem, 1000) // near a full batch (recordBatch)
	for i := range batch {
		job := fmt.Sprintf("job-%03d", i)
		if long {
			// A history of historyLen failed runs, each error as long as a
			// record keeps.
			var hist []Record
			for k := range historyLen {
				hist = append(hist, Record{Tick: t0.Add(-time.Duration(historyLen-k) * time.Minute), Instance: "b",
					Error: strings.Repeat("x", maxRecordedError)})
			}
			if _, err := cli.Put(ctx, co.keys.History(job), encodeHistory(hist[:historyLen-1], hist[historyLen-1])); err != nil {
				t.Fatal(err)
			}
		}
		marker := co.keys.TickMarker(job, t0.UnixNano())
		put, err := cli.Put(ctx, marker, "a")
		if err != nil {
			t.Fatal(err)
		}
		it := finishItem{job: job, tick: t0, start: t0, end: t0.Add(time.Second),
			claim: election.Claim{Seq: t0.UnixNano(), Fence: election.Fence{Key: marker, Revision: put.Header.Revision}}}
		if long {
			it.err = errors.New(strings.Repeat("y", 2*maxRecordedError))
		}
		batch[i] = it
	}
	// Queued while no recorder may start, then recorded by one: as runs
	// that end together find the recorders busy.
	rc, q := co.rec, &co.rec.finishes
	q.mu.Lock()
	q.recorders = maxFinishes
	q.mu.Unlock()
	for _, it := range batch {
		rc.finishLater(it)
	}
	q.mu.Lock()
	q.recorders = 1
	q.mu.Unlock()
	txns.Store(0)
	rc.record()

	for _, it := range batch {
		resp, err := cli.Get(ctx, co.keys.History(it.job))
		if err != nil {
			t.Fatal(err)
		}
		hist, _ := decodeHistory(resp.Kvs)
		if len(hist) == 0 || !hist[len(hist)-1].Tick.Equal(t0) || hist[len(hist)-1].Instance != "a" {
			t.Fatalf("%s: the run of %s is not the latest of its history (%d records)", it.job, t0, len(hist))
		}
	}
	markers, err := cli.Get(ctx, co.keys.Dir(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range markers.Kvs {
		if strings.Contains(string(kv.Key), "/running/") {
			t.Fatalf("marker %s was not released", kv.Key)
		}
	}
	// A read and a write; with long histories (about 11 KiB each, 11 MiB
	// in all) a write per recordBytes.
	lo, hi := int64(2), int64(2)
	if long {
		lo, hi = 12, 13
	}
	if got := txns.Load(); got < lo || got > hi {
		t.Errorf("%d runs were recorded in %d transactions, want %d to %d", len(batch), got, lo, hi)
	}
	if most := bytes.Load(); most > 3<<19 {
		t.Errorf("a record transaction was %d bytes, more than etcd's default limit of 1.5 MiB", most)
	}
}

// touchesHistory tells whether txn reads or writes a history key, in its
// nested transactions too.
func touchesHistory(txn *etcdserverpb.TxnRequest) bool {
	for _, op := range append(append([]*etcdserverpb.RequestOp{}, txn.Success...), txn.Failure...) {
		if r := op.GetRequestRange(); r != nil && strings.HasSuffix(string(r.Key), "/history") {
			return true
		}
		if p := op.GetRequestPut(); p != nil && strings.HasSuffix(string(p.Key), "/history") {
			return true
		}
		if nested := op.GetRequestTxn(); nested != nil && touchesHistory(nested) {
			return true
		}
	}
	return false
}
