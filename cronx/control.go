package cronx

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/jobkeys"
	"github.com/batonhq/baton/internal/notrun"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Errors of cluster operations.
var (
	// ErrPaused means a tick was not run because its job is paused.
	ErrPaused = errors.New("cronx: job is paused")
	// ErrNotCoordinated means an operation needs etcd coordination, which
	// this Cron does not have.
	ErrNotCoordinated = errors.New("cronx: not coordinated (no etcd configured)")
	// ErrUnknownJob means no replica has published a job of that name.
	ErrUnknownJob = errors.New("cronx: no such job")
)

// Control operates a coordinated scheduler from anywhere with access to its
// etcd: pause and resume jobs cluster-wide, trigger a run, read the status.
// The baton command uses it; a Cron offers the same through its methods.
type Control struct {
	client    *clientv3.Client
	prefix    string // P
	scheduler string
	keys      layout
}

// NewControl returns a Control of the scheduler named scheduler under the
// key prefix P (BATON_PREFIX, default "/baton", when prefix is empty).
func NewControl(client *clientv3.Client, prefix, scheduler string) (*Control, error) {
	if client == nil {
		return nil, errors.New("cronx: NewControl: nil etcd client")
	}
	if err := election.CheckName("scheduler", scheduler); err != nil {
		return nil, fmt.Errorf("cronx: NewControl: %w", err)
	}
	var opts []election.Option
	if prefix != "" {
		opts = append(opts, election.WithPrefix(prefix))
	}
	settings, err := election.Resolve(opts...)
	if err != nil {
		return nil, err
	}
	p := settings.Prefix
	return &Control{client: client, prefix: p, scheduler: scheduler, keys: jobkeys.New(p, scheduler)}, nil
}

// Pause stops every replica from starting job until Resume. Runs in progress
// go on. by is recorded as who paused it.
func (k *Control) Pause(ctx context.Context, job, by string) error {
	if err := k.known(ctx, job); err != nil {
		return err
	}
	if _, err := k.client.Put(ctx, k.keys.Paused(job), by); err != nil {
		return fmt.Errorf("cronx: pause %q: %w", job, err)
	}
	return nil
}

// Resume lets job run again from its next tick.
func (k *Control) Resume(ctx context.Context, job string) error {
	if err := checkJobName(job); err != nil {
		return err
	}
	if _, err := k.client.Delete(ctx, k.keys.Paused(job)); err != nil {
		return fmt.Errorf("cronx: resume %q: %w", job, err)
	}
	return nil
}

