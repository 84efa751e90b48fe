package statuspage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/emptyetcd"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// ErrUnknownScheduler means Read was asked for a scheduler that has
// published no job under the prefix.
var ErrUnknownScheduler = errors.New("statuspage: no such scheduler")

// Snapshot is what the status page shows of one key prefix. Its JSON is
// that of `baton status --json`, documented in its --help: scripts read
// it, so fields are added, never renamed or removed.
type Snapshot struct {
	Prefix string `json:"prefix"`
	// At is when the snapshot was read, by the reader's clock.
	At         time.Time   `json:"-"`
	Elections  []Election  `json:"elections"`
	Locks      []Lock      `json:"locks"`
	Schedulers []Scheduler `json:"schedulers"`
	EmptyEtcd  *EmptyEtcd  `json:"etcd_came_back_empty,omitempty"`
	// Ignored are the keys under P/jobs/ that no scheduler wrote, which
	// the snapshot skips (cronx.IgnoredKey), in key order.
	Ignored []IgnoredKey `json:"ignored_keys,omitempty"`
}

// IgnoredKey is a key that no scheduler wrote, or the keys of one name that
// is not valid: Key is the key when Keys is 1, else the name's directory,
// ending in '/'; Why is what makes it none of a scheduler.
type IgnoredKey struct {
	Key  string `json:"key"`
	Keys int    `json:"keys"`
	Why  string `json:"why"`
}

// EmptyEtcd is the last time a replica found that etcd had come back
// without its data, and with it pauses, run --once claims, run history,
// held locks and leaderships.
type EmptyEtcd struct {
	// At is when it was found, By the identity that found it, Why what
	// gave it away.
	At  time.Time `json:"at"`
	By  string    `json:"by"`
	Why string    `json:"why"`
}

// Election is one election under the prefix and who leads it.
type Election struct {
	Name string `json:"name"`
	// Leader is the leader's identity; empty when a holder that is not
	// baton stored nothing, then Lease tells it.
	Leader string    `json:"leader"`
	Since  time.Time `json:"since,omitzero"`
	// Lease is the leader key's lease, in hex.
	Lease string `json:"lease"`
	// Fence is the leader key's create revision: its fencing token.
	Fence int64 `json:"fence"`
	// Candidates counts the leader and those waiting.
	Candidates int `json:"candidates"`
}

// Lock is one lock under the prefix and who holds it.
type Lock struct {
	Name    string `json:"name"`
	Holder  string `json:"holder"`
	Lease   string `json:"lease"`
	Fence   int64  `json:"fence"`
	Waiting int    `json:"waiting"`
}

// Scheduler is one coordinated scheduler and its jobs.
type Scheduler struct {
	Name string `json:"name"`
	// Leader is empty when nobody leads, and always in claim mode.
	Leader      string    `json:"leader"`
	LeaderSince time.Time `json:"leader_since,omitzero"`
	Jobs        []Job     `json:"jobs"`
}

