package cronx

import (
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A recovery (recovery.go) is claimed only while the lost tick is still
// the job's latest claim, the job is not paused and, unless the job is
// Allow, no other run of it is in progress and none waits in its buffer:
// a run again of an older tick never starts beside a run of the job, nor
// ahead of the ticks buffered after it, nor replaces a newer run. When
// its transaction fails, the same transaction reads why, and the tick is
// reported not run for it (TickNotRun), unless another decision came
// first: a recovery claimed elsewhere, a record or a run of the tick, or
// the end of the term (the next leader decides then).

var (
	errRecoveryOvertaken = errors.New("its runner was lost, and a later tick of the job was claimed before it could run again")
	errRecoveryPaused    = errors.New("its runner was lost, and the job was paused before it could run again")
	errRecoveryOverlap   = errors.New("its runner was lost, and another run of the job was in progress, or ticks waited in its buffer, when it could run again")
)

// recoveryRefusal tells why the recovery of a job's tick was not claimed.
type recoveryRefusal struct {
	co      *coordinator
	job     string
	tick    time.Time
	overlap Overlap
}

// overlapConds are the conditions of the recovery claim that the job's
// overlap policy adds: no run of the job in progress (none but Allow),
// and none of its ticks buffered (BufferOne, BufferAll).
func (rf recoveryRefusal) overlapConds() []clientv3.Cmp {
	if rf.overlap == Allow { // mutation:recovery-overlap
		return nil
	}
	return rf.co.writes.noRunOf(rf.job, buffering(rf.overlap))
}

// tell reports why the claim failed, given the answers to the reads of
// recoveryClaim and the revisions of the recovered key, the history and
// the job's claim as the recovery read them.
func (rf recoveryRefusal) tell(got []*etcdserverpb.ResponseOp, rev, histRev, lastRev int64) {
	modRev := func(i int) int64 {
		if kvs := got[i].GetResponseRange().Kvs; len(kvs) > 0 {
			return kvs[0].ModRevision
		}
		return 0
	}
	count := func(i int) int64 { return got[i].GetResponseRange().Count }
	co, job, tick := rf.co, rf.job, rf.tick
	switch {
	case modRev(0) != rev || modRev(1) != histRev || count(3) > 0:
		co.logger.Info("cronx: recovery not claimed: the tick was recovered, recorded or run since it was read", "job", job, "tick", tick)
	case modRev(2) != lastRev:
		co.rep.notRun(job, tick, ReasonOvertaken, errRecoveryOvertaken)
	case count(4) > 0:
		co.rep.notRun(job, tick, ReasonPaused, errRecoveryPaused)
	case rf.overlap != Allow && (count(5) > 0 || count(6) > 0):
		co.rep.notRun(job, tick, ReasonOverlap, errRecoveryOverlap)
	default:
		co.logger.Info("cronx: recovery not claimed: the term ended; the next leader decides", "job", job, "tick", tick)
	}
}
