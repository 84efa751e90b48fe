package claims

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	"github.com/batonhq/baton/internal/nested"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A tick's record claims one tick of many jobs in one transaction, where
// ClaimEach puts each job's claim key and marker: the record lists the
// jobs, one marker on a lease stands for all of their runs, and each job's
// claim key and pause are read in the same transaction, so that a job
// paused, or whose tick was claimed already (by its key: a catch-up, or a
// leader whose clock ran ahead), is told apart and does not run. Its cost
// does not grow with the keys on a lease (it puts one key on it), and it
// commits in a few milliseconds per thousand jobs, where ClaimEach takes
// tens (BENCHMARKS.md, "A tick's record").
//
// A record is settled once the tick's runs have started or were given up:
// each job that ran has its claim key moved on to the tick, as ClaimEach
// would have put it, and the record is deleted in the same transaction, so
// a reader that finds no record finds every claim key moved. Until it is
// settled, a claim key does not tell that its job's tick was claimed:
// whoever claims a job's tick by its key alone (a successor's catch-up)
// first settles the records it finds (PendingTicks), as their claimer
// would have, counting a job as run unless it was paused or claimed
// already at the claim. A record's claimer claims a tick once in a term,
// and a term's ticks come after the terms before it: the record's absence
// and the jobs' claim keys, read at the claim, keep a tick that comes
// round again (a clock stepped back) from running twice.
//
// Cost: a tick of N jobs is N/MaxTickJobs claims and as many settles, each
// one transaction; the claim reads each job's claim key and pause in one
// range, the settle compares and puts each job's claim key.

// MaxTickJobs is how many jobs one record lists: its claim's and its
// settle's operations stay within etcd's default --max-txn-ops of 128
// (etcd counts each level's operations against the limit less those of the
// levels around it: the claim's MaxTickJobs reads go tickGroup to each of
// 16 groups, beside its 2 puts), and, split by TickChunks, its request
// within maxTickBytes.
const MaxTickJobs = 1024

// tickGroup is how many jobs' operations a transaction nested in a tick's
// claim or settle holds.
const tickGroup = 64

// maxTickBytes bounds the keys and names of one record's jobs, so that
// its claim, which puts them all in the record and reads each job's pause,
// stays well within etcd's default --max-request-bytes of 1.5 MiB.
const maxTickBytes = 384 << 10

// ErrTickClaimed is the outcome of a tick's claim whose record exists: the
// tick was claimed for these jobs already.
var ErrTickClaimed = errors.New("election: the tick's record exists")

// TickJob is one job of a tick's record. Its claim key and pause are read
// in one range, from the lesser to the greater, so a layout keeps few and
// small keys between them (cronx's has a job's notrun and outcome): a
// range costs etcd less than the two reads did, a fifth to a third of a
// tick's claim (BENCHMARKS.md, "A tick's record").
type TickJob struct {
	Name  string // as the claimer knows the job
	Last  string // its claim key, moved on to the tick when settled
	Pause string // a key whose presence at the claim keeps the job from running
}

// Tick is a claim of one tick for many jobs.
type Tick struct {
	Record string // the record's key; the claim commits only while it is absent
	Marker string // the runs' in-progress marker, put on Lease
	Lease  clientv3.LeaseID
	Seq    int64 // the tick, as a ClaimItem's Seq
	Holder string
	Jobs   []TickJob
}

// tickValue is what a record holds: the tick, its claimer and its jobs'
// names, from which a reader derives their keys, as its client sees them
// (a client of a namespace sees keys without it).
type tickValue struct {
	Seq  int64    `json:"seq"`
	By   string   `json:"by"`
	Jobs []string `json:"jobs"`
}

// TickKeys derives, for PendingTicks, a record's marker from its key and
// a job's claim and pause keys from its name.
type TickKeys struct {
	Marker func(record string) string
	Job    func(name string) TickJob
}

// TickRecord is a tick's claim as committed.
type TickRecord struct {
	Tick
	// Revision is the claim's: the record's and the marker's creation, and
	// the runs' fencing token.
	Revision int64
	// Skipped tells, for each of Jobs, why it does not run: nil, or
	// ErrTickPaused or a *election.ClaimedError, as read at the claim.
	Skipped []error
}

// ErrTickPaused is the outcome of a job of a tick's record whose pause key
// was present at the claim.
var ErrTickPaused = errors.New("election: the job was paused at the tick's claim")

// Runs reports whether the i-th job of the record runs.
func (r TickRecord) Runs(i int) bool { return r.Skipped[i] == nil }

// Claim is the claim of the record's runs: its fence is the marker, which
// holds until the last of them ends.
func (r TickRecord) Claim() election.Claim {
	return election.Claim{Seq: r.Seq, Revision: r.Revision, Fence: election.Fence{Key: r.Marker, Revision: r.Revision}}
}

