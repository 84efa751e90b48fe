package cronx

import (
	"context"
	"fmt"
	"hash/fnv"
	"reflect"
	"runtime"
	"strings"
	"time"

	"github.com/batonhq/baton/election"
)

// ContextJob is a Job that takes a context and reports an error. Under
// coordination the context is cancelled when the run's claim is lost (its
// session's safe deadline passed, or its lease gone), when a later run of a
// Replace job replaces it (ErrReplaced), at its timeout (ErrTimeout), or
// when the context given to Shutdown ends (ErrShutdown); not by Stop, which
// lets a running job finish. It carries the run's Info; the error is
// recorded in the run history. Run, for plain use, calls RunContext with a
// background context.
type ContextJob interface {
	Job
	RunContext(ctx context.Context) error
}

// ContextFunc makes a func(context.Context) error a ContextJob.
type ContextFunc func(ctx context.Context) error

// Run calls f with a background context.
func (f ContextFunc) Run() { f(context.Background()) }

// RunContext calls f.
func (f ContextFunc) RunContext(ctx context.Context) error { return f(ctx) }

// runJob runs j with ctx when j takes one.
func runJob(ctx context.Context, j Job) error {
	if cj, ok := j.(ContextJob); ok {
		return cj.RunContext(ctx)
	}
	j.Run()
	return nil
}

// Overlap says whether a job's runs may overlap across the cluster.
type Overlap int

const (
	// Allow lets a tick run while an earlier one is still running, as
	// robfig/cron does.
	Allow Overlap = iota
	// Forbid skips a tick while a run of the same job is in progress on any
	// replica. The in-progress marker is bound to the runner's lease, so a
	// crashed runner does not block the job for longer than its TTL.
	Forbid
	// Replace cancels the run in progress, on whichever replica runs it,
	// when the next tick comes, and starts the new run once the old one
	// has ended; two runs never overlap. See the package documentation.
	Replace
	// BufferOne keeps a tick that comes while a run of the job is in
	// progress, on any replica, waiting in etcd, and runs it once that run
	// has ended, with the waiting tick's time as Info.Tick; one tick waits
	// at most, and those that come while one waits are dropped
	// (ReasonBufferFull). Two runs never overlap. See the package
	// documentation.
	BufferOne
	// BufferAll is BufferOne with up to 100 ticks waiting,
	// which run one after another in the order of their ticks.
	BufferAll
)

// Named gives job a name that is the same in every replica, under which its
// ticks are claimed, paused, triggered and reported:
//
//	c.AddJob("0 2 * * *", cronx.Named("nightly-report", cronx.ContextFunc(send), cronx.WithOverlap(cronx.Forbid)))
//
// A name is letters, digits, '.', '_' and '-', starting with a letter or a
// digit. Two jobs of one Cron with one name are an error. Jobs added without
// a name get one derived from their function and spec (see the package
// documentation). A nil job, or a nil func, is refused by AddJob and
// Schedule with an error naming the job, however many Named wrap it.
func Named(name string, job Job, opts ...JobOption) Job {
	return &namedJob{name: name, job: job, opts: opts}
}

type namedJob struct {
	name string
	job  Job
	opts []JobOption // applied over the Cron's WithJobOptions (policy.go)
}

func (j *namedJob) Run() { j.job.Run() }

func (j *namedJob) RunContext(ctx context.Context) error { return runJob(ctx, j.job) }

