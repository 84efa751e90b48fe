package cronx

import (
	"time"

	"github.com/batonhq/baton/election"
)

// RunStarted is a run that has claimed its tick and is starting.
type RunStarted struct {
	Scheduler string
	Job       string
	// Tick is the run's nominal time (for a triggered run, the trigger's).
	Tick time.Time
	// Instance is the replica that runs it.
	Instance string
	// Fence is the run's in-progress marker, as Info has it.
	Fence     election.Fence
	Triggered bool
	// Backfill is true for a run of a backfill (Cron.Backfill), whose
	// Lateness is zero: its tick is past on purpose.
	Backfill bool
	// Start is when the run started, by the Cron's clock; Lateness is how
	// long after its intended start that was: its tick plus the job's
	// jitter delay (WithJitter), so a jittered run that starts at its
	// delay is not late. Zero for a triggered, backfilled or recovered
	// run (a run again of a tick whose runner died, WithRecovery), which
	// gives baton_job_tick_lateness_seconds no sample.
	Start    time.Time
	Lateness time.Duration
	// ClaimLatency is how long the claim took, from the moment the run asked
	// for it (its tick due, its jitter waited out) to etcd's answer.
	ClaimLatency time.Duration
	// CaughtUp is true for the run of a tick missed while nobody ran the
	// job (an outage, a failover), run late within its catch-up window
	// (WithCatchUp, WithMisfire).
	CaughtUp bool
	// Recovered is Info.Recovered: 1 and up for a run again of a tick whose
	// runner died (WithRecovery).
	Recovered int
}

// Outcome is how a run ended.
type Outcome int

const (
	// Succeeded: the job returned no error (a plain Job always succeeds).
	Succeeded Outcome = iota
	// Failed: the job returned an error.
	Failed
)

// String is "success" or "failure".
func (o Outcome) String() string {
	if o == Failed {
		return "failure"
	}
	return "success"
}

// RunEnded is a run that has returned.
type RunEnded struct {
	RunStarted
	Duration time.Duration
	Outcome  Outcome
	// Err is the error the job returned, nil on success.
	Err error
}

// Reason says why a tick did not run. The set is closed: a tick that came
// due and did not run on a replica is reported with exactly one of these.
type Reason int

const (
	// ReasonNoLeader: the tick fell while no replica led (leader mode):
	// the leader had crashed, been stopped without resigning, or lost its
	// session, and its lease had not expired yet. The next leader reports
	// these ticks when it takes over, except the one it catches up
	// (misfire RunOnce); and a tick a leader claimed as its term ended and
	// gave back unrun, which the next leader found past its catch-up
	// window.
	ReasonNoLeader Reason = iota + 1
	// ReasonMisfireSkipped: the tick came due on a scheduling replica, but
	// past the misfire deadline (the process was stalled, or its clock
	// jumped): RunOnce's grace, or under Skip about a second. In leader
	// mode, also a tick that came due while the leader's loop was stalled,
	// beside the one it fired: a late loop fires one tick of a job, the
	// earliest while it is within its deadline, else the latest.
	ReasonMisfireSkipped
	// ReasonOverlap: the job is Forbid and a run of it was in progress; or
	// the job recovers its runs (WithRecovery), is not Allow, and a run of
	// it was in progress, or ticks waited in its buffer, when a tick whose
	// runner was lost could run again.
	ReasonOverlap
	// ReasonPaused: the job was paused.
	ReasonPaused
	// ReasonOvertaken: a later tick of the job was claimed, or came due,
	// before this one's claim reached etcd (etcd was slow or out), or
	// before this one, whose runner was lost, could run again
	// (WithRecovery); the later tick stands for it.
	ReasonOvertaken
	// ReasonClaimedElsewhere: claim mode, another replica claimed the tick
	// first. The tick did run, elsewhere: this reason is an event of one
	// replica, never counted among a job's ticks not run.
	ReasonClaimedElsewhere
	// ReasonEtcdUnavailable: etcd did not answer the claim before the
	// misfire deadline, or a Replace run lost its claim's session while it
	// waited for the run it replaces.
	ReasonEtcdUnavailable
	// ReasonEtcdRefused: etcd answered the claim, still at the misfire
	// deadline, with a refusal: out of space (its NOSPACE alarm), no write
	// permission under the prefix, a request too large or with too many
	// operations, a corrupt cluster; or, in claim mode, it grants no lease
	// as short as the Cron's TTL (election.ErrTTLBelowMinimum, logged once,
	// not retried). TickNotRun.Err is what etcd said.
	ReasonEtcdRefused
	// ReasonRunnerLost: leader mode, the tick was claimed by a leader that
	// was lost (it crashed or was cut off) before it recorded a run of the
	// tick: it may never have started it, or started it and died in it.
	// The next leader, whose catch-up finds the tick claimed, no run of it
	// going and none in the history, reports it once the claim's marker has
	// lapsed; it cannot run the tick again, which might run it twice.
	ReasonRunnerLost
	// ReasonBufferFull: the job is BufferOne or BufferAll, a run of it was
	// in progress, and its buffer already held as many ticks as it keeps
	// (one, or for BufferAll 100): the tick was dropped.
	ReasonBufferFull
)

