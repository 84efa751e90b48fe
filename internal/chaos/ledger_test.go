package chaos

import (
	"bufio"
	"cmp"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The ledger is what the jobs did, one line per run, as the fenced sink
// (harness_test.go) recorded it: the job, its nominal tick, the replica, the
// fencing token, etcd's incarnation, when the command started, when the sink
// decided its write, when the command ended, and whether the sink took the
// write. The checker below reads it and
// says, per job, which ticks were due, which ran, and which rule a run broke.

// Outcome is how a run ended, as the sink saw it.
type Outcome string

const (
	// Written: the sink found the run's fence current in etcd and took its write.
	Written Outcome = "written"
	// Refused: the run's fence had lapsed when it wrote, or etcd could not
	// tell, so the sink refused the write, as a fenced downstream must.
	Refused Outcome = "refused"
	// Interrupted: the command ended without writing; it was signalled, or
	// its replica died.
	Interrupted Outcome = "interrupted"
)

// Run is one line of the ledger: one run of a job's command.
type Run struct {
	Job      string
	Tick     time.Time // BATON_TICK
	Instance string    // BATON_ID: the replica
	Fence    int64     // BATON_FENCE
	Epoch    int       // etcd's incarnation when the run started: 0, and one more after each wipe
	Start    time.Time // when the command reported its start
	Wrote    time.Time // when the sink decided the command's write; zero when it did not write
	End      time.Time // when the command ended: its connection to the sink closed
	Outcome  Outcome
}

const stampLayout = "2006-01-02T15:04:05.000000Z07:00"

// String is the run's ledger line: JOB TICK INSTANCE FENCE EPOCH START
// WROTE END OUTCOME, with "-" for WROTE when the command did not write.
func (r Run) String() string {
	wrote := "-"
	if !r.Wrote.IsZero() {
		wrote = r.Wrote.UTC().Format(stampLayout)
	}
	return fmt.Sprintf("%s %s %s %d %d %s %s %s %s", r.Job, r.Tick.UTC().Format(time.RFC3339), r.Instance, r.Fence,
		r.Epoch, r.Start.UTC().Format(stampLayout), wrote, r.End.UTC().Format(stampLayout), r.Outcome)
}

// parseRun reads a ledger line written by Run.String.
func parseRun(line string) (Run, error) {
	f := strings.Fields(line)
	if len(f) != 9 {
		return Run{}, fmt.Errorf("ledger line %q: want 9 fields", line)
	}
	var r Run
	var errs [6]error
	r.Job, r.Instance, r.Outcome = f[0], f[2], Outcome(f[8])
	r.Tick, errs[0] = time.Parse(time.RFC3339, f[1])
	r.Fence, errs[1] = strconv.ParseInt(f[3], 10, 64)
	r.Epoch, errs[2] = strconv.Atoi(f[4])
	r.Start, errs[3] = time.Parse(time.RFC3339Nano, f[5])
	if f[6] != "-" {
		r.Wrote, errs[4] = time.Parse(time.RFC3339Nano, f[6])
	}
	r.End, errs[5] = time.Parse(time.RFC3339Nano, f[7])
	for _, err := range errs {
		if err != nil {
			return Run{}, fmt.Errorf("ledger line %q: %w", line, err)
		}
	}
	switch {
	case r.Outcome != Written && r.Outcome != Refused && r.Outcome != Interrupted:
		return Run{}, fmt.Errorf("ledger line %q: outcome %q", line, r.Outcome)
	case r.Wrote.IsZero() != (r.Outcome == Interrupted):
		return Run{}, fmt.Errorf("ledger line %q: a write time goes with a write", line)
	}
	return r, nil
}

// readLedger reads a ledger file.
func readLedger(path string) ([]Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var runs []Run
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		r, err := parseRun(sc.Text())
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, sc.Err()
}

// Job is one job of the run, and how its scheduler runs it. Every job fires
// every second.
type Job struct {
	Name      string
	Scheduler string
	Claim     bool // claim mode; leader mode otherwise
	Forbid    bool // overlap Forbid; Allow otherwise
	Replace   bool // overlap Replace
	Retries   bool // a failed run is retried: --attempts 2
}

func (j Job) mode() string {
	if j.Claim {
		return "claim"
	}
	return "leader"
}

func (j Job) overlap() string {
	switch {
	case j.Forbid:
		return "forbid"
	case j.Replace:
		return "replace"
	}
	return "allow"
}

// exclusive reports whether two runs of the job must never overlap.
func (j Job) exclusive() bool { return j.Forbid || j.Replace }

// FaultKind names a fault the harness injects.
type FaultKind string

const (
	Kill       FaultKind = "kill-9"           // SIGKILL of a replica (its commands die with it), then a restart
	Deploy     FaultKind = "sigterm"          // SIGTERM of a replica, as a deploy sends it, then a restart
	Pause      FaultKind = "sigstop"          // SIGSTOP of a replica and its commands for longer than the TTL, then SIGCONT
	Partition  FaultKind = "partition"        // a replica's traffic to every etcd member blackholed, then healed
	MemberKill FaultKind = "member-kill"      // an etcd follower killed, then restarted
	LeaderKill FaultKind = "raft-leader-kill" // etcd's raft leader killed, then restarted
	QuorumLoss FaultKind = "quorum-loss"      // two of the three members killed, then restarted
	Wipe       FaultKind = "wipe"             // every member killed and started again with no data
)

// Fault is one injected fault.
type Fault struct {
	Kind   FaultKind `json:"kind"`
	Target string    `json:"target"` // the replica, or the etcd members
	// Led lists the leader-mode schedulers the replica led when it was hit.
	// When LedKnown is false etcd could not say, and the fault counts as
	// hitting every leader.
	Led      []string  `json:"led,omitempty"`
	LedKnown bool      `json:"led_known"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"` // undone: restarted, continued, healed, healthy again
}

// Window is a span of real time.
type Window struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

func (w Window) overlaps(from, to time.Time) bool { return !w.To.Before(from) && !to.Before(w.From) }

// Scenario is what the checker needs besides the ledger.
type Scenario struct {
	Jobs     []Job
	From, To time.Time // ticks due: every whole second from From to To
	TTL      time.Duration
	Offsets  map[string]time.Duration // each replica's clock offset
	Faults   []Fault
	Outages  []Window // when a write to etcd failed or took over a second
	// Skips are the ticks the replicas reported not run, as their logs
	// give them: evidence for a miss that the ledger alone cannot explain,
	// weighed against the ledger.
	Skips []Skip
	// MinStrict, when set, is the least share of all due ticks that must be
	// strictly checked (covered by no excuse); below it, the run proves too
	// little and fails.
	MinStrict float64
}

// Allowances of the rules, each the time something legitimately takes.
const (
	// failover is what a successor needs once the lease of a crashed,
	// paused or partitioned leader can have expired: the watch, the
	// election, its first claim, on a machine loaded by the other tests.
	failover = 3 * time.Second
	// claimLead is how long before a fault a tick may have been claimed but
	// its command not yet started, so that the fault cost it.
	claimLead = time.Second
	// releaseLag is how long after a Forbid run ends its in-progress marker
	// may still be in etcd, making the next tick busy.
	releaseLag = 500 * time.Millisecond
	// claimDeadline is how long cronx waits for a claim transaction. When
	// etcd's raft leader dies, a claim in flight waits that long, and the
	// next tick's claim, sent after a new leader is elected, can commit
	// first; the stalled tick is then refused as already claimed.
	claimDeadline = 5 * time.Second
	// reportLag is how long after a Forbid run ended a replica may still
	// have found its marker and reported a tick busy: the run's record and
	// the marker's release are etcd writes, which a loaded machine delays.
	reportLag = 3 * time.Second
	// maxHeldUp bounds the ticks of one job that a run excuses as held up
	// on a replica's report alone, with no fault or outage to explain
	// them: a few are a loaded machine, more are a defect.
	maxHeldUp = 3
)

// minStrict is the least share of due ticks a run must check strictly.
const minStrict = 0.70

// quietAfter is how long the harness keeps quiet after fault f is undone,
// on top of the drawn gap: until every excuse f can open has closed, and
// then long enough that the ticks strictly checked outnumber those f can
// excuse by the ratio minStrict asks for. spread bounds the replicas'
// spread of clock offsets, which widens every excuse. The excuses are taken
// at their widest, so a run checks more than minStrict strictly.
func quietAfter(f Fault, ttl, spread time.Duration) time.Duration {
	var end time.Time // when f's excuses close, in the firing replica's time
	switch f.Kind {
	case Kill, Pause, Partition:
		end = f.Start.Add(ttl + failover)
	case LeaderKill, MemberKill:
		// A member killed at random may be the raft leader.
		end = f.Start.Add(claimDeadline + failover)
	case QuorumLoss, Wipe, ColdStart:
		// The probe may see etcd back a moment after the fault is undone.
		end = f.End.Add(probeLag + ttl + failover)
	default:
		return 0
	}
	end = end.Add(spread)
	excused := end.Sub(f.Start.Add(-claimLead))
	strict := time.Duration(float64(excused) * minStrict / (1 - minStrict))
	return max(0, end.Sub(f.End)) + strict.Round(100*time.Millisecond)
}

// probeLag bounds how long after an etcd fault is undone the probe may still
// find etcd unavailable.
const probeLag = 2 * time.Second

// Reasons a missed tick is excused. Any other miss is a violation.
const (
	reasonCrash  = "crash gap"        // no replica could lead: a leader killed, paused or partitioned, within TTL + failover
	reasonMarker = "holder's marker"  // claim mode, Forbid: a crashed holder's marker lives until its lease expires
	reasonLost   = "claimer lost"     // claim mode: a replica claimed the tick, then died or was cut off before the run started
	reasonNoEtcd = "etcd unavailable" // no quorum or no raft leader, measured, plus TTL + failover
	reasonQuorum = "etcd quorum lost"
	reasonWiped  = "etcd wiped"
	// A claim in flight when etcd's raft leader died, from a second before
	// it to claimDeadline + failover after.
	reasonLeaderChange = "etcd leader change"
	reasonSkew         = "clock skew" // a replica whose clock is ahead joined and claimed from its own time
	// Claim mode: a replica reported that the tick's claim was still
	// waiting for etcd when the job's next tick fired, and gave way to it.
	reasonHeldUp = "claim held up"
	// Replace: the replica logged that it stopped the tick's command for
	// the next tick, before the command had reached the sink.
	reasonReplaced = "replaced unseen"
	reasonMissing  = "unexcused"
)

// limits names, for each excuse, the documented limit of baton it stands
// for: an excuse is a limit the documentation admits, or it is a bug.
var limits = map[string]string{
	reasonCrash: "G4 (cronx doc, LeaderMode): a crashed, paused or cut-off leader keeps its lease for the TTL; " +
		"its successor then runs only the latest missed tick",
	reasonMarker: "Forbid (cronx doc, WithOverlap): the in-progress marker is bound to its holder's lease, so a crashed, " +
		"paused or cut-off holder keeps the job busy until the lease expires",
	reasonLost: "G1 over G4 (cronx doc, Limits): a replica that dies or is cut off between a tick's claim and its run " +
		"leaves the tick claimed and unrun",
	reasonNoEtcd: "G6 (cronx doc, Limits): with etcd unreachable no job runs; scheduling resumes by itself",
	reasonQuorum: "G6 (cronx doc, Limits): with etcd unreachable no job runs; scheduling resumes by itself",
	reasonWiped: "G6 (cronx doc, Limits): an etcd that comes back without its data has forgotten which ticks ran; " +
		"ticks being retried are given up",
	reasonLeaderChange: "cronx doc, Limits: a claim held up past the next tick's claim, as when etcd's raft leader dies " +
		"with the claim in flight, finds the later tick claimed and is not run",
	reasonHeldUp: "cronx doc, Limits: a claim held up past the next tick's is not run; in claim mode, a tick whose claim " +
		"etcd has not taken when the job's next tick fires gives way to it",
	reasonReplaced: "Replace (cronx doc, WithOverlap): the next tick stops the run in progress; a command it stops " +
		"before the command has said it started leaves no line in the ledger, and a tick still waiting for the run it " +
		"replaces when a later one is claimed gives way to it without starting (ReasonOvertaken)",
	reasonSkew: "cronx doc, Limits: a replica whose clock runs ahead claims from its own time when it joins " +
		"(starts, comes back, or takes over as leader): ticks the slower replicas had not reached are skipped once",
}

// Report is the checker's verdict on one run.
type Report struct {
	Jobs        []JobReport `json:"jobs"`
	Duplicates  int         `json:"duplicates"`
	Overlaps    int         `json:"overlaps"`
	StaleWrites int         `json:"stale_writes"`
	Violations  []Violation `json:"violations"`
	// Unshown counts violations beyond maxShown of one rule and job, which
	// are counted but not listed.
	Unshown int `json:"unshown"`
}

// maxShown bounds the violations listed per rule and job: one cause can
// break a rule a thousand times.
const maxShown = 10

// JobReport is one job's tally.
type JobReport struct {
	Job        string `json:"job"`
	Scheduler  string `json:"scheduler"`
	Mode       string `json:"mode"`
	Overlap    string `json:"overlap"`
	Due        int    `json:"due"`
	Run        int    `json:"run"`
	Duplicated int    `json:"duplicated"`
	// Retried counts the attempts after the first of retried runs.
	Retried int `json:"retried"`
	// Busy ticks were skipped because a run was in progress: Forbid.
	Busy int `json:"busy"`
	// Missed ticks, by reason; reasonMissing counts the violations.
	Missed   int            `json:"missed"`
	MissedBy map[string]int `json:"missed_by"`
	// Strict counts the due ticks no excuse covered: had one of them been
	// missed, the run would have failed.
	Strict int `json:"strict"`
	// Excused lists the excused misses, each with the fault behind it.
	Excused []ExcusedMiss `json:"excused,omitempty"`
	// Outcomes of every run of the job, due or not.
	Written        int `json:"written"`
	Refused        int `json:"refused"`
	RefusedExcused int `json:"refused_excused"`
	Interrupted    int `json:"interrupted"`
	Overlaps       int `json:"overlaps"`
	StaleWrites    int `json:"stale_writes"`
}

// ExcusedMiss is a run of consecutive ticks missed for one reason, and the
// fault that excuses them.
type ExcusedMiss struct {
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	Ticks int       `json:"ticks"`
	Why   string    `json:"why"`
	Cause string    `json:"cause"`
}

// StrictShare is the share of due ticks that were strictly checked.
func (j JobReport) StrictShare() float64 {
	if j.Due == 0 {
		return 0
	}
	return float64(j.Strict) / float64(j.Due)
}

// StrictShare is the share of all jobs' due ticks that were strictly
// checked.
func (rep Report) StrictShare() float64 {
	due, strict := 0, 0
	for _, j := range rep.Jobs {
		due, strict = due+j.Due, strict+j.Strict
	}
	if due == 0 {
		return 0
	}
	return float64(strict) / float64(due)
}

// Violation is a broken rule and the ledger lines that show it.
type Violation struct {
	Rule   string   `json:"rule"` // duplicate, overlap, stale-write, refused-write, missed, ledger
	Job    string   `json:"job"`
	Detail string   `json:"detail"`
	Lines  []string `json:"lines,omitempty"`
	// Span is when the runs of Lines started and ended, widened by
	// spanMargin: the time whose replicas' logs tell what happened.
	Span Window `json:"span"`
}

// spanMargin widens a violation's Span on either side.
const spanMargin = 3 * time.Second

func (v Violation) String() string {
	s := fmt.Sprintf("%s: %s: %s", v.Rule, v.Job, v.Detail)
	for _, l := range v.Lines {
		s += "\n    " + l
	}
	return s
}

// Check applies the rules to the ledger:
//
//   - duplicate: two runs of one job share a tick (G1). Always a violation,
//     but for the attempts of a retried run, which share its one claim:
//     replica, epoch and fence.
//   - overlap: two runs of a Forbid or Replace job overlap in time, attempts
//     of one retried run included. Excused only when
//     one of them was frozen by a SIGSTOP of its replica and its write was
//     not taken: a paused process resumes before it can learn it was deposed.
//   - stale-write: the sink took the write of a run whose (epoch, fence) is
//     lower than that of a run of the same job that had already started, so
//     a deposed holder acted after its successor. Checked where fences order
//     successive holders: Forbid jobs, in either mode (a run's fence is its
//     in-progress marker, and each claim waits for the last run's marker).
//     Always a violation.
//   - refused-write: the sink refused a write whose fence had lapsed. Fencing
//     did its job, but a command must not outlive its fence: excused only
//     when its replica was paused or killed during the run, or etcd was out.
//     Not for a SIGTERM: a run's fence outlives its leader's resignation.
//   - missed: a tick due and not run, nor skipped as busy (Forbid, a run in
//     progress). Excused in a crash gap (a kill -9, SIGSTOP or partition of
//     the scheduler's leader, or any replica in claim mode: from a second
//     before it to TTL + failover after it), while etcd was unavailable,
//     without quorum or wiped (from a second before to TTL + failover after
//     it came back), and when a replica whose clock is ahead took over: it
//     claims from its own time, so up to ⌈its lead + ½ s⌉ ticks are skipped
//     once. A replica that rejoins (restarted, resumed, or reconnected)
//     takes over in this sense from the slowest replica that stayed. A tick's firing time is its nominal time less the firing
//     replica's offset, which is not known for a tick nobody ran, so the
//     windows are widened by the replicas' spread of offsets.
func Check(runs []Run, sc Scenario) Report {
	var rep Report
	byJob := map[string][]Run{}
	for _, r := range runs {
		byJob[r.Job] = append(byJob[r.Job], r)
	}
	for _, j := range sc.Jobs {
		c := newChecker(sc, j, byJob[j.Name])
		delete(byJob, j.Name)
		c.check()
		rep.Jobs = append(rep.Jobs, c.rep)
		rep.Duplicates += c.rep.Duplicated
		rep.Overlaps += c.rep.Overlaps
		rep.StaleWrites += c.rep.StaleWrites
		rep.Violations = append(rep.Violations, c.violations...)
		rep.Unshown += c.unshown
	}
	for job, rs := range byJob {
		rep.Violations = append(rep.Violations, Violation{Rule: "ledger", Job: job,
			Detail: "runs of a job the scenario does not have", Lines: lines(rs[:min(len(rs), 3)]...)})
	}
	if share := rep.StrictShare(); sc.MinStrict > 0 && share < sc.MinStrict {
		rep.Violations = append(rep.Violations, Violation{Rule: "strictness", Job: "all",
			Detail: fmt.Sprintf("%.0f%% of due ticks were strictly checked, want at least %.0f%%: excuses covered the rest", 100*share, 100*sc.MinStrict)})
	}
	return rep
}

// checker checks one job.
type checker struct {
	sc         Scenario
	job        Job
	runs       []Run // by start
	oMin, oMax time.Duration
	rep        JobReport
	violations []Violation
	shown      map[string]int // by rule
	unshown    int
}

func newChecker(sc Scenario, j Job, runs []Run) *checker {
	runs = slices.Clone(runs)
	slices.SortStableFunc(runs, func(a, b Run) int { return a.Start.Compare(b.Start) })
	c := &checker{sc: sc, job: j, runs: runs, shown: map[string]int{}}
	for _, o := range sc.Offsets {
		c.oMin, c.oMax = min(c.oMin, o), max(c.oMax, o)
	}
	c.rep = JobReport{Job: j.Name, Scheduler: j.Scheduler, Mode: j.mode(), Overlap: j.overlap(), MissedBy: map[string]int{}}
	return c
}

func (c *checker) violate(rule, detail string, rs ...Run) {
	if c.shown[rule]++; c.shown[rule] > maxShown {
		c.unshown++
		return
	}
	v := Violation{Rule: rule, Job: c.job.Name, Detail: detail, Lines: lines(rs...)}
	for i, r := range rs {
		from, to := r.Start.Add(-spanMargin), r.End.Add(spanMargin)
		if r.End.IsZero() {
			to = r.Start.Add(spanMargin)
		}
		if i == 0 || from.Before(v.Span.From) {
			v.Span.From = from
		}
		if i == 0 || to.After(v.Span.To) {
			v.Span.To = to
		}
	}
	c.violations = append(c.violations, v)
}

func lines(rs ...Run) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

func (c *checker) check() {
	for _, r := range c.runs {
		switch r.Outcome {
		case Written:
			c.rep.Written++
		case Refused:
			c.rep.Refused++
		case Interrupted:
			c.rep.Interrupted++
		}
	}
	c.duplicates()
	c.overlaps()
	c.staleWrites()
	c.refusedWrites()
	c.misses()
}

func (c *checker) duplicates() {
	byTick := map[int64][]Run{}
	for _, r := range c.runs {
		byTick[r.Tick.Unix()] = append(byTick[r.Tick.Unix()], r)
	}
	ticks := make([]int64, 0, len(byTick))
	for t, rs := range byTick {
		if len(rs) > 1 {
			ticks = append(ticks, t)
		}
	}
	slices.Sort(ticks)
	for _, t := range ticks {
		rs := byTick[t]
		detail := fmt.Sprintf("tick %s ran %d times", time.Unix(t, 0).UTC().Format(time.RFC3339), len(rs))
		if c.job.Retries {
			if oneClaim(rs) {
				c.rep.Retried += len(rs) - 1
				continue
			}
			detail += ", not all attempts of one claim (replica, epoch, fence)"
		}
		c.rep.Duplicated += len(rs) - 1
		c.violate("duplicate", detail, rs...)
	}
}

// oneClaim reports whether rs are attempts under one claim.
func oneClaim(rs []Run) bool {
	for _, r := range rs[1:] {
		if r.Instance != rs[0].Instance || keyOf(r) != keyOf(rs[0]) {
			return false
		}
	}
	return true
}

// frozen reports whether r's replica was paused around r and r's write was
// not taken: a paused run, whose interval says nothing about execution.
func (c *checker) frozen(r Run) bool {
	if r.Outcome == Written {
		return false
	}
	for _, f := range c.sc.Faults {
		if f.Kind == Pause && f.Target == r.Instance && (Window{f.Start, f.End}).overlaps(r.Start.Add(-claimLead), r.End) {
			return true
		}
	}
	return false
}

func (c *checker) overlaps() {
	if !c.job.exclusive() {
		return
	}
	for i, a := range c.runs {
		for _, b := range c.runs[i+1:] {
			if !b.Start.Before(a.End) {
				break
			}
			if c.frozen(a) || c.frozen(b) {
				continue
			}
			c.rep.Overlaps++
			c.violate("overlap", fmt.Sprintf("a %s job ran twice at once for %v", c.job.overlap(), a.End.Sub(b.Start).Round(time.Millisecond)), a, b)
		}
	}
}

// fenceKey orders holders: etcd's incarnation first, then the fence, which
// etcd's revisions order within one incarnation.
type fenceKey struct {
	epoch int
	fence int64
}

func keyOf(r Run) fenceKey { return fenceKey{r.Epoch, r.Fence} }

func (k fenceKey) less(o fenceKey) bool {
	return k.epoch < o.epoch || k.epoch == o.epoch && k.fence < o.fence
}

func (c *checker) staleWrites() {
	if !c.job.Forbid {
		return // each run is its own holder: fences of two ticks do not say who succeeded whom
	}
	// best[i] is the run with the highest key among runs[:i+1].
	best := make([]int, len(c.runs))
	for i, r := range c.runs {
		best[i] = i
		if i > 0 && !keyOf(c.runs[best[i-1]]).less(keyOf(r)) {
			best[i] = best[i-1]
		}
	}
	for _, w := range c.runs {
		if w.Outcome != Written {
			continue
		}
		n := sort.Search(len(c.runs), func(i int) bool { return !c.runs[i].Start.Before(w.Wrote) })
		if n == 0 {
			continue
		}
		if s := c.runs[best[n-1]]; keyOf(w).less(keyOf(s)) {
			c.rep.StaleWrites++
			c.violate("stale-write", fmt.Sprintf("fence %d (epoch %d) wrote %v after fence %d (epoch %d) started",
				w.Fence, w.Epoch, w.Wrote.Sub(s.Start).Round(time.Millisecond), s.Fence, s.Epoch), s, w)
		}
	}
}

// etcdWindows are the spans etcd was out: measured outages, quorum losses
// and wipes, with why.
func (c *checker) etcdWindows() (ws []Window, why []string) {
	for _, o := range c.sc.Outages {
		ws, why = append(ws, o), append(why, reasonNoEtcd)
	}
	for _, f := range c.sc.Faults {
		switch f.Kind {
		case QuorumLoss:
			ws, why = append(ws, Window{f.Start, f.End}), append(why, reasonQuorum)
		case Wipe:
			ws, why = append(ws, Window{f.Start, f.End}), append(why, reasonWiped)
		}
	}
	return ws, why
}

func (c *checker) refusedWrites() {
	etcd, _ := c.etcdWindows()
	for _, r := range c.runs {
		if r.Outcome != Refused {
			continue
		}
		excused := false
		for _, f := range c.sc.Faults {
			switch f.Kind {
			case Pause, Kill:
				// Not Deploy: a run's fence is its own marker, which
				// outlives its replica's resignation until the run ends.
				if f.Target == r.Instance && (Window{f.Start, f.End}).overlaps(r.Start.Add(-claimLead), r.Wrote.Add(time.Second)) {
					excused = true
				}
			}
		}
		for _, w := range etcd {
			if w.overlaps(r.Start, r.Wrote) {
				excused = true
			}
		}
		if excused {
			c.rep.RefusedExcused++
			continue
		}
		c.violate("refused-write", "the command wrote after its fence lapsed, and no pause, kill or etcd outage explains it", r)
	}
}

// excuse is a span of real time in which ticks may be missed, why, and the
// fault or outage behind it. A tick is in it when it was fired in the span:
// at its nominal time less the firing replica's offset, which is known
// (firer set) when only one replica can have fired it, and otherwise
// anywhere in the replicas' spread of offsets.
type excuse struct {
	Window
	why   string
	cause string
	firer string
}

// covers reports whether tick, fired by an unknown replica with an offset
// in [oMin, oMax] or by e.firer, falls in e.
func (c *checker) covers(e excuse, tick time.Time) bool {
	if e.firer != "" {
		at := tick.Add(-c.offset(e.firer))
		return e.overlaps(at, at)
	}
	return e.overlaps(tick.Add(-c.oMax), tick.Add(-c.oMin))
}

// stamp formats a time of the run for the report.
func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

func (f Fault) String() string {
	return fmt.Sprintf("%s of %s at %s, undone at %s", f.Kind, f.Target, stamp(f.Start), stamp(f.End))
}

// holding reports whether instance had a run of the job in progress at t:
// its in-progress marker was in etcd.
func (c *checker) holding(instance string, t time.Time) bool {
	for _, r := range c.runs {
		if r.Instance == instance && !r.Start.After(t.Add(claimLead)) && !r.End.Add(releaseLag).Before(t) {
			return true
		}
	}
	return false
}

func (c *checker) excuses() []excuse {
	var ex []excuse
	for _, f := range c.sc.Faults {
		switch f.Kind {
		case Kill, Pause, Partition:
			switch {
			case !c.job.Claim:
				// The leader's lease outlives it by the TTL; a fault of a
				// replica that did not lead the scheduler costs nothing.
				if !f.LedKnown || slices.Contains(f.Led, c.job.Scheduler) {
					ex = append(ex, excuse{Window{f.Start.Add(-claimLead), f.Start.Add(c.sc.TTL + failover)}, reasonCrash, f.String(), ""})
				}
			default:
				// Claim mode has no failover gap: the others claim every
				// tick. The replica hit loses only a tick it had claimed
				// and not yet started, fired by its own clock...
				ex = append(ex, excuse{Window{f.Start.Add(-claimLead), f.Start}, reasonLost, f.String(), f.Target})
				// ...and, for a Forbid job, its marker keeps the job busy
				// until its lease expires, if it held one.
				if c.job.Forbid && c.holding(f.Target, f.Start) {
					ex = append(ex, excuse{Window{f.Start, f.Start.Add(c.sc.TTL + failover)}, reasonMarker, f.String(), ""})
				}
			}
		}
	}
	for _, f := range c.sc.Faults {
		if f.Kind == LeaderKill {
			ex = append(ex, excuse{Window{f.Start.Add(-claimLead), f.Start.Add(claimDeadline + failover)}, reasonLeaderChange, f.String(), ""})
		}
	}
	ws, why := c.etcdWindows()
	for i, w := range ws {
		cause := fmt.Sprintf("etcd out from %s to %s", stamp(w.From), stamp(w.To))
		ex = append(ex, excuse{Window{w.From.Add(-claimLead), w.To.Add(c.sc.TTL + failover)}, why[i], cause, ""})
	}
	return ex
}

func (c *checker) offset(instance string) time.Duration { return c.sc.Offsets[instance] }

// rejoined returns the fault instance came back from between from and to,
// if any: a restart after SIGTERM or kill -9, SIGCONT, or the end of its
// partition.
func (c *checker) rejoined(instance string, from, to time.Time) (Fault, bool) {
	for _, f := range c.sc.Faults {
		switch f.Kind {
		case Kill, Deploy, Pause, Partition:
			if f.Target == instance && !f.End.Before(from) && !f.End.After(to) {
				return f, true
			}
		}
	}
	return Fault{}, false
}

func (c *checker) misses() {
	byTick := map[int64]Run{}
	var ran []int64 // ticks run, sorted
	for _, r := range c.runs {
		if _, ok := byTick[r.Tick.Unix()]; !ok {
			byTick[r.Tick.Unix()] = r
			ran = append(ran, r.Tick.Unix())
		}
	}
	slices.Sort(ran)
	busy := map[int64]bool{}
	if c.job.Forbid {
		// A tick fired by the runner's clock while its run was in progress
		// found the marker. The next run's replica may differ; the skew
		// rule covers its different clock.
		for _, r := range c.runs {
			last := r.End.Add(releaseLag + c.offset(r.Instance)).Unix()
			for t := r.Tick.Unix() + 1; t <= last; t++ {
				busy[t] = true
			}
		}
	}
	excuses := c.excuses()
	var unexcused []int64
	excused := map[int64]excuse{}
	from := c.sc.From.Add(time.Second - 1).Truncate(time.Second)
	for t := from.Unix(); t <= c.sc.To.Unix(); t++ {
		c.rep.Due++
		tick := time.Unix(t, 0)
		var cover *excuse
		for i, e := range excuses {
			if c.covers(e, tick) {
				cover = &excuses[i]
				break
			}
		}
		if cover == nil {
			c.rep.Strict++
		}
		if _, ok := byTick[t]; ok {
			c.rep.Run++
			continue
		}
		if busy[t] || c.reportedBusy(tick) {
			c.rep.Busy++
			continue
		}
		c.rep.Missed++
		if cover != nil {
			c.rep.MissedBy[cover.why]++
			excused[t] = *cover
			continue
		}
		if sk, ok := c.reported(tick, skipReplaced); ok && c.job.Replace {
			c.rep.MissedBy[reasonReplaced]++
			c.rep.Strict--
			excused[t] = excuse{why: reasonReplaced, cause: fmt.Sprintf("%s stopped its command at %s", sk.Instance, stamp(sk.At))}
			continue
		}
		if sk, ok := c.reported(tick, skipOvertaken); ok && c.job.Replace {
			c.rep.MissedBy[reasonReplaced]++
			c.rep.Strict--
			excused[t] = excuse{why: reasonReplaced, cause: fmt.Sprintf("%s gave way to a later tick at %s", sk.Instance, stamp(sk.At))}
			continue
		}
		if sk, ok := c.reported(tick, skipHeldUp); ok && c.job.Claim && c.rep.MissedBy[reasonHeldUp] < maxHeldUp {
			c.rep.MissedBy[reasonHeldUp]++
			c.rep.Strict--
			excused[t] = excuse{why: reasonHeldUp, cause: fmt.Sprintf("%s reported it at %s", sk.Instance, stamp(sk.At))}
			continue
		}
		unexcused = append(unexcused, t)
	}

	// What is left must be a skew skip: in a gap between two runs, at most
	// ⌈lead + ½ s⌉ ticks, where lead is how far the clock of the later
	// run's replica is ahead, when that replica had just joined: come back
	// from a fault of its own, or, in leader mode, taken over as leader.
	type gap struct{ prev, next int64 }
	gaps := map[gap][]int64{}
	var order []gap
	for _, t := range unexcused {
		i, _ := slices.BinarySearch(ran, t)
		g := gap{prev: -1, next: -1}
		if i > 0 {
			g.prev = ran[i-1]
		}
		if i < len(ran) {
			g.next = ran[i]
		}
		if _, ok := gaps[g]; !ok {
			order = append(order, g)
		}
		gaps[g] = append(gaps[g], t)
	}
	for _, g := range order {
		ts := gaps[g]
		budget := 0
		cause := ""
		var p, n Run
		if g.prev >= 0 && g.next >= 0 {
			p, n = byTick[g.prev], byTick[g.next]
			lead := time.Duration(0)
			if f, ok := c.rejoined(n.Instance, p.Start, n.Start); ok {
				// Back from a restart, pause or partition, it claimed from
				// its own time ahead of the slowest replica that stayed.
				lead = max(c.offset(n.Instance)-c.offset(p.Instance), c.offset(n.Instance)-c.oMin)
				cause = fmt.Sprintf("%s came back (%s)", n.Instance, f)
			} else if !c.job.Claim && n.Instance != p.Instance {
				lead = c.offset(n.Instance) - c.offset(p.Instance)
				cause = fmt.Sprintf("%s took over from %s", n.Instance, p.Instance)
			}
			if lead > 0 {
				budget = int((lead + time.Second/2 + time.Second - 1) / time.Second)
				cause += fmt.Sprintf(", its clock %v ahead", lead)
			}
		}
		if len(ts) <= budget {
			c.rep.MissedBy[reasonSkew] += len(ts)
			for _, t := range ts {
				excused[t] = excuse{why: reasonSkew, cause: cause}
			}
			continue
		}
		c.rep.MissedBy[reasonMissing] += len(ts)
		detail := fmt.Sprintf("%d tick(s) from %s to %s missed with no fault, outage or clock skew to explain it",
			len(ts), time.Unix(ts[0], 0).UTC().Format(time.RFC3339), time.Unix(ts[len(ts)-1], 0).UTC().Format(time.RFC3339))
		var around []Run
		if g.prev >= 0 {
			around = append(around, p)
			detail += fmt.Sprintf("; before: %s (clock %+v)", p.Instance, c.offset(p.Instance))
		}
		if g.next >= 0 {
			around = append(around, n)
			detail += fmt.Sprintf("; after: %s (clock %+v)", n.Instance, c.offset(n.Instance))
		}
		c.violate("missed", detail, around...)
	}
	c.rep.Strict -= c.rep.MissedBy[reasonSkew]
	c.rep.Excused = groupExcused(excused)
}

// reportedBusy reports whether a replica reported the job's tick skipped
// as a run was in progress (Forbid) while the ledger shows a run of the job
// in progress: started, and not ended more than reportLag before. The
// ledger's own rule (busy, in misses) counts only the ticks that the
// runner's clock fired during the run; a replica whose clock is ahead, or
// whose claim reached etcd late, finds the marker for a later tick.
func (c *checker) reportedBusy(tick time.Time) bool {
	if !c.job.Forbid {
		return false
	}
	for _, sk := range c.sc.Skips {
		if sk.Job != c.job.Name || !sk.Tick.Equal(tick) || sk.Why != skipBusy {
			continue
		}
		for _, r := range c.runs {
			if !r.Start.After(sk.At.Add(claimLead)) && !r.End.Add(reportLag).Before(sk.At) {
				return true
			}
		}
	}
	return false
}

// reported returns a replica's report of the job's tick for reason why:
// for skipHeldUp, that the tick, in claim mode, gave way to the job's next
// tick because etcd had not taken its claim when that tick fired (a claim
// held up past the next tick's); for skipReplaced, that the tick's command
// had started when the next tick replaced it; for skipOvertaken, that the
// tick, of a Replace job, gave way to a later one before it started.
func (c *checker) reported(tick time.Time, why string) (Skip, bool) {
	for _, sk := range c.sc.Skips {
		if sk.Job == c.job.Name && sk.Tick.Equal(tick) && sk.Why == why {
			return sk, true
		}
	}
	return Skip{}, false
}

// groupExcused lists excused ticks as runs of consecutive ticks with one
// reason and cause.
func groupExcused(excused map[int64]excuse) []ExcusedMiss {
	ticks := slices.Sorted(maps.Keys(excused))
	var out []ExcusedMiss
	for _, t := range ticks {
		e := excused[t]
		if n := len(out); n > 0 && out[n-1].To.Unix() == t-1 && out[n-1].Why == e.why && out[n-1].Cause == e.cause {
			out[n-1].To = time.Unix(t, 0).UTC()
			out[n-1].Ticks++
			continue
		}
		out = append(out, ExcusedMiss{From: time.Unix(t, 0).UTC(), To: time.Unix(t, 0).UTC(), Ticks: 1, Why: e.why, Cause: e.cause})
	}
	return out
}

// Summary is the report as a table, one job a line, then the violations.
func (rep Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s %-6s %-7s %5s %6s %5s %4s %5s %5s %7s  %-40s %s\n", "job", "mode", "overlap", "due", "strict", "run", "dup", "retry", "busy", "missed", "missed by reason", "written/refused(excused)/interrupted, overlaps, stale")
	reasonsUsed := map[string]bool{}
	for _, j := range rep.Jobs {
		var reasons []string
		for why, n := range j.MissedBy {
			reasons = append(reasons, fmt.Sprintf("%s %d", why, n))
			reasonsUsed[why] = true
		}
		slices.SortFunc(reasons, func(a, b string) int { return cmp.Compare(a, b) })
		fmt.Fprintf(&b, "%-7s %-6s %-7s %5d %5.0f%% %5d %4d %5d %5d %7d  %-40s %d/%d(%d)/%d, %d, %d\n", j.Job, j.Mode, j.Overlap, j.Due,
			100*j.StrictShare(), j.Run, j.Duplicated, j.Retried, j.Busy, j.Missed, strings.Join(reasons, ", "), j.Written, j.Refused,
			j.RefusedExcused, j.Interrupted, j.Overlaps, j.StaleWrites)
	}
	fmt.Fprintf(&b, "strictly checked: %.1f%% of due ticks (no excuse covered them)\n", 100*rep.StrictShare())
	fmt.Fprintf(&b, "duplicates %d, overlaps %d, stale writes %d, violations %d\n", rep.Duplicates, rep.Overlaps, rep.StaleWrites, len(rep.Violations)+rep.Unshown)
	for _, why := range slices.Sorted(maps.Keys(reasonsUsed)) {
		if l, ok := limits[why]; ok {
			fmt.Fprintf(&b, "excuse %q stands for %s\n", why, l)
		}
	}
	for _, j := range rep.Jobs {
		for _, e := range j.Excused {
			fmt.Fprintf(&b, "excused: %s %s..%s (%d) %s: %s\n", j.Job, stamp(e.From), stamp(e.To), e.Ticks, e.Why, e.Cause)
		}
	}
	for _, v := range rep.Violations {
		fmt.Fprintf(&b, "VIOLATION %s\n", v)
	}
	if rep.Unshown > 0 {
		fmt.Fprintf(&b, "... and %d more violations of the rules above\n", rep.Unshown)
	}
	return b.String()
}