// Paused reports whether job is paused, and who paused it as Pause
// recorded it.
func (k *Control) Paused(ctx context.Context, job string) (by string, paused bool, err error) {
	resp, err := k.client.Get(ctx, k.keys.Paused(job))
	if err != nil {
		return "", false, fmt.Errorf("cronx: job %q: %w", job, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false, nil
	}
	by, _ = jobkeys.ParsePaused(resp.Kvs[0].Value)
	return by, true, nil
}

// Jobs returns the names of the scheduler's jobs that a live replica
// registers, sorted (see Status). One read of keys only.
func (k *Control) Jobs(ctx context.Context) ([]string, error) {
	resp, err := k.client.Get(ctx, k.keys.Dir(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, fmt.Errorf("cronx: read %s: %w", k.keys.Dir(), err)
	}
	var jobs []string
	for _, kv := range resp.Kvs {
		if job, leaf, ok := k.keys.JobKey(string(kv.Key)); ok && strings.HasPrefix(leaf, "by/") && (len(jobs) == 0 || jobs[len(jobs)-1] != job) {
			jobs = append(jobs, job)
		}
	}
	slices.Sort(jobs)
	return jobs, nil
}

// Trigger asks for one run of job now, outside its schedule: each call one
// run, on the leader (leader mode) or the first replica to claim it (claim
// mode), even while the job is paused, with the time of the call as its
// Info.Tick. The job's overlap policy treats it as it treats a tick: under
// Allow it runs at once, beside any run in progress; under Forbid,
// BufferOne and BufferAll it waits its turn and runs once the run in
// progress has ended; under Replace it
// replaces the run in progress, and the next tick replaces it. So n calls
// at once are n runs side by side under Allow, one after another under
// Forbid, and under Replace each replaces the one before, the last running
// to its end.
func (k *Control) Trigger(ctx context.Context, job, by string) error {
	if err := k.known(ctx, job); err != nil {
		return err
	}
	at := time.Now()
	if _, err := k.client.Put(ctx, k.keys.Trigger(job, triggerID(at, rand.Uint32())), jobkeys.EncodeTrigger(by, at, "")); err != nil {
		return fmt.Errorf("cronx: trigger %q: %w", job, err)
	}
	return nil
}

// known checks that job is a valid name and that a live replica has it: a
// registration of it exists.
func (k *Control) known(ctx context.Context, job string) error {
	if err := checkJobName(job); err != nil {
		return err
	}
	resp, err := k.client.Get(ctx, k.keys.ByDir(job), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return fmt.Errorf("cronx: job %q: %w", job, err)
	}
	if resp.Count == 0 {
		return fmt.Errorf("cronx: job %q of scheduler %q: %w", job, k.scheduler, ErrUnknownJob)
	}
	return nil
}

// Status is the state of a coordinated scheduler, as etcd has it.
type Status struct {
	Scheduler string
	// Leader is the elected replica in leader mode; None() when nobody
	// leads, and always in claim mode.
	Leader election.Leader
	// Jobs are the jobs a live replica registers: a job a deploy dropped
	// is gone once the replicas that had it have stopped, or their leases
	// expired. While no replica registers any job, they are the jobs of
	// the last replica that published, each with its NotScheduledSince.
	Jobs []JobStatus
	// Ignored are the keys under the scheduler that are no job's: of a
	// job name that is not valid, or in no job's directory, which Jobs and
	// Status skip (see ListSchedulers).
	Ignored []IgnoredKey
}

// JobStatus is the state of one job.
type JobStatus struct {
	Name string
	// Spec is the job's schedule as its replicas registered it.
	Spec   string
	Paused bool
	// PausedBy is who paused the job, as Pause recorded it, or the replica
	// that paused it after its failures (WithPauseAfter); PausedReason is
	// why it paused itself, empty for a pause by hand.
	PausedBy     string
	PausedReason string
	// LastTick is the nominal time of the last claimed tick and LastBy the
	// replica that claimed it; zero and empty before the first run.
	LastTick time.Time
	LastBy   string
	// Running lists the replicas running the job now.
	Running []string
	// Buffered are the ticks of a BufferOne or BufferAll job that wait for
	// the run in progress to end, oldest first.
	Buffered []time.Time
	// Next is the next tick by this scheduler's clock; zero from a Control,
	// which has no schedule of its own.
	Next time.Time
	// History is the latest runs, oldest first.
	History []Record
	// NotRun counts the job's ticks that no replica ran over the last day,
	// by reason, cluster-wide (see the package documentation); absent
	// reasons are zero. ReasonClaimedElsewhere is never counted: that tick
	// ran on another replica.
	NotRun map[Reason]int
	// NotRunHours are the same ticks by the hour they fell in, oldest
	// first; hours with none are left out.
	NotRunHours []NotRunHour
	// LastSuccess and LastFailure are when the job's last successful and
	// last failed runs ended, and ConsecutiveFailures the runs that failed
	// since the last success, cluster-wide, however far back in its
	// history (outcome.go); zero before the first.
	LastSuccess         time.Time
	LastFailure         time.Time
	ConsecutiveFailures int
	// Backfills are the job's backfills (Cron.Backfill), oldest range
	// first: in progress, and the last ones finished or refused.
	Backfills []Backfill
	// Started are the releases whose start ran the job (WithRunAtStart),
	// oldest first, the last of them the latest; none for a job that does
	// not run at start or has not yet.
	Started []string
	// NotScheduledSince is zero while a live replica registers the job.
	// While no replica of the scheduler registers any job (every one
	// stopped or dead), Status still lists the jobs of the last replica
	// that published (roster.go), each with the last time etcd heard of a
	// replica of the scheduler: its stop, or after a crash the latest claim,
	// run's end or change of the jobs. A job that a deploy dropped is not
	// among them.
	NotScheduledSince time.Time
	// Runs are the runs of a job WithStartAt, WithEndAt or WithMaxRuns
	// counted cluster-wide, and MaxRuns, StartAt and EndAt its bounds, as
	// its claims wrote them (bounds.go); zero for a job with none, or
	// before its first run.
	Runs    int64
	MaxRuns int
	StartAt time.Time
	EndAt   time.Time
}

// Ended reports whether the job runs no more: past its EndAt by now, or at
// its MaxRuns.
func (j JobStatus) Ended(now time.Time) bool {
	return !j.EndAt.IsZero() && !now.Before(j.EndAt) || j.MaxRuns > 0 && j.Runs >= int64(j.MaxRuns)
}

// Status reads the scheduler's state: one read of its keys and one of its
// election.
func (k *Control) Status(ctx context.Context) (Status, error) {
	return k.status(ctx, true)
}

// status reads the scheduler's state; with liveOnly, only of the jobs a
// live replica registers.
func (k *Control) status(ctx context.Context, liveOnly bool) (Status, error) {
	st := Status{Scheduler: k.scheduler}
	ld, err := leaderOf(ctx, k.client, k.prefix, k.scheduler)
	switch {
	case err == nil:
		st.Leader = ld
	case !errors.Is(err, election.ErrNoLeader):
		return st, fmt.Errorf("cronx: status: %w", err)
	}
	resp, err := k.client.Get(ctx, k.keys.Dir(), clientv3.WithPrefix())
	if err != nil {
		return st, fmt.Errorf("cronx: status: %w", err)
	}
	jobs := map[string]*JobStatus{}
	live := map[string]bool{} // jobs a live replica registers
	var ros roster
	get := func(name string) *JobStatus {
		if jobs[name] == nil {
			jobs[name] = &JobStatus{Name: name}
		}
		return jobs[name]
	}
	for _, kv := range resp.Kvs {
		if key := string(kv.Key); strings.HasPrefix(key, k.keys.Backfills()) {
			if name := k.keys.BackfillJob(key); checkJobName(name) == nil {
				j := get(name)
				j.Backfills = append(j.Backfills, publicBackfill(name, jobkeys.ParseBackfill(kv.Value)))
			}
			continue
		}
		name, leaf, ok := k.keys.JobKey(string(kv.Key))
		if !ok && strings.HasPrefix(string(kv.Key), k.keys.Roster()) {
			ros.read(k.keys, kv)
			continue
		}
		if !ok {
			if dir, why := k.keys.Stray(string(kv.Key)); why != "" {
				st.Ignored = ignore(st.Ignored, string(kv.Key), dir, why)
			}
			continue
		}
		j := get(name)
		switch {
		case strings.HasPrefix(leaf, "by/"):
			live[name] = true
		case leaf == "spec":
			j.Spec = string(kv.Value)
		case leaf == "paused":
			j.Paused = true
			j.PausedBy, j.PausedReason = jobkeys.ParsePaused(kv.Value)
		case leaf == "last":
			if seq, by, err := jobkeys.ParseLast(string(kv.Value)); err == nil {
				j.LastTick, j.LastBy = time.Unix(0, seq), by
			}
		case leaf == "history":
			j.History = parseHistory(kv.Value)
		case leaf == "outcome":
			o := jobkeys.ParseOutcome(kv.Value)
			j.LastSuccess, j.LastFailure, j.ConsecutiveFailures = o.LastSuccess, o.LastFailure, o.Failures
		case leaf == "notrun":
			v, now := notrun.Parse(kv.Value), time.Now()
			j.NotRun, j.NotRunHours = notRunCounts(v, now)
		case strings.HasPrefix(leaf, "buffer/"):
			if seq, ok := k.keys.BufferSeq(string(kv.Key)); ok {
				j.Buffered = append(j.Buffered, time.Unix(0, seq))
			}
		case leaf == "started":
			j.Started = jobkeys.ParseStarted(kv.Value)
		case strings.HasPrefix(leaf, "running/"):
			j.Running = append(j.Running, jobkeys.MarkerHolder(string(kv.Value)))
		case leaf == "runs":
			if rv, err := jobkeys.ParseRuns(kv.Value); err == nil {
				j.Runs, j.MaxRuns, j.StartAt, j.EndAt = kv.Version, rv.Max, rv.Start, rv.End
			}
		}
	}
	for _, j := range jobs {
		ros.heardOf(j)
	}
	for name, j := range jobs {
		if ros.unscheduled(live, name) && j.Spec != "" {
			j.NotScheduledSince = ros.latest
		}
		if live[name] || !liveOnly || !j.NotScheduledSince.IsZero() {
			st.Jobs = append(st.Jobs, *j)
		}
	}
	sort.Slice(st.Jobs, func(a, b int) bool { return st.Jobs[a].Name < st.Jobs[b].Name })
	return st, nil
}

func leaderOf(ctx context.Context, client *clientv3.Client, prefix, name string) (election.Leader, error) {
	e, err := election.New(client, name, election.WithPrefix(prefix))
	if err != nil {
		return election.Leader{}, err
	}
	return e.Leader(ctx)
}