// TickChunks splits jobs into the jobs of records of at most MaxTickJobs,
// and of at most maxTickBytes of keys and names each.
func TickChunks(jobs []TickJob) [][]TickJob {
	var chunks [][]TickJob
	start, size := 0, 0
	for i, j := range jobs {
		n := len(j.Name) + len(j.Last) + 2*len(j.Pause) + 64
		if i > start && (i-start == MaxTickJobs || size+n > maxTickBytes) {
			chunks = append(chunks, jobs[start:i:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(jobs) {
		chunks = append(chunks, jobs[start:len(jobs):len(jobs)])
	}
	return chunks
}

// ClaimTick claims t in one transaction: under term, only while t's
// record is absent, it puts the record and the marker on t's lease, and
// reads each job's pause. It fails with election.ErrNotLeader when the
// term has ended and with ErrTickClaimed when the record exists. ctx
// bounds the request; a claim whose answer is lost may have committed.
func ClaimTick(ctx context.Context, client *clientv3.Client, term election.Fence, t Tick) (TickRecord, error) {
	if client == nil {
		return TickRecord{}, errors.New("election: nil etcd client")
	}
	if err := t.check(); err != nil {
		return TickRecord{}, err
	}
	v := tickValue{Seq: t.Seq, By: t.Holder, Jobs: make([]string, len(t.Jobs))}
	for i, j := range t.Jobs {
		v.Jobs[i] = j.Name
	}
	val, err := json.Marshal(v)
	if err != nil {
		return TickRecord{}, fmt.Errorf("election: tick %s: %w", t.Record, err)
	}
	ops := append([]clientv3.Op{
		clientv3.OpPut(t.Record, string(val)),
		clientv3.OpPut(t.Marker, claimcond.Value(t.Seq, t.Holder), clientv3.WithLease(t.Lease)),
	}, nested.Group(t.reads(0), tickGroup)...)
	resp, err := client.Txn(ctx).If(
		claimcond.Term{Key: term.Key, Revision: term.Revision}.Cmp(), // mutation:tick-term
		clientv3.Compare(clientv3.CreateRevision(t.Record), "=", 0),  // mutation:tick-record-absent
		clientv3.Compare(clientv3.CreateRevision(t.Marker), "=", 0),
	).Then(ops...).Else(
		clientv3.OpGet(t.Record, clientv3.WithCountOnly()),
		clientv3.OpGet(t.Marker, clientv3.WithCountOnly()),
	).Commit()
	if err != nil {
		return TickRecord{}, fmt.Errorf("election: claim tick %s: %w", t.Record, err)
	}
	if !resp.Succeeded {
		rs := resp.Responses
		if rs[0].GetResponseRange().Count > 0 || rs[1].GetResponseRange().Count > 0 {
			return TickRecord{}, fmt.Errorf("claim tick %s: %w", t.Record, ErrTickClaimed)
		}
		return TickRecord{}, fmt.Errorf("claim tick %s: %w", t.Record, election.ErrNotLeader)
	}
	rec := TickRecord{Tick: t, Revision: resp.Header.Revision}
	rec.Skipped = t.skipped(nested.Responses(resp.Responses[2:]))
	return rec, nil
}

// reads are the reads of each job's claim key and pause, at rev (0: the
// transaction's own): one range a job, from the lesser of the two keys to
// the greater, which reads the keys between them too (TickJob).
func (t Tick) reads(rev int64) []clientv3.Op {
	reads := make([]clientv3.Op, len(t.Jobs))
	for i, j := range t.Jobs {
		from, to := min(j.Last, j.Pause), max(j.Last, j.Pause)
		reads[i] = clientv3.OpGet(from, clientv3.WithRange(to+"\x00"), clientv3.WithRev(rev)) // mutation:tick-one-range
	}
	return reads
}

// skipped is why each job does not run, from the responses of reads.
func (t Tick) skipped(rs []*etcdserverpb.ResponseOp) []error {
	skipped := make([]error, len(t.Jobs))
	for i, j := range t.Jobs {
		var last, paused *mvccpb.KeyValue
		for _, kv := range rs[i].GetResponseRange().GetKvs() {
			switch string(kv.Key) {
			case j.Last:
				last = kv
			case j.Pause:
				paused = kv
			}
		}
		if last != nil {
			seq, holder, err := claimcond.Parse(string(last.Value))
			if err != nil {
				skipped[i] = fmt.Errorf("%w (%v)", election.ErrClaimed, err)
				continue
			}
			if seq >= t.Seq { // mutation:tick-claimed-ignored
				skipped[i] = &election.ClaimedError{Key: j.Last, Want: t.Seq, Seq: seq, Holder: holder}
				continue
			}
		}
		if paused != nil {
			skipped[i] = ErrTickPaused
		}
	}
	return skipped
}

// check tells what is wrong with a tick's claim, if anything.
func (t Tick) check() error {
	switch {
	case t.Record == "" || t.Marker == "" || t.Seq < 0:
		return fmt.Errorf("election: tick %q marker %q seq %d: want a record, a marker and a sequence of 0 or more", t.Record, t.Marker, t.Seq)
	case len(t.Jobs) == 0 || len(t.Jobs) > MaxTickJobs:
		return fmt.Errorf("election: tick %s lists %d jobs; a record lists 1 to %d", t.Record, len(t.Jobs), MaxTickJobs)
	}
	seen := make(map[string]bool, len(t.Jobs))
	for _, j := range t.Jobs {
		if j.Last == "" || j.Pause == "" || j.Last == j.Pause {
			return fmt.Errorf("election: tick %s: job %q needs a claim key and a pause key, two keys", t.Record, j.Name)
		}
		if seen[j.Last] {
			return fmt.Errorf("election: tick %s: claim key %q listed twice", t.Record, j.Last)
		}
		seen[j.Last] = true
	}
	return nil
}

// SettleTick settles r: every job of it that runs by the claim (r.Runs)
// and that ran (ran(i) for the i-th of r.Jobs; nil for all) has its claim
// key moved on to the tick unless it holds a later one, and the record is
// deleted, in one transaction that commits only while the record is r's.
// A record settled already, or claimed again since, is left as it is.
func SettleTick(ctx context.Context, client *clientv3.Client, r TickRecord, ran func(i int) bool) error {
	val := claimcond.Value(r.Seq, r.Holder)
	var moves []clientv3.Op
	for i, j := range r.Jobs {
		if !r.Runs(i) || ran != nil && !ran(i) { // mutation:tick-settles-unrun
			continue
		}
		put := []clientv3.Op{clientv3.OpPut(j.Last, val)}
		moves = append(moves, clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.Value(j.Last), "<", claimcond.Bound(r.Seq))}, put,
			[]clientv3.Op{clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(j.Last), "=", 0)}, put, nil)}))
	}
	_, err := client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(r.Record), "=", r.Revision)).
		Then(append(nested.Group(moves, tickGroup), clientv3.OpDelete(r.Record))...).Commit()
	if err != nil {
		return fmt.Errorf("election: settle tick %s: %w", r.Record, err)
	}
	return nil
}

