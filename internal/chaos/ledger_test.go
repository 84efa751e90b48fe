package chaos

import (
	"bufio"
	"cmp"
	"fmt"
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
}

func (j Job) mode() string {
	if j.Claim {
		return "claim"
	}
	return "leader"
}

func (j Job) overlap() string {
	if j.Forbid {
		return "forbid"
	}
	return "allow"
}

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
	Outages  []Window // when a linearizable read of etcd failed or took over a second
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
)

// Reasons a missed tick is excused. Any other miss is a violation.
const (
	reasonCrash  = "crash gap"        // no replica could lead: a leader killed, paused or partitioned, within TTL + failover
	reasonNoEtcd = "etcd unavailable" // no quorum or no raft leader, measured, plus TTL + failover
	reasonQuorum = "etcd quorum lost"
	reasonWiped  = "etcd wiped"
	// A claim in flight when etcd's raft leader died, from a second before
	// it to claimDeadline + failover after.
	reasonLeaderChange = "etcd leader change"
	reasonSkew         = "clock skew" // a replica whose clock is ahead took over and claimed from its own time
	reasonMissing      = "unexcused"
)

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
	// Busy ticks were skipped because a run was in progress: Forbid.
	Busy int `json:"busy"`
	// Missed ticks, by reason; reasonMissing counts the violations.
	Missed   int            `json:"missed"`
	MissedBy map[string]int `json:"missed_by"`
	// Outcomes of every run of the job, due or not.
	Written        int `json:"written"`
	Refused        int `json:"refused"`
	RefusedExcused int `json:"refused_excused"`
	Interrupted    int `json:"interrupted"`
	Overlaps       int `json:"overlaps"`
	StaleWrites    int `json:"stale_writes"`
}

// Violation is a broken rule and the ledger lines that show it.
type Violation struct {
	Rule   string   `json:"rule"` // duplicate, overlap, stale-write, refused-write, missed, ledger
	Job    string   `json:"job"`
	Detail string   `json:"detail"`
	Lines  []string `json:"lines,omitempty"`
}

func (v Violation) String() string {
	s := fmt.Sprintf("%s: %s: %s", v.Rule, v.Job, v.Detail)
	for _, l := range v.Lines {
		s += "\n    " + l
	}
	return s
}

// Check applies the rules to the ledger:
//
//   - duplicate: two runs of one job share a tick (G1). Always a violation.
//   - overlap: two runs of a Forbid job overlap in time. Excused only when
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
//     when its replica was paused, sent SIGTERM (the command was finishing
//     as its replica resigned) or killed during the run, or etcd was out.
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
	c.violations = append(c.violations, Violation{Rule: rule, Job: c.job.Name, Detail: detail, Lines: lines(rs...)})
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
		c.rep.Duplicated += len(rs) - 1
		c.violate("duplicate", fmt.Sprintf("tick %s ran %d times", time.Unix(t, 0).UTC().Format(time.RFC3339), len(rs)), rs...)
	}
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
	if !c.job.Forbid {
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
			c.violate("overlap", fmt.Sprintf("a Forbid job ran twice at once for %v", a.End.Sub(b.Start).Round(time.Millisecond)), a, b)
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
			case Pause, Deploy, Kill:
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
		c.violate("refused-write", "the command wrote after its fence lapsed, and no pause, deploy or etcd outage explains it", r)
	}
}

// hits reports whether a replica fault can have stopped this job's ticks:
// the replica led its scheduler, or any replica in claim mode.
func (c *checker) hits(f Fault) bool {
	return c.job.Claim || !f.LedKnown || slices.Contains(f.Led, c.job.Scheduler)
}

// excuse is a span of real time in which ticks may be missed, and why.
type excuse struct {
	Window
	why string
}

func (c *checker) excuses() []excuse {
	var ex []excuse
	for _, f := range c.sc.Faults {
		switch f.Kind {
		case Kill, Pause, Partition:
			if c.hits(f) {
				ex = append(ex, excuse{Window{f.Start.Add(-claimLead), f.Start.Add(c.sc.TTL + failover)}, reasonCrash})
			}
		}
	}
	for _, f := range c.sc.Faults {
		if f.Kind == LeaderKill {
			ex = append(ex, excuse{Window{f.Start.Add(-claimLead), f.Start.Add(claimDeadline + failover)}, reasonLeaderChange})
		}
	}
	ws, why := c.etcdWindows()
	for i, w := range ws {
		ex = append(ex, excuse{Window{w.From.Add(-claimLead), w.To.Add(c.sc.TTL + failover)}, why[i]})
	}
	return ex
}

