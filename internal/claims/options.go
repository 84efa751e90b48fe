package claims

import (
	"errors"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/claimcond"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrNeverClaimed means a claim made with IfClaimedBefore found no earlier
// claim at its key.
var ErrNeverClaimed = errors.New("election: never claimed before")

// WithMarker also creates key, attached to lease, in the same transaction:
// an in-progress marker that disappears with its holder's session. The
// claim's Fence is the marker's.
func WithMarker(key string, lease clientv3.LeaseID) election.ClaimOption {
	return func(o *claimcond.Options) { o.Marker, o.Lease = key, lease }
}

// Exclusive makes the claim fail with election.ErrBusy while any key under
// prefix exists: no two runs overlap when their markers live under prefix.
func Exclusive(prefix string) election.ClaimOption {
	return func(o *claimcond.Options) {
		o.Absent = append(o.Absent, claimcond.Absence{Key: prefix, Prefix: true, Err: election.ErrBusy})
	}
}

// IfClaimedBefore makes the claim fail with ErrNeverClaimed when nothing was
// ever claimed at its key. cronx uses it to catch up a tick missed during a
// failover only for jobs that have run in the cluster before, not on a
// cluster's first start.
func IfClaimedBefore() election.ClaimOption {
	return func(o *claimcond.Options) { o.NeverClaimed = ErrNeverClaimed }
}

// IfClaimedOrKnownBefore is IfClaimedBefore, except that a key never
// claimed is claimed all the same while known was created before revision
// rev and holds a claim value (claimcond.Value) of a sequence not after the
// one claimed. cronx catches up a job that never ran when its publication
// mark was written before the term that catches up began, at a time not
// after the tick: the job was scheduled in the cluster when its tick came
// due with nobody to run it.
func IfClaimedOrKnownBefore(known string, rev int64) election.ClaimOption {
	return func(o *claimcond.Options) {
		o.NeverClaimed = ErrNeverClaimed
		o.Known = &claimcond.Known{Key: known, Revision: rev} // mutation:catch-up-never-run
	}
}

// Counted makes the claim commit only while fewer than max claims were
// made under key, and counts it there (the key's version), putting value;
// otherwise it fails with err. cronx bounds a job's runs with it
// (WithMaxRuns), cluster-wide.
func Counted(key string, max int64, value string, err error) election.ClaimOption {
	return func(o *claimcond.Options) {
		o.Counter = &claimcond.Counter{Key: key, Max: max, Value: value, Err: err}
	}
}

// UnlessExists makes the claim fail with err while key exists; cronx uses it
// for a job's pause flag.
func UnlessExists(key string, err error) election.ClaimOption {
	return func(o *claimcond.Options) { o.Absent = append(o.Absent, claimcond.Absence{Key: key, Err: err}) }
}