// PendingTicks reads the records under prefix (or the one record at that
// key) that are not settled, each with its marker and jobs' keys as keys
// derives them, and its jobs' claim keys and pauses as they were at its
// claim. A record whose reads etcd has compacted away counts every job as
// run.
func PendingTicks(ctx context.Context, client *clientv3.Client, prefix string, keys TickKeys) ([]TickRecord, error) {
	resp, err := client.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("election: read the ticks' records under %s: %w", prefix, err)
	}
	var recs []TickRecord
	var bad []error
	for _, kv := range resp.Kvs {
		r := TickRecord{Revision: kv.ModRevision}
		var v tickValue
		err := json.Unmarshal(kv.Value, &v)
		r.Record, r.Marker, r.Seq, r.Holder = string(kv.Key), keys.Marker(string(kv.Key)), v.Seq, v.By
		for _, name := range v.Jobs {
			r.Jobs = append(r.Jobs, keys.Job(name))
		}
		if err == nil {
			err = r.check()
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("election: %s holds no tick's record: %w", kv.Key, err))
			continue
		}
		if r.Skipped, err = skippedAt(ctx, client, r); err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, errors.Join(bad...)
}

// RecordedTicks returns, by job name, the latest tick that the records in
// kvs (a read of their prefix) claimed for it, whether or not the job ran:
// as a job's claim key, what a reader of a term's gap takes as claimed. A
// value that holds no record is passed over; PendingTicks names it.
func RecordedTicks(kvs []*mvccpb.KeyValue) map[string]int64 {
	ticks := map[string]int64{}
	for _, kv := range kvs {
		var v tickValue
		if json.Unmarshal(kv.Value, &v) != nil {
			continue
		}
		for _, name := range v.Jobs {
			ticks[name] = max(ticks[name], v.Seq)
		}
	}
	return ticks
}

// skippedAt reads why each job of r did not run, as at r's claim.
func skippedAt(ctx context.Context, client *clientv3.Client, r TickRecord) ([]error, error) {
	resp, err := client.Txn(ctx).Then(nested.Group(r.reads(r.Revision), tickGroup)...).Commit()
	if errors.Is(err, rpctypes.ErrCompacted) {
		return make([]error, len(r.Jobs)), nil
	}
	if err != nil {
		return nil, fmt.Errorf("election: read tick %s's jobs at its claim: %w", r.Record, err)
	}
	return r.skipped(nested.Responses(resp.Responses)), nil
}