// Info describes one run of a coordinated job.
type Info struct {
	// Job is the job's name.
	Job string
	// Tick is the nominal time of the run: the schedule's time, not the
	// moment it started. A triggered run has the time of the trigger.
	Tick time.Time
	// Instance is the identity of the replica that runs it.
	Instance string
	// Fence guards writes that must not outlive the run: put Fence.Cmp() in
	// a transaction's If. It is the run's in-progress marker, valid from the
	// claim until the run ends or the replica's lease expires (a pause or a
	// partition past the TTL); a run a stopping leader lets finish keeps it.
	// Fence.Revision is a fencing token for systems outside etcd: it grows
	// with every claim.
	Fence election.Fence
	// Triggered is true for a run started by Trigger rather than the schedule.
	Triggered bool
	// Backfill is true for a run of a backfill (Cron.Backfill): Tick is a
	// past tick of the schedule, run now. Triggered is false for it.
	Backfill bool
	// CaughtUp is true for the run of a tick missed while nobody ran the
	// job (an outage, a failover), run late within its catch-up window
	// (WithCatchUp, WithMisfire), as RunStarted.CaughtUp and
	// Record.CaughtUp have it.
	CaughtUp bool
	// Attempt counts the run's attempts from 1; a failed run of a job with
	// WithRetries is run again under the same claim, Fence included. A
	// recovered run counts its own attempts from 1 again.
	Attempt int
	// Recovered counts, from 1, the runs of the tick started again because
	// the runner of the one before died mid-run (WithRecovery); 0 for the
	// tick's first run. A recovered run has a Fence of its own, later than
	// the lost run's.
	Recovered int
}

type infoKey struct{}

// InfoFrom returns the Info of the run whose context ctx is, and false
// outside a coordinated run.
func InfoFrom(ctx context.Context) (Info, bool) {
	i, ok := ctx.Value(infoKey{}).(Info)
	return i, ok
}

// checkJobName applies election's name rule, the one rule for every name
// that is a segment of a key.
func checkJobName(name string) error {
	if err := election.CheckName("job", name); err != nil {
		return fmt.Errorf("cronx: %w", err)
	}
	return nil
}

// derivedName names an unnamed job after what runs and when: the function's
// symbol (or the job's type) and a hash of the schedule. It is the same in
// every replica of one build.
func derivedName(job Job, schedule string) string {
	what := ""
	switch j := job.(type) {
	case FuncJob:
		what = funcName(j)
	case ContextFunc:
		what = funcName(j)
	default:
		what = reflect.TypeOf(job).String()
	}
	what = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, what[strings.LastIndex(what, "/")+1:])
	h := fnv.New32a()
	h.Write([]byte(schedule))
	return strings.TrimLeft(fmt.Sprintf("%s-%08x", what, h.Sum32()), "._-")
}

func funcName(f any) string {
	if fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer()); fn != nil {
		return fn.Name()
	}
	return "func"
}

// describeSchedule renders a schedule the same way in every process, for
// deriving a name when no spec string is at hand.
func describeSchedule(s Schedule) string {
	switch s := s.(type) {
	case *SpecSchedule:
		loc := ""
		if s.Location != nil {
			loc = s.Location.String()
		}
		return fmt.Sprintf("spec %x %x %x %x %x %x %s", s.Second, s.Minute, s.Hour, s.Dom, s.Month, s.Dow, loc)
	case ConstantDelaySchedule:
		return "every " + s.Delay.String()
	}
	return reflect.TypeOf(s).String()
}

// namedNil is an error naming j if it is Named around a nil job, however
// many Named deep: Named hides the nil from AddJob's check, and the job
// would panic at its first run, in a goroutine, and crash the program.
func namedNil(j Job) error {
	outer, ok := j.(*namedJob)
	if !ok {
		return nil
	}
	for nj := outer; ; {
		if isNilJob(nj.job) {
			if nj == outer {
				return fmt.Errorf("cronx: job %q is nil", outer.name)
			}
			return fmt.Errorf("cronx: job %q is nil (it wraps job %q, which is nil)", outer.name, nj.name)
		}
		if nj, ok = nj.job.(*namedJob); !ok {
			return nil
		}
	}
}

// isNilJob reports whether j is nil or a nil func: a job that would panic at
// its first run, in a goroutine, and crash the program.
func isNilJob(j Job) bool {
	switch f := j.(type) {
	case nil:
		return true
	case FuncJob:
		return f == nil
	case ContextFunc:
		return f == nil
	}
	return false
}
