package cronx

import "fmt"

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