// Reasons lists every Reason, in order.
func Reasons() []Reason {
	return []Reason{ReasonNoLeader, ReasonMisfireSkipped, ReasonOverlap, ReasonPaused,
		ReasonOvertaken, ReasonClaimedElsewhere, ReasonEtcdUnavailable, ReasonEtcdRefused, ReasonRunnerLost,
		ReasonBufferFull}
}

// reasonsOf lists the Reasons a tick of a job can be reported with, in
// order: none without etcd, where every tick runs as robfig/cron runs it;
// with etcd, the misfire deadline, a pause, a later tick, an etcd that does
// not answer or refuses; and, by mode and policy, no_leader and runner_lost
// (leader mode), claimed_elsewhere (claim mode), overlap (Forbid; and,
// in leader mode, any policy but Allow of a job that recovers its runs)
// and buffer_full (BufferOne, BufferAll).
func reasonsOf(coordinated bool, mode Mode, overlap Overlap, recovers bool) []Reason {
	if !coordinated {
		return nil
	}
	var out []Reason
	for _, r := range Reasons() {
		switch {
		case (r == ReasonNoLeader || r == ReasonRunnerLost) && mode != LeaderMode,
			r == ReasonClaimedElsewhere && mode != ClaimMode,
			r == ReasonOverlap && overlap != Forbid && !(recovers && mode == LeaderMode && overlap != Allow),
			r == ReasonBufferFull && !buffering(overlap):
			continue
		}
		out = append(out, r)
	}
	return out
}

var reasonNames = [...]string{
	ReasonNoLeader:         "no_leader",
	ReasonMisfireSkipped:   "misfire_skipped",
	ReasonOverlap:          "overlap",
	ReasonPaused:           "paused",
	ReasonOvertaken:        "overtaken",
	ReasonClaimedElsewhere: "claimed_elsewhere",
	ReasonEtcdUnavailable:  "etcd_unavailable",
	ReasonEtcdRefused:      "etcd_refused",
	ReasonRunnerLost:       "runner_lost",
	ReasonBufferFull:       "buffer_full",
}

// String is the reason's name in snake case, as in metric labels:
// "no_leader", "misfire_skipped", "overlap", "paused", "overtaken",
// "claimed_elsewhere", "etcd_unavailable", "etcd_refused", "runner_lost",
// "buffer_full".
func (r Reason) String() string {
	if r > 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "unknown"
}

// TickNotRun is a tick of a job that this replica did not run, and why.
type TickNotRun struct {
	Scheduler string
	Job       string
	Tick      time.Time
	// Instance is the replica that reports it.
	Instance string
	Reason   Reason
	// Err is what etcd or the claim said, when it says more than Reason.
	Err error
}

// Leadership is a term of a leader-mode scheduler, gained or lost by this
// replica.
type Leadership struct {
	Scheduler string
	Instance  string
	// Fence is the term's leader key and revision.
	Fence election.Fence
	// Time is when the term began or ended, by the Cron's clock.
	Time time.Time
	// Err is why a term was lost (nil when the Cron stopped).
	Err error
}

// Session is a change of this replica's etcd session: lost (its lease
// expired or keepalives went unanswered past the safe deadline) or regained
// (a new session granted after a loss).
type Session struct {
	Scheduler string
	Instance  string
	Time      time.Time
	// Err is why the session was lost; nil when regained.
	Err error
}

