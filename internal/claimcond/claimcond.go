// Package claimcond describes what a claim of a sequence checks and writes,
// and encodes the value stored at a claimed key. election's ClaimSeq and the
// batched claims of internal/claims build their transactions from this one
// description, so that election can keep its option type closed to
// applications while the options only the scheduler uses live outside it.
package claimcond

import (
	"fmt"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Options are a claim's conditions and side effects.
type Options struct {
	// Term, when set, makes the claim commit only while the term is current.
	Term *Term
	// Holder is who claims, stored with the sequence.
	Holder string
	// Marker, when set, is created with the claim, attached to Lease.
	Marker string
	Lease  clientv3.LeaseID
	// Absent are keys (or prefixes) that must not exist.
	Absent []Absence
	// NeverClaimed, when set, is the error of a claim that finds nothing
	// ever claimed at its key.
	NeverClaimed error
	// Known, with NeverClaimed, lets a claim that finds nothing ever claimed
	// at its key commit all the same while Known's key was created before
	// its revision.
	Known *Known
	// Counter, when set, makes the claim commit only while its key has been
	// put fewer than Max times, and puts it once more.
	Counter *Counter
}

// Counter counts the claims made under it in the version of its key (the
// puts since the key was created): a claim commits only while it is below
// Max, and puts Value there, so that the count and the claim commit
// together, cluster-wide.
type Counter struct {
	Key   string
	Max   int64
	Value string
	// Err is the error of a claim refused at Max.
	Err error
}

// Cmp holds while fewer than Max claims were counted.
func (c Counter) Cmp() clientv3.Cmp {
	return clientv3.Compare(clientv3.Version(c.Key), "<", c.Max) // mutation:max-runs-compare
}

// Op counts one more claim.
func (c Counter) Op() clientv3.Op { return clientv3.OpPut(c.Key, c.Value) }

// Reached reports whether a read of the key found Max claims counted.
func (c Counter) Reached(version int64) bool { return version >= c.Max }

// Known is a key whose creation before Revision vouches for a claim of a
// key never claimed: the thing claimed existed before then. Its value is a
// claim value (Value) whose sequence is when the thing came to exist, and
// it vouches only for a claim of a sequence not before that.
type Known struct {
	Key      string
	Revision int64
}

// Cmps hold while the key exists, was created before the revision, and
// holds a sequence not after seq, the sequence claimed.
func (k Known) Cmps(seq int64) []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(k.Key), ">", 0),
		clientv3.Compare(clientv3.CreateRevision(k.Key), "<", k.Revision),
		clientv3.Compare(clientv3.Value(k.Key), "<", Bound(seq+1)), // mutation:known-since
	}
}

// Holds reports whether a read of the key (nil when it is absent) vouches
// for a claim of seq, as Cmps do.
func (k Known) Holds(kv *mvccpb.KeyValue, seq int64) bool {
	return kv != nil && kv.CreateRevision > 0 && kv.CreateRevision < k.Revision && string(kv.Value) < Bound(seq+1)
}

// Term is the key and create revision of a term (an election.Fence).
type Term struct {
	Key      string
	Revision int64
}

// Cmp holds only while the term is current.
func (t Term) Cmp() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(t.Key), "=", t.Revision)
}

// Absence is a condition that no key exists at Key (or under it, as a
// Prefix), failing the claim with Err.
type Absence struct {
	Key    string
	Prefix bool
	Err    error
}

// Apply returns the options opts set, skipping nil ones.
func Apply[O ~func(*Options)](opts []O) Options {
	var o Options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// SeqWidth is the width of the zero-padded sequence at the head of a claim
// value, so that etcd's byte-wise comparison of values orders sequences.
const SeqWidth = 20

// Bound is seq as it heads a claim value.
func Bound(seq int64) string { return fmt.Sprintf("%0*d", SeqWidth, seq) }

// Value is the value of a claim of seq by holder.
func Value(seq int64, holder string) string { return Bound(seq) + " " + holder }

// Parse reads a claim value back.
func Parse(v string) (int64, string, error) {
	num, holder, _ := strings.Cut(v, " ")
	seq, err := strconv.ParseInt(num, 10, 64)
	if err != nil || len(num) != SeqWidth {
		return 0, "", fmt.Errorf("malformed claim value %q", v)
	}
	return seq, holder, nil
}
