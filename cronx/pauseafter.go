package cronx

import (
	"fmt"

	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// WithPauseAfter pauses the job, cluster-wide, once n of its runs in a row
// have failed (a run's last attempt, under WithRetries): as Pause does,
// with the replica that recorded the n-th failure as who paused it and the
// reason in JobStatus.PausedReason, until someone resumes it (Resume). A
// resumed job that fails again is paused again at once: its failures count
// from its last success. The pause is written in the transaction that
// records the failed run, so no replica starts the job's next tick once
// the failure is recorded. A job paused already, by hand or otherwise,
// keeps who paused it. The default, 0, never pauses.
func WithPauseAfter(n int) JobOption {
	return func(p *policyDraft) {
		if n < 0 {
			p.errs = append(p.errs, fmt.Errorf("WithPauseAfter(%d): want a number of failures of 0 (never) or more", n))
			return
		}
		p.pauseAfter = n
	}
}

// pauseOps are the writes that pause the job of it once its outcome o
// reaches its policy's failures: the pause key, unless it is there already.
func pauseOps(sc *scope, it finishItem, o jobkeys.Outcome) []clientv3.Op {
	n := 0
	if it.policy != nil {
		n = it.policy.pauseAfter
	}
	if n == 0 || o.Failures < n { // mutation:pause-after
		return nil
	}
	key := sc.keys.Paused(it.job)
	reason := fmt.Sprintf("%d consecutive failures; the last: %s", o.Failures, boundedError(it.err.Error()))
	return []clientv3.Op{clientv3.OpTxn(
		[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}, // mutation:pause-after-kept
		[]clientv3.Op{clientv3.OpPut(key, jobkeys.EncodePaused(sc.identity, reason))}, nil)}
}