func (c *checker) offset(instance string) time.Duration { return c.sc.Offsets[instance] }

// rejoined reports whether instance came back from a fault of its own
// between from and to: a restart after SIGTERM or kill -9, SIGCONT, or the
// end of its partition.
func (c *checker) rejoined(instance string, from, to time.Time) bool {
	for _, f := range c.sc.Faults {
		switch f.Kind {
		case Kill, Deploy, Pause, Partition:
			if f.Target == instance && !f.End.Before(from) && !f.End.After(to) {
				return true
			}
		}
	}
	return false
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
	from := c.sc.From.Add(time.Second - 1).Truncate(time.Second)
	for t := from.Unix(); t <= c.sc.To.Unix(); t++ {
		c.rep.Due++
		if _, ok := byTick[t]; ok {
			c.rep.Run++
			continue
		}
		if busy[t] {
			c.rep.Busy++
			continue
		}
		c.rep.Missed++
		why := ""
		tick := time.Unix(t, 0)
		for _, e := range excuses {
			// Fired at tick − offset, by a replica with an offset in [oMin, oMax].
			if e.overlaps(tick.Add(-c.oMax), tick.Add(-c.oMin)) {
				why = e.why
				break
			}
		}
		if why != "" {
			c.rep.MissedBy[why]++
			continue
		}
		unexcused = append(unexcused, t)
	}

	// What is left must be a skew skip: in a gap between two runs, at most
	// ⌈lead + ½ s⌉ ticks, where lead is how far the later run's replica's
	// clock is ahead of the earlier one's.
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
		var p, n Run
		if g.prev >= 0 && g.next >= 0 {
			p, n = byTick[g.prev], byTick[g.next]
			lead := c.offset(n.Instance) - c.offset(p.Instance)
			if c.rejoined(n.Instance, p.Start, n.Start) {
				// Back from a restart, pause or partition, it claimed from
				// its own time ahead of the slowest replica that stayed.
				lead = max(lead, c.offset(n.Instance)-c.oMin)
			}
			if lead > 0 {
				budget = int((lead + time.Second/2 + time.Second - 1) / time.Second)
			}
		}
		if len(ts) <= budget {
			c.rep.MissedBy[reasonSkew] += len(ts)
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
}

// Summary is the report as a table, one job a line, then the violations.
func (rep Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-6s %-6s %-7s %5s %5s %4s %5s %7s  %-40s %s\n", "job", "mode", "overlap", "due", "run", "dup", "busy", "missed", "missed by reason", "written/refused(excused)/interrupted, overlaps, stale")
	for _, j := range rep.Jobs {
		var reasons []string
		for why, n := range j.MissedBy {
			reasons = append(reasons, fmt.Sprintf("%s %d", why, n))
		}
		slices.SortFunc(reasons, func(a, b string) int { return cmp.Compare(a, b) })
		fmt.Fprintf(&b, "%-6s %-6s %-7s %5d %5d %4d %5d %7d  %-40s %d/%d(%d)/%d, %d, %d\n", j.Job, j.Mode, j.Overlap, j.Due, j.Run,
			j.Duplicated, j.Busy, j.Missed, strings.Join(reasons, ", "), j.Written, j.Refused, j.RefusedExcused, j.Interrupted,
			j.Overlaps, j.StaleWrites)
	}
	fmt.Fprintf(&b, "duplicates %d, overlaps %d, stale writes %d, violations %d\n", rep.Duplicates, rep.Overlaps, rep.StaleWrites, len(rep.Violations)+rep.Unshown)
	for _, v := range rep.Violations {
		fmt.Fprintf(&b, "VIOLATION %s\n", v)
	}
	if rep.Unshown > 0 {
		fmt.Fprintf(&b, "... and %d more violations of the rules above\n", rep.Unshown)
	}
	return b.String()
}
