package cronx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/batonhq/baton/internal/jobkeys"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A job that runs at start (WithRunAtStart) runs once for each release of
// the app that starts, in the whole cluster: the first replica of a release
// to publish the job's spec (the leader, or every replica in claim mode)
// writes, in one transaction, the release into the job's started key and a
// trigger request (trigger.go), unless the key names the release already.
// The request then runs once, as any trigger does, under the job's overlap
// policy. A replica that restarts, or another replica of the release, finds
// the release in the key and asks for nothing; a replica of an older
// release still running while a newer one rolls out finds its own release
// there too (the key keeps the last jobkeys.StartedReleases of them), so it
// does not run the job again when it leads.

// releaseEnv is the variable a replica's release is read from when
// WithRelease is not given: Convox sets it in every process of an app.
const releaseEnv = "RELEASE"

// WithRunAtStart runs the job once when a new release of the app starts,
// cluster-wide: however many replicas of the release start, and not again
// when one of them restarts. The release is the Cron's (WithRelease, else
// the RELEASE variable that Convox sets); a coordinated Cron without one
// refuses the job (AddJob's error), since without it no start can be told
// from a restart. The run is a triggered run (Info.Triggered, with the
// time of the request as its Tick), made by the replica that publishes the
// job first under the release, and its overlap policy treats it as a
// trigger, and runs while the job is paused, as a trigger does. The job
// keeps its schedule too; a Cron without etcd ignores the option.
func WithRunAtStart() JobOption {
	return func(p *policyDraft) { p.runAtStart = true }
}

// WithRelease names the release (the deploy) of the app that this replica
// runs, for the jobs that run at start (WithRunAtStart): each release runs
// them once in the cluster. The default is the RELEASE variable of the
// environment, which Convox sets; give a version of the app's own outside
// Convox.
func WithRelease(release string) Option {
	return func(c *Cron) {
		cfg := c.coordConfig()
		cfg.release, cfg.releaseSet = release, true
	}
}

// releaseOf is the release given to WithRelease, else the environment's.
func releaseOf(cfg *coordConfig) string {
	if cfg.releaseSet {
		return cfg.release
	}
	return os.Getenv(releaseEnv)
}

// errNoRelease is AddJob's error for a job that runs at start in a Cron
// that has no release to tell a start by.
var errNoRelease = errors.New("WithRunAtStart: no release to run at the start of: set " + releaseEnv + " or give WithRelease")

// checkRunAtStart refuses a job of policy p that runs at start when the
// scheduler sc (nil: not coordinated) has no release.
func checkRunAtStart(sc *scope, p *jobPolicy, label string) error {
	if sc == nil || !p.runAtStart || sc.release != "" {
		return nil
	}
	return fmt.Errorf("cronx: %s: %w", label, errNoRelease)
}

// startsOf is the jobs that run at start among every entry (all), or
// among the jobs added in changes.
func (pb *publisher) startsOf(all bool, changes map[string]specChange) []string {
	if !all && len(changes) == 0 {
		return nil
	}
	var jobs []string
	for _, e := range pb.co.host.Entries() {
		ch, changed := changes[e.name]
		if e.name != "" && e.policy != nil && e.policy.runAtStart && (all || changed && !ch.removed) {
			jobs = append(jobs, e.name)
		}
	}
	slices.Sort(jobs)
	return jobs
}

// requestStarts asks for the runs at start of jobs that no replica of this
// release asked for yet, maxTxnOps/2 jobs at a time: a read of their
// started keys, then a transaction of the requests, retried while etcd
// does not answer until ctx (the term's, or the Start's) ends.
func (pb *publisher) requestStarts(ctx context.Context, jobs []string) {
	co := pb.co
	backoff := retryBackoff
	for len(jobs) > 0 && ctx.Err() == nil {
		n := min(len(jobs), maxTxnOps/2)
		asks, err := pb.planStarts(ctx, jobs[:n])
		if err == nil {
			err = pb.sendStarts(ctx, asks)
		}
		if err != nil {
			co.logger.Error(err, "cronx: runs at start not asked for yet; trying again", "scheduler", co.name)
			sleep(ctx, backoff)
			backoff = min(2*backoff, maxRetryBackoff)
			continue
		}
		backoff = retryBackoff
		jobs = jobs[n:]
	}
}

// planStarts reads the started keys of jobs and returns, for each whose key
// does not hold this release, a nested transaction that writes the release
// and a trigger request while the key is unchanged since the read: so that
// of the replicas of a release that read the key alike, one alone asks,
// and one job asked for by another replica does not fail the others.
func (pb *publisher) planStarts(ctx context.Context, jobs []string) ([]startAsk, error) {
	co := pb.co
	cli := co.conn.etcd()
	resp, err := readWithin(ctx, cli, co.writes.startedReads(jobs))
	if err != nil {
		return nil, fmt.Errorf("read the started keys: %w", err)
	}
	at := co.clock.Now()
	by := fmt.Sprintf("the start of release %s (%s)", co.release, co.identity)
	var asks []startAsk
	for i, job := range jobs {
		kvs := resp.Responses[i].GetResponseRange().Kvs
		ran, rev := jobkeys.DecodeStarted(kvs)
		if slices.Contains(ran, co.release) { // mutation:at-start-again
			continue
		}
		asks = append(asks, startAsk{job: job, at: at, op: co.writes.startAsk(job, ran, rev, by, at)})
	}
	return asks, nil
}

// startAsk is the request of one job's run at start, planned.
type startAsk struct {
	job string
	at  time.Time
	op  clientv3.Op // the nested transaction that asks
}

// sendStarts writes the requests of planStarts, in leader mode while the
// term holds, and tells the observers of each that was written.
func (pb *publisher) sendStarts(ctx context.Context, asks []startAsk) error {
	co := pb.co
	if len(asks) == 0 {
		return nil
	}
	ops := make([]clientv3.Op, len(asks))
	for i, a := range asks {
		ops[i] = a.op
	}
	var conds []clientv3.Cmp
	if co.mode == LeaderMode {
		ts := co.currentTerm()
		if ts == nil {
			return nil // no longer leading: the next leader asks
		}
		conds = append(conds, ts.term.Cmp())
	}
	wctx, wcancel := context.WithTimeout(ctx, etcdTimeout)
	defer wcancel()
	resp, err := co.conn.etcd().Txn(wctx).If(conds...).Then(ops...).Commit()
	if err != nil {
		return fmt.Errorf("ask for the runs at start: %w", err)
	}
	if !resp.Succeeded {
		return nil // the term ended: the next leader asks
	}
	for i, a := range asks {
		if resp.Responses[i].GetResponseTxn().Succeeded {
			co.rep.emit(StartAsked{Scheduler: co.name, Job: a.job, Release: co.release, Instance: co.identity, Time: a.at})
		}
	}
	return nil
}

// StartAsked is the run at start of a job (WithRunAtStart) asked for by
// this replica, the first of its release to schedule the job: once per
// release in the cluster.
type StartAsked struct {
	Scheduler string
	Job       string
	Release   string
	Instance  string
	// Time is when it was asked for: the run's Tick.
	Time time.Time
}

// mayRunStart reports whether this replica may run the request t: any
// request but a run at the start of another release, which the replicas
// of that release run, so that a release's start runs its own code. An
// older replica that leads while a release rolls out leaves it to the
// first replica of the release that leads.
func (co *coordinator) mayRunStart(t trigger) bool {
	return t.release == "" || t.release == co.release // mutation:at-start-other-release
}