// Job is one job of a scheduler.
type Job struct {
	Name     string `json:"name"`
	Spec     string `json:"spec"`
	Paused   bool   `json:"paused"`
	PausedBy string `json:"paused_by,omitempty"`
	// PausedReason is why the job paused itself after its failures
	// (cronx.WithPauseAfter); empty for a pause by hand.
	PausedReason string    `json:"paused_reason,omitempty"`
	LastTick     time.Time `json:"last_tick,omitzero"`
	LastBy       string    `json:"last_by,omitempty"`
	LastRun      *Run      `json:"last_run,omitempty"`
	// Running lists the replicas running the job now.
	Running []string `json:"running"`
	// Buffered are the ticks of a BufferOne or BufferAll job waiting for
	// the run in progress to end, oldest first.
	Buffered []time.Time `json:"buffered,omitempty"`
	// Next is the next tick by the spec, after the last one or the
	// snapshot's time; zero when the spec does not parse.
	Next    time.Time `json:"next,omitzero"`
	History []Run     `json:"history"`
	// NotRun counts the ticks no replica ran over the last day, by reason
	// (cronx.Reason's String: "no_leader", "paused", ...); reasons with no
	// tick are left out.
	NotRun map[string]int `json:"not_run,omitempty"`
	// NotRunHours are the same ticks by hour, oldest first (strip.go).
	NotRunHours []NotRunHour `json:"not_run_hours,omitempty"`
	// LastSuccess and LastFailure are when the job's last successful and
	// last failed runs ended, and ConsecutiveFailures the runs failed since
	// the last success, however far back in its history; zero before the
	// first.
	LastSuccess         time.Time `json:"last_success,omitzero"`
	LastFailure         time.Time `json:"last_failure,omitzero"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	// Started are the releases whose start ran the job (cronx.WithRunAtStart,
	// @start), oldest first; none for a job that does not run at start.
	Started []string `json:"started,omitempty"`
	// NotScheduledSince is zero while a replica registers the job; while
	// none of its scheduler runs, the last time etcd heard of one
	// (cronx.JobStatus.NotScheduledSince), and the job is listed all the
	// same, marked "not scheduled by anyone since".
	NotScheduledSince time.Time `json:"not_scheduled_since,omitzero"`
	// Backfills are the job's backfills (cronx.Backfill), oldest range
	// first: in progress, and the last ones finished or refused.
	Backfills []Backfill `json:"backfills,omitempty"`
	// Runs are the runs counted of a job with a start, an end or a
	// maximum of runs (cronx.WithStartAt, WithEndAt, WithMaxRuns), and
	// MaxRuns, StartAt and EndAt those bounds, as its claims wrote them;
	// Ended is true once the job runs no more, past its end or at its
	// maximum: its ticks are not missed, and Next is zero.
	Runs    int64     `json:"runs,omitempty"`
	MaxRuns int       `json:"max_runs,omitempty"`
	StartAt time.Time `json:"start_at,omitzero"`
	EndAt   time.Time `json:"end_at,omitzero"`
	Ended   bool      `json:"ended,omitempty"`
}

// Backfill is a backfill of a job: every tick of [From, To), Done of
// Ticks claimed so far (Ticks is 0 until a replica counted them).
type Backfill struct {
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Ticks    int       `json:"ticks"`
	Done     int       `json:"done"`
	Finished bool      `json:"finished,omitempty"`
	Refused  string    `json:"refused,omitempty"`
	By       string    `json:"by,omitempty"`
}

// BackfillsInProgress are the job's backfills neither finished nor refused.
func (j Job) BackfillsInProgress() []Backfill {
	var out []Backfill
	for _, b := range j.Backfills {
		if !b.Finished && b.Refused == "" {
			out = append(out, b)
		}
	}
	return out
}

// EndedAs says how the job ended: "done" at its maximum of runs, "ended"
// past its end time; "" while it runs on.
func (j Job) EndedAs() string {
	switch {
	case !j.Ended:
		return ""
	case j.MaxRuns > 0 && j.Runs >= int64(j.MaxRuns):
		return fmt.Sprintf("done: %d of %d runs", j.Runs, j.MaxRuns)
	}
	return "ended " + j.EndAt.UTC().Format(time.RFC3339)
}

// NotRunCount is one reason's count of ticks not run.
type NotRunCount struct {
	Reason string
	Count  int
}

// NotRunByReason is NotRun in the order of cronx.Reasons.
func (j Job) NotRunByReason() []NotRunCount {
	var out []NotRunCount
	for _, r := range cronx.Reasons() {
		if n := j.NotRun[r.String()]; n > 0 {
			out = append(out, NotRunCount{Reason: r.String(), Count: n})
		}
	}
	return out
}

// Run is one recorded run.
type Run struct {
	Tick     time.Time `json:"tick"`
	Instance string    `json:"instance"`
	Start    time.Time `json:"start"`
	// DurationSeconds is how long the run took.
	DurationSeconds float64 `json:"duration_seconds"`
	Error           string  `json:"error,omitempty"`
	Triggered       bool    `json:"triggered,omitempty"`
	// Backfill is true for a run of a backfill, whose tick is past on
	// purpose.
	Backfill bool `json:"backfill,omitempty"`
	// TimedOut is true for a run that reached its timeout; Attempt is the
	// attempt's number, for a job with retries.
	TimedOut bool `json:"timed_out,omitempty"`
	Attempt  int  `json:"attempt,omitempty"`
	// CaughtUp is true for the run of a tick missed while nobody ran the
	// job, run late within its catch-up window (cronx.WithCatchUp).
	CaughtUp bool `json:"caught_up,omitempty"`
	// Recovered is, for a run again of a tick whose runner died
	// (WithRecovery), the how-manieth; 0 for a tick's first run.
	Recovered int `json:"recovered,omitempty"`
}

// Lateness is how long after its nominal tick the run started; zero for a
// triggered run, which has no tick of its own, and a backfilled one.
func (r Run) Lateness() time.Duration {
	if r.Triggered || r.Backfill || r.Start.Before(r.Tick) {
		return 0
	}
	return r.Start.Sub(r.Tick)
}

// Duration is DurationSeconds as a time.Duration.
func (r Run) Duration() time.Duration {
	return time.Duration(r.DurationSeconds * float64(time.Second))
}

// Read reads the elections, locks and schedulers under prefix (BATON_PREFIX,
// else "/baton", when empty), and for scheduler, when it is not empty, only
// that one, which must have published jobs (else ErrUnknownScheduler). now
// is the time next ticks are computed from. Values are decoded by the
// readers of election and cronx, the packages that wrote them. A key under
// P/jobs/ that no scheduler wrote (a name that is not valid) is skipped and
// listed in Ignored, the scheduler's only when scheduler is given. ctx
// bounds every read.
func Read(ctx context.Context, client *clientv3.Client, prefix, scheduler string, now time.Time) (*Snapshot, error) {
	if client == nil {
		return nil, errors.New("statuspage: nil etcd client")
	}
	prefix, err := resolvePrefix(prefix)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{Prefix: prefix, At: now, Elections: []Election{}, Locks: []Lock{}, Schedulers: []Scheduler{}}
	elections, err := readQueues(ctx, client, prefix, "election")
	if err != nil {
		return nil, err
	}
	for _, q := range elections {
		s.Elections = append(s.Elections, Election{Name: q.name, Leader: q.leader.Identity, Since: q.leader.Since,
			Lease: q.lease, Fence: q.fence, Candidates: q.count})
	}
	locks, err := readQueues(ctx, client, prefix, "lock")
	if err != nil {
		return nil, err
	}
	for _, q := range locks {
		s.Locks = append(s.Locks, Lock{Name: q.name, Holder: q.leader.Identity, Lease: q.lease, Fence: q.fence, Waiting: q.count - 1})
	}

	names, ignored, err := cronx.ListSchedulers(ctx, client, prefix)
	if err != nil {
		return nil, err
	}
	if scheduler != "" {
		if !slices.Contains(names, scheduler) {
			known := ""
			if len(names) > 0 {
				known = "; schedulers there: " + strings.Join(names, ", ")
			}
			return nil, fmt.Errorf("%w: %q has published no jobs under %s%s", ErrUnknownScheduler, scheduler, prefix, known)
		}
		names, ignored = []string{scheduler}, nil
	}
	for _, name := range names {
		sc, more, err := readScheduler(ctx, client, prefix, name, now)
		if err != nil {
			return nil, err
		}
		s.Schedulers = append(s.Schedulers, sc)
		ignored = append(ignored, more...)
	}
	for _, k := range ignored {
		s.Ignored = append(s.Ignored, IgnoredKey{Key: k.Key, Keys: k.Keys, Why: k.Why})
	}
	slices.SortFunc(s.Ignored, func(a, b IgnoredKey) int { return strings.Compare(a.Key, b.Key) })
	if e, ok, err := emptyetcd.Last(ctx, client, prefix); err == nil && ok {
		s.EmptyEtcd = &EmptyEtcd{At: e.At, By: e.By, Why: e.Why}
	}
	return s, nil
}

func resolvePrefix(prefix string) (string, error) {
	var opts []election.Option
	if prefix != "" {
		opts = append(opts, election.WithPrefix(prefix))
	}
	settings, err := election.Resolve(opts...)
	if err != nil {
		return "", fmt.Errorf("statuspage: %w", err)
	}
	return settings.Prefix, nil
}

// queue is an election's or a lock's keys: the first created is the leader
// or holder, as etcd's concurrency package decides.
type queue struct {
	name   string
	leader election.Leader
	lease  string
	fence  int64
	count  int
}

// readQueues lists the elections or locks (kind) under prefix with their
// keys' leases and revisions (a keys-only read would leave the leases out),
// then asks election who leads or holds each one, leaving the values to
// the package that wrote them. A name is all of a
// key but its last segment, the lease; a name that baton could not have
// made (etcdctl allows slashes) is shown by its holder's lease.
func readQueues(ctx context.Context, client *clientv3.Client, prefix, kind string) ([]queue, error) {
	dir := prefix + "/" + kind + "/"
	resp, err := client.Get(ctx, dir, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("statuspage: read %s: %w", dir, err)
	}
	first := map[string]*mvccpb.KeyValue{}
	count := map[string]int{}
	for _, kv := range resp.Kvs {
		rest := strings.TrimPrefix(string(kv.Key), dir)
		i := strings.LastIndexByte(rest, '/')
		if i <= 0 {
			continue
		}
		name := rest[:i]
		count[name]++
		if f := first[name]; f == nil || kv.CreateRevision < f.CreateRevision {
			first[name] = kv
		}
	}
	var qs []queue
	for name, kv := range first {
		q := queue{name: name, fence: kv.CreateRevision, count: count[name]}
		if kv.Lease != 0 {
			q.lease = fmt.Sprintf("%x", kv.Lease)
		}
		if election.CheckName(kind, name) == nil {
			l, err := holderOf(ctx, client, prefix, kind, name)
			switch {
			case err == nil:
				q.leader = l
			case !errors.Is(err, election.ErrNoLeader): // gone since the listing: shown as listed
				return nil, fmt.Errorf("statuspage: %s %q: %w", kind, name, err)
			}
		}
		qs = append(qs, q)
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].name < qs[j].name })
	return qs, nil
}

func holderOf(ctx context.Context, client *clientv3.Client, prefix, kind, name string) (election.Leader, error) {
	if kind == "lock" {
		return election.Holder(ctx, client, prefix, name)
	}
	e, err := election.New(client, name, election.WithPrefix(prefix))
	if err != nil {
		return election.Leader{}, err
	}
	return e.Leader(ctx)
}

// readScheduler reads the scheduler name, and the keys under it that are
// no job's.
func readScheduler(ctx context.Context, client *clientv3.Client, prefix, name string, now time.Time) (Scheduler, []cronx.IgnoredKey, error) {
	s := Scheduler{Name: name, Jobs: []Job{}}
	ctl, err := cronx.NewControl(client, prefix, name)
	if err != nil {
		return s, nil, err
	}
	st, err := ctl.Status(ctx)
	if err != nil {
		return s, nil, err
	}
	s.Leader, s.LeaderSince = st.Leader.Identity, st.Leader.Since
	for _, j := range st.Jobs {
		if j.Spec == "" {
			continue // keys of a job no replica publishes any more
		}
		s.Jobs = append(s.Jobs, newJob(j, now))
	}
	return s, st.Ignored, nil
}

func newJob(j cronx.JobStatus, now time.Time) Job {
	r := Job{Name: j.Name, Spec: j.Spec, Paused: j.Paused, PausedBy: j.PausedBy,
		LastTick: j.LastTick, LastBy: j.LastBy, Running: j.Running, History: []Run{}}
	r.PausedReason = j.PausedReason
	r.Buffered = j.Buffered
	r.LastSuccess, r.LastFailure, r.ConsecutiveFailures = j.LastSuccess, j.LastFailure, j.ConsecutiveFailures
	r.Started = j.Started
	r.NotScheduledSince = j.NotScheduledSince
	if r.Running == nil {
		r.Running = []string{}
	}
	for _, h := range j.History {
		r.History = append(r.History, Run{Tick: h.Tick, Instance: h.Instance, Start: h.Start,
			DurationSeconds: h.Duration.Seconds(), Error: h.Error, Triggered: h.Triggered, Backfill: h.Backfill,
			TimedOut: h.TimedOut, Attempt: h.Attempt, CaughtUp: h.CaughtUp, Recovered: h.Recovered})
	}
	if n := len(r.History); n > 0 {
		last := r.History[n-1]
		r.LastRun = &last
	}
	for reason, n := range j.NotRun {
		if n > 0 {
			if r.NotRun == nil {
				r.NotRun = map[string]int{}
			}
			r.NotRun[reason.String()] = n
		}
	}
	for _, b := range j.Backfills {
		r.Backfills = append(r.Backfills, Backfill{From: b.From, To: b.To, Ticks: b.Ticks, Done: b.Done,
			Finished: b.Finished, Refused: b.Refused, By: b.By})
	}
	r.NotRunHours = notRunHours(j.NotRunHours)
	r.Next = NextRun(j.Spec, j.LastTick, now)
	r.Runs, r.MaxRuns, r.StartAt, r.EndAt, r.Ended = j.Runs, j.MaxRuns, j.StartAt, j.EndAt, j.Ended(now)
	if !r.StartAt.IsZero() && r.Next.Before(r.StartAt) {
		r.Next = NextRun(j.Spec, r.StartAt.Add(-time.Nanosecond), r.StartAt.Add(-time.Nanosecond))
	}
	if r.Ended || !r.EndAt.IsZero() && !r.Next.Before(r.EndAt) {
		r.Next = time.Time{}
	}
	return r
}

// Outcome is the job's most recent run: its tick, who ran it and how it
// ended ("ok", "failed", "running", "not recorded" or "" before any run),
// with the run's record when there is one. A later tick that was claimed
// and is running, or was never recorded, comes before the last record.
func (j Job) Outcome() (tick time.Time, by, outcome string, run *Run) {
	if h := j.LastRun; h != nil && !h.Tick.Before(j.LastTick) {
		if h.Error != "" {
			return h.Tick, h.Instance, "failed", h
		}
		return h.Tick, h.Instance, "ok", h
	}
	switch {
	case j.LastTick.IsZero():
		return time.Time{}, "", "", nil
	case len(j.Running) > 0:
		return j.LastTick, j.LastBy, "running", nil
	}
	return j.LastTick, j.LastBy, "not recorded", nil
}
