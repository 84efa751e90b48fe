package cronx

import (
	"context"
	"time"

	"github.com/batonhq/baton/internal/claims"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The timeouts, retry paces and concurrency limits of coordination, in one
// place. etcd runs on real time whatever the Cron's clock, so every value
// here is wall-clock time.

// Timeouts of one etcd request.
const (
	// etcdTimeout bounds one request that a run or a spec change waits on:
	// a claim, a batch of claims, a session's lease grant, a history or spec
	// write, a trigger's removal. It is well past a healthy etcd's worst
	// commit (an election of its raft leader takes about a second), and short
	// enough that a tick retried after it still runs within its misfire grace.
	etcdTimeout = 5 * time.Second
	// closeTimeout bounds the revocation of a session's lease as it closes.
	// Past it, the lease expires by itself after its TTL.
	closeTimeout = 3 * time.Second
	// shutdownRecordWait is how long Shutdown, its context ended, still
	// waits for the records of the runs that have returned: an etcd that
	// answers takes them in milliseconds, and each record releases its
	// run's marker, so that a successor runs a Forbid job's next tick
	// rather than skip it until the marker lapses with the lease. An etcd
	// that does not answer costs Shutdown this much past its context.
	shutdownRecordWait = 500 * time.Millisecond
	// resignWait bounds how long Stop waits for the leader's resignation to
	// reach etcd; past it, the lease expires by itself after the TTL.
	resignWait = 3 * time.Second
	// withdrawTimeout bounds the return of a claim whose run does not
	// start. It is shorter than etcdTimeout because Stop waits for it: the
	// successor, which claims the tick next, comes after the resignation.
	withdrawTimeout = 2 * time.Second
	// stopClaimWait bounds how long Stop waits for the claims on the wire
	// to come back, so that a run whose claim holds starts before Stop
	// returns: a healthy etcd answers in milliseconds, and an unreachable
	// one must not hold Stop up (G6). A claim that comes back later is
	// given back.
	stopClaimWait = 500 * time.Millisecond
)

// readWithin sends gets to cli in one transaction, within etcdTimeout.
func readWithin(ctx context.Context, cli *clientv3.Client, gets []clientv3.Op) (*clientv3.TxnResponse, error) {
	rctx, cancel := context.WithTimeout(ctx, etcdTimeout)
	defer cancel()
	return cli.Txn(rctx).Then(gets...).Commit()
}

// Retry paces: each doubles from the first value to the second.
const (
	// Claims and spec writes while etcd does not answer: fast enough that a
	// tick runs within a second of etcd's return, slow enough that a thousand
	// jobs retrying do not flood it.
	retryBackoff    = 100 * time.Millisecond
	maxRetryBackoff = 2 * time.Second
	// Connection attempts of a Cron that makes its client from the
	// environment. An attempt itself lasts up to the dial timeout.
	connectBackoff    = 250 * time.Millisecond
	maxConnectBackoff = 2 * time.Second
	// Releases of a run's marker that etcd did not answer: nothing waits on
	// them but the next run of a Forbid job, and the marker's lease bounds
	// them anyway.
	releaseBackoff    = 500 * time.Millisecond
	maxReleaseBackoff = 5 * time.Second
	// watchRetry is the pause before the trigger watch reads again after a
	// failed read.
	watchRetry = time.Second
	// refusalProbe is how often a replica whose claims etcd refuses asks
	// whether it accepts writes again (refused.go): well within a
	// readiness probe's period, and one request a second at most.
	refusalProbe = time.Second
)

// skipTolerance is how long, under Skip, a tick's claim is retried while etcd
// does not answer: a tick held up by one slow commit still runs.
const skipTolerance = time.Second

// lateWake is how late a leader's loop must wake up for a tick before it
// looks for later ticks of the job that came due meanwhile (late.go):
// robfig's schedules tick at most once a second, so a loop less late
// skipped none, and a crowded tick, fired within it, pays nothing for the
// look. A Schedule of one's own that ticks more often is looked at only
// past it.
const lateWake = time.Second

// maxRecordedError bounds a run's error as its history records it.
const maxRecordedError = 1 << 10

// recordBytes bounds the records one transaction writes, below etcd's
// default --max-request-bytes of 1.5 MiB: a batch of runs whose histories
// hold long errors (up to historyLen times maxRecordedError each) is
// written in as many transactions as it takes.
const recordBytes = 1 << 20

// publishBytes bounds the keys and specs of the jobs a term checks in one
// read and registers in one transaction (writes.termBatch), below etcd's
// default --max-request-bytes: publishBatch jobs of the longest names, a
// scheduler's and a job's of 200 bytes each, would pass it.
const publishBytes = 1 << 20

// Concurrency limits.
const (
	// maxClaims bounds the single claims in flight, so that thousands of jobs
	// due on one tick queue here rather than time out on a saturated
	// connection.
	maxClaims = 64
	// maxFlushers bounds the batches of claims in flight: a few keep etcd's
	// pipeline full while each batch waits for its commit.
	maxFlushers = 4
	// maxClaimWaiters bounds the goroutines of a leader's runs waiting for
	// their batched claim (gate.go): enough for a full tick's record on
	// every flusher (a record waits for its claims while the one before is
	// on the wire).
	maxClaimWaiters = maxFlushers * claims.MaxTickJobs
	// claimsYield bounds how long the writes after a crowded tick's runs
	// (records, settles) wait for its claims on the wire (batcher.quiet).
	claimsYield = time.Second
	// recordMin is how many recordable runs of one tick a batch holds for
	// them to be claimed by a tick's record (tickrecord.go): fewer go by
	// ClaimEach, whose cost is as small for a few jobs and which needs no
	// settle.
	recordMin = 64
	// shrinkFloor is the size below which a map of live runs is not made
	// again smaller (runs.go).
	shrinkFloor = 64
	// maxFinishes bounds the runs being recorded at once: bookkeeping yields
	// to the next tick's claims.
	maxFinishes = 8
	// maxPublishes bounds a new term's spec transactions in flight: a few
	// keep etcd's pipeline full, as claims do.
	maxPublishes = 4
)

// Sizes of one transaction, within etcd's default limit of 128 operations
// (--max-txn-ops).
const (
	// maxTxnOps is etcd's default limit itself: a user's etcd keeps it.
	maxTxnOps = 128
	// recordBatch is the runs one pair of transactions records (record.go):
	// the read takes two keys a run (history and outcome), in nested
	// transactions of recordReadGroup; the write a nested transaction a
	// run, recordWriteGroup of them to a transaction nested in it. etcd
	// lets a nested transaction hold only its limit less the operations of
	// those around it: the groups (16 and 20), a group and a run's few
	// operations stay within it.
	recordBatch      = 1024           // mutation:record-batch
	recordReadGroup  = maxTxnOps - 24 // mutation:record-read-group
	recordWriteGroup = maxTxnOps / 2
	// specBatch is the jobs whose specs one transaction compares and
	// writes: a compare, a mark (publish.go) and a write each, the write a
	// nested transaction of the spec's put and the mark, so a few of the
	// limit are left to the nesting (as below).
	specBatch = maxTxnOps - 8
	// specCheckGroups and specCheckJobs shape a term's read-only check of
	// its specs (publish.go): groups nested in one transaction, each of a
	// job's two compares (its spec, its mark) for specCheckJobs jobs, so a
	// group's compares are within the limit less the groups around it.
	specCheckGroups = maxTxnOps / 2
	specCheckJobs   = (maxTxnOps - specCheckGroups) / 2
	// publishBatch is the jobs a term checks in one read (at most
	// specCheckGroups*specCheckJobs, 2048).
	publishBatch = 2000
	// regBatch is the jobs a term registers in one transaction, on a lease
	// that held none (publish.go), and so the most a lease of a term's
	// registrations holds: regGroup to a nested transaction, whose count
	// (63) and a group's size are within maxTxnOps. Fewer, larger leases
	// cost fewer keepalives.
	regBatch = 2 * publishBatch // mutation:reg-batch
	// specChangeBatch is the added or removed jobs one transaction writes:
	// a nested transaction and a registration's write each. etcd lets a
	// nested transaction hold only its limit less the operations of the one
	// around it, so half the limit is left to the nested ones.
	specChangeBatch = maxTxnOps / 4 // mutation:spec-change-batch
	// outcomeLoadBatch is the jobs whose outcome keys one read of
	// loadOutcomes takes, at a Start.
	outcomeLoadBatch = maxTxnOps
)

// Keys per lease (session.go). With auth on and a user that is not root,
// etcd checks the user's permission on every key already on a lease at
// each put that carries it (etcd-io/etcd#15993): a few microseconds a key,
// so a lease of a thousand keys adds milliseconds to each put.
const (
	// markerLeaseKeys is how many keys a lease of markers may hold and
	// still take more: a batch of claims' markers, put in one transaction,
	// goes on a lease that held fewer, and none sent before it and not
	// yet answered would then find as many beside its own, so that no
	// marker's put checks more than markerLeaseKeys-1 keys in whatever
	// order they commit. A crowded tick's markers spread over a
	// lease per batch in flight, kept for the next.
	markerLeaseKeys = 16
	// claimMarkerLeaseKeys is the same for claim mode's markers, claimed
	// one a transaction: they share leases of that many, not a lease per
	// markerLeaseKeys runs in progress.
	claimMarkerLeaseKeys = 256
	// regLeaseKeys is how many registrations a lease holds for a job
	// added later, which goes on a lease that holds fewer. A term's go
	// regBatch to a transaction on a lease that held none, so that
	// none of their puts checks a key (etcd checks a transaction's puts
	// before it applies any), and that lease takes no more. Registrations
	// are written once per job and process, so they share large leases:
	// the many leases' keepalives of a lease a batch slowed the runs of a
	// steady minute with auth on (BENCHMARKS.md).
	regLeaseKeys = 1000
	// regGroup is the registrations a transaction nested in a new term's
	// transaction of them holds (publish.go): regBatch of them in 63
	// groups, whose count and a group's size are within maxTxnOps.
	regGroup = maxTxnOps / 2 // mutation:reg-group
)

// twinPoll is how often a claim whose answer was lost looks again at a run
// of the same tick whose claim is on the wire (unanswered.go).
const twinPoll = 10 * time.Millisecond

// reloadWindow is how long a removed coordinated job keeps its place for a
// job added again under its name (see reload.go): long enough for a process
// that removes and re-adds its jobs on a configuration reload.
const reloadWindow = 10 * time.Second

// Ticks not run (see notrun.go and gap.go).
const (
	// notRunFlush is how often a replica writes the ticks it did not run:
	// a job paused for long costs each replica two requests this often,
	// however many of its ticks pass.
	notRunFlush = 10 * time.Second
	// maxNotRunPending bounds the ticks not run a replica keeps for one
	// job while etcd does not answer.
	maxNotRunPending = 1024
	// notRunBatch is the jobs whose ticks not run one pair of transactions
	// writes: three reads each in the first.
	notRunBatch = 40
	// maxGapTicks bounds the ticks of one job that a new leader reports as
	// fallen while nobody led: the latest ones.
	maxGapTicks = 1000
	// maxGapScan bounds the ticks of one job a new leader looks at: a day
	// of an every-second job.
	maxGapScan = 100000
	// walkTicks is how many ticks of a catch-up window are walked before
	// the latest is searched for (catchup.go): more than a minute's of an
	// every-second job, the default grace's.
	walkTicks = 64
)

// Ticks a lost leader claimed (see lost.go).
const (
	// lostBatch is the ticks whose marker, history, buffer key and claim
	// key one read looks at, with the markers of their ticks' records: up
	// to five reads a tick.
	lostBatch = maxTxnOps / 5
	// lostRecheck is how often a marker still there is looked at again.
	lostRecheck = 500 * time.Millisecond
	// lostExpiry is how long past its TTL a lost runner's lease may take
	// to expire: etcd checks for expired leases every half second, and
	// revokes them in batches.
	lostExpiry = 2 * time.Second
)

// Buffered ticks (see buffer.go).
const (
	// maxBuffered bounds the ticks a BufferAll job keeps waiting for the run
	// in progress: a tick that comes while it holds as many is dropped. A
	// job whose runs outlast a hundred of its ticks does not catch up by
	// queueing more; each waiting tick costs a key, and a run waiting in a
	// new leader a goroutine and a watch.
	maxBuffered = 100
	// bufferReadBatch is the jobs whose buffers one read of a new term
	// takes.
	bufferReadBatch = maxTxnOps
)

// Backfills (backfill.go).
const (
	// DefaultMaxBackfill is how many ticks a backfill may run unless it is
	// given a cap of its own: a day of a job every two minutes, a month of
	// an hourly one. A range of more is refused.
	DefaultMaxBackfill = 1000
	// MaxBackfillTicks is the highest cap a backfill may be given, and
	// bounds the ticks counted to name how many a refused range holds:
	// each costs a claim and a record.
	MaxBackfillTicks = 100000
	// maxBackfills bounds a job's backfills kept in etcd, finished ones
	// included: a new one deletes the oldest finished, and is refused
	// while that many are in progress.
	maxBackfills = 16
)