// EtcdEmpty reports that etcd came back without its data: pauses, claims
// and histories were lost with it. The replica that starts the next term
// (in claim mode, that makes the next claim) finds it: every lease was lost
// with the data, so one does.
type EtcdEmpty struct {
	Scheduler string
	Instance  string
	Why       string
}

// JobAdded is a job added to the Cron (AddFunc, AddJob, Schedule), told
// before any event of its runs, so that an observer can count each of its
// outcomes and reasons from zero: a counter that appears at its first
// increment shows no increase.
type JobAdded struct {
	// Scheduler is empty for a Cron without etcd; Job is the job's name
	// (empty for an unnamed job of a Cron without etcd).
	Scheduler string
	Job       string
	// Coordinated is true for a Cron that coordinates through etcd, in Mode.
	Coordinated bool
	Mode        Mode
	// Reasons are those its ticks can be reported with, given the mode and
	// the job's overlap policy (package documentation, "Observing a Cron").
	Reasons []Reason
	// Hooks are the job's hooks (WithOnFailure, WithOnSuccess), whose
	// failures can be reported; none for a Cron without etcd.
	Hooks []HookKind
	// Period is the time between the job's next two ticks, as its schedule
	// has them when it is added (a day for "0 3 * * *"); 0 for a schedule
	// with no two ticks ahead. An alert on a job's last success measures
	// its silence in periods.
	Period time.Duration
	// Recovers is true for a job of a leader-mode Cron that runs again the
	// ticks whose runner died (WithRecovery): its RunStarted can have
	// Recovered set.
	Recovers bool
	// RunsAtStart is true for a coordinated job that runs at start
	// (WithRunAtStart), whose runs at start can be asked for.
	RunsAtStart bool
	// EndAt is the job's WithEndAt: its ticks end before it; zero for none.
	EndAt time.Time
}

// JobEnded is a job found at its WithMaxRuns by this replica, whose ticks
// end here: told once per replica, at the claim that found it.
type JobEnded struct {
	Scheduler string
	Job       string
	Time      time.Time
	MaxRuns   int
}

// EtcdRefusal is etcd refusing this replica's claims, or accepting writes
// again: a refusal is an answer, not an outage, and waiting alone does not
// cure it.
type EtcdRefusal struct {
	Scheduler string
	Instance  string
	Time      time.Time
	// Err is what etcd said; nil when it accepts writes again.
	Err error
}

// jobAdded is the event of a job named name added with policy p, to the
// scheduler sc (nil when the Cron is not coordinated).
func jobAdded(sc *scope, name string, p *jobPolicy, s Schedule, now time.Time) JobAdded {
	ev := JobAdded{Job: name, Period: period(s, now), EndAt: p.bounds.end}
	if sc != nil {
		ev.Scheduler, ev.Coordinated, ev.Mode = sc.name, true, sc.mode
	}
	ev.Reasons = reasonsOf(ev.Coordinated, ev.Mode, p.overlap, p.recovery > 0)
	if ev.Coordinated {
		ev.Hooks = p.hooks.kinds()
		ev.Recovers = ev.Mode == LeaderMode && p.recovery > 0
		ev.RunsAtStart = p.runAtStart
	}
	return ev
}

// period is the time between the next two ticks of s after now.
func period(s Schedule, now time.Time) time.Duration {
	next := s.Next(now)
	if next.IsZero() {
		return 0
	}
	after := s.Next(next)
	if after.IsZero() {
		return 0
	}
	return after.Sub(next)
}

// runEnded is the event of a run that started as started and returned err
// at end.
func runEnded(started RunStarted, end time.Time, err error) RunEnded {
	ev := RunEnded{RunStarted: started, Duration: end.Sub(started.Start), Err: err}
	if err != nil {
		ev.Outcome = Failed
	}
	return ev
}

// BackfillProgress is a backfill (Cron.Backfill) that moved on: counted,
// refused, a tick claimed (or given back), or finished. The replica that
// runs it tells it.
type BackfillProgress struct {
	Scheduler string
	Job       string
	From, To  time.Time
	// Ticks is how many ticks the backfill has, Done how many were claimed.
	Ticks, Done int
	Finished    bool
	Refused     string
}
