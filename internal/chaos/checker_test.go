package chaos

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Synthetic ledgers: times are seconds after base, so a case reads as a
// timeline.
var base = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

func at(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }

// run is a run that wrote (or was interrupted) at end and ended then.
func run(job string, tick int, instance string, fence int64, start, end float64, out Outcome) Run {
	r := Run{Job: job, Tick: at(float64(tick)), Instance: instance, Fence: fence, Start: at(start), End: at(end), Outcome: out}
	if out != Interrupted {
		r.Wrote = r.End
	}
	return r
}

// steady is one written run a tick from..to by one holder, each starting
// 20 ms after its tick and lasting d seconds, every `every` ticks.
func steady(job, instance string, fence int64, from, to, every int, d float64) []Run {
	var rs []Run
	for t := from; t <= to; t += every {
		rs = append(rs, run(job, t, instance, fence, float64(t)+0.02, float64(t)+0.02+d, Written))
	}
	return rs
}

func scenario() Scenario {
	return Scenario{
		Jobs: []Job{
			{Name: "tick", Scheduler: "tick"},
			{Name: "slow", Scheduler: "slow", Forbid: true},
			{Name: "claim", Scheduler: "claim", Claim: true, Forbid: true, Retries: true},
			{Name: "replace", Scheduler: "replace", Replace: true},
		},
		From:    at(0),
		To:      at(59),
		TTL:     5 * time.Second,
		Offsets: map[string]time.Duration{"r1": 0, "r2": 1500 * time.Millisecond, "r3": -time.Second},
	}
}

// without drops the runs of job whose ticks are in [from, to].
func without(rs []Run, job string, from, to int) []Run {
	return slices.DeleteFunc(slices.Clone(rs), func(r Run) bool {
		return r.Job == job && !r.Tick.Before(at(float64(from))) && !r.Tick.After(at(float64(to)))
	})
}

func join(parts ...[]Run) []Run { return slices.Concat(parts...) }

// rejoinedAhead is a clean ledger in which r2, 1.5 s ahead, ran claim's
// tick 28, then tick 30 and on, and nobody ran 29.
func rejoinedAhead() []Run {
	return join(without(clean(), "claim", 28, 59),
		[]Run{run("claim", 28, "r2", 200, 28.02, 28.22, Written), run("claim", 30, "r2", 201, 28.72, 28.92, Written)},
		steady("claim", "r2", 202, 31, 59, 1, 0.2))
}

// clean is a ledger that breaks no rule: tick every second, slow for two
// seconds every three (the two ticks between are busy), claim every second
// by whichever replica claimed first, its runs of every tenth tick failing
// once and retried under their claim, and replace every second, each run
// of an odd tick stopped by the next tick before the next run starts.
func clean() []Run {
	var claim, replace []Run
	for t := 0; t <= 59; t++ {
		inst := []string{"r1", "r2", "r3"}[t%3]
		claim = append(claim, run("claim", t, inst, int64(100+t), float64(t)+0.02, float64(t)+0.22, Written))
		if t%10 == 0 {
			claim = append(claim, run("claim", t, inst, int64(100+t), float64(t)+0.35, float64(t)+0.55, Written))
		}
		if t%2 == 1 {
			replace = append(replace, run("replace", t, "r2", int64(300+t), float64(t)+0.02, float64(t)+1.01, Interrupted))
		} else {
			replace = append(replace, run("replace", t, "r2", int64(300+t), float64(t)+0.02, float64(t)+0.5, Written))
		}
	}
	return join(steady("tick", "r1", 10, 0, 59, 1, 0.3), steady("slow", "r1", 11, 0, 59, 3, 2.0), claim, replace)
}

func TestCheckAcceptsACleanLedger(t *testing.T) {
	rep := Check(clean(), scenario())
	if len(rep.Violations) > 0 {
		t.Fatalf("violations in a clean ledger:\n%s", rep.Summary())
	}
	want := map[string][4]int{"tick": {60, 60, 0, 0}, "slow": {60, 20, 40, 0}, "claim": {60, 60, 0, 6}, "replace": {60, 60, 0, 0}} // due, run, busy, retried
	for _, j := range rep.Jobs {
		if got := [4]int{j.Due, j.Run, j.Busy, j.Retried}; got != want[j.Job] || j.Missed != 0 {
			t.Errorf("%s: due, run, busy, retried = %v, missed %d; want %v, 0", j.Job, got, j.Missed, want[j.Job])
		}
	}
}

func TestCheckRules(t *testing.T) {
	for _, tc := range []struct {
		name       string
		runs       []Run
		claimAllow bool // the claim job allows overlaps
		faults     []Fault
		outage     []Window
		want       []string // the rules broken, in order; none when the ledger is fine
		reason     string   // a reason some misses must be excused with
	}{
		{
			name: "duplicate: the leader ran one tick twice",
			runs: join(clean(), []Run{run("tick", 30, "r1", 10, 30.03, 30.33, Written)}),
			want: []string{"duplicate"},
		},
		{
			name: "duplicate: across a wipe too",
			runs: join(clean(), []Run{{Job: "tick", Tick: at(59), Instance: "r2", Fence: 3, Epoch: 1, Start: at(59.5), Wrote: at(59.8), End: at(59.8), Outcome: Written}}),
			want: []string{"duplicate"},
		},
		{
			name: "duplicate: a retried run's attempt under another claim",
			runs: join(clean(), []Run{run("claim", 20, "r3", 119, 20.6, 20.8, Interrupted)}),
			want: []string{"duplicate"},
		},
		{
			name: "duplicate: a retried run's attempt on another replica",
			runs: join(clean(), []Run{run("claim", 20, "r1", 120, 20.6, 20.8, Written)}),
			want: []string{"duplicate"},
		},
		{
			name: "overlap: a retried run's attempts at once",
			runs: join(clean(), []Run{run("claim", 21, "r1", 121, 21.1, 21.3, Written)}),
			want: []string{"overlap"},
		},
		{
			name: "overlap: a Replace run started before the run it stopped ended",
			runs: join(without(clean(), "replace", 31, 31), []Run{run("replace", 31, "r2", 331, 31.02, 32.1, Interrupted)}),
			want: []string{"overlap"},
		},
		{
			name: "missed: a Replace job's tick, though the run before ended",
			runs: without(clean(), "replace", 40, 40),
			want: []string{"missed"},
		},
		{
			name: "overlap: a Forbid run started while another ran",
			runs: join(clean(), []Run{run("slow", 31, "r1", 11, 31.02, 32.5, Written)}),
			want: []string{"overlap"},
		},
		{
			name:   "overlap: excused for a paused run whose write was refused",
			runs:   join(clean(), []Run{run("slow", 31, "r2", 9, 31.02, 32.5, Refused)}),
			faults: []Fault{{Kind: Pause, Target: "r2", Start: at(31.5), End: at(32.4)}},
		},
		{
			name: "overlap: not while a killed command's write still awaited its verdict",
			runs: join(without(clean(), "slow", 30, 30), []Run{{Job: "slow", Tick: at(30), Instance: "r1", Fence: 11,
				Start: at(30.02), Wrote: at(34), End: at(31.5), Outcome: Refused}}),
			outage: []Window{{at(31), at(33.9)}},
		},
		{
			name: "stale write: the deposed leader of a Forbid job wrote after its successor started",
			runs: join(without(clean(), "slow", 27, 59), steady("slow", "r2", 200, 30, 59, 3, 2.0), []Run{run("slow", 27, "r1", 127, 27.02, 30.5, Written)}),
			want: []string{"overlap", "stale-write"},
		},
		{
			name: "stale write: not a rule for leader mode's Allow jobs, whose fences are per run",
			runs: join(without(clean(), "tick", 29, 59), steady("tick", "r2", 20, 30, 59, 1, 0.3), []Run{run("tick", 29, "r1", 10, 29.02, 30.5, Written)}),
		},
		{
			name: "stale write: a deposed claimer of a Forbid job in claim mode",
			runs: join(without(clean(), "claim", 29, 29), []Run{run("claim", 29, "r1", 129, 29.02, 31, Written)}),
			want: []string{"overlap", "stale-write"},
		},
		{
			name:       "stale write: not a rule for claim mode's Allow jobs, whose fences are per tick",
			runs:       join(without(clean(), "claim", 30, 30), []Run{run("claim", 30, "r1", 130, 30.02, 31.5, Written)}),
			claimAllow: true,
		},
		{
			name: "refused write: a command outlived its fence for no reason",
			runs: join(without(clean(), "tick", 30, 30), []Run{run("tick", 30, "r1", 10, 30.02, 30.32, Refused)}),
			want: []string{"refused-write"},
		},
		{
			name:   "refused write: excused when the replica was paused",
			runs:   join(without(clean(), "tick", 30, 30), []Run{run("tick", 30, "r1", 10, 30.02, 37, Refused)}),
			faults: []Fault{{Kind: Pause, Target: "r1", Start: at(30.1), End: at(36.9)}},
		},
		{
			name:   "refused write: not excused by a SIGTERM, since a run's fence outlives the resignation",
			runs:   join(without(clean(), "tick", 30, 30), []Run{run("tick", 30, "r1", 10, 30.02, 31.5, Refused)}),
			faults: []Fault{{Kind: Deploy, Target: "r1", Start: at(30.1), End: at(31)}},
			want:   []string{"refused-write"},
		},
		{
			name: "missed: three ticks with nothing to explain them",
			runs: without(clean(), "tick", 20, 22),
			want: []string{"missed"},
		},
		{
			name:   "missed: excused in the crash gap of the leader",
			runs:   join(without(clean(), "tick", 20, 59), steady("tick", "r3", 30, 28, 59, 1, 0.3)),
			faults: []Fault{{Kind: Kill, Target: "r1", Led: []string{"tick", "slow"}, LedKnown: true, Start: at(19.5), End: at(22)}},
			reason: reasonCrash,
		},
		{
			name:   "missed: not excused by a crash of a replica that did not lead",
			runs:   join(without(clean(), "tick", 20, 59), steady("tick", "r3", 30, 28, 59, 1, 0.3)),
			faults: []Fault{{Kind: Kill, Target: "r2", Led: []string{"slow"}, LedKnown: true, Start: at(19.5), End: at(22)}},
			want:   []string{"missed"},
		},
		{
			name:       "missed: in claim mode a replica's crash costs nothing but the tick it had claimed",
			runs:       without(clean(), "claim", 20, 24),
			faults:     []Fault{{Kind: Kill, Target: "r1", LedKnown: true, Start: at(19.5), End: at(22)}},
			claimAllow: true,
			want:       []string{"missed"},
		},
		{
			// r2, 1.5 s ahead, fired tick 21 at 19.5 and was killed at 19.6.
			name:       "missed: in claim mode the tick the crashed replica had just claimed",
			runs:       without(clean(), "claim", 21, 21),
			faults:     []Fault{{Kind: Kill, Target: "r2", LedKnown: true, Start: at(19.6), End: at(22)}},
			claimAllow: true,
			reason:     reasonLost,
		},
		{
			name: "missed: a Forbid job's marker held by a crashed replica",
			runs: join(without(clean(), "claim", 20, 27), []Run{{Job: "claim", Tick: at(20), Instance: "r2", Fence: 120,
				Start: at(20.02), End: at(20.5), Outcome: Interrupted}}),
			faults: []Fault{{Kind: Kill, Target: "r2", LedKnown: true, Start: at(20.5), End: at(22)}},
			reason: reasonMarker,
		},
		{
			name:   "missed: no marker excuse for a crashed replica that held none",
			runs:   without(clean(), "claim", 23, 27),
			faults: []Fault{{Kind: Kill, Target: "r2", LedKnown: true, Start: at(20.5), End: at(22)}},
			want:   []string{"missed"},
		},
		{
			name:   "missed: excused while etcd was out",
			runs:   without(clean(), "tick", 20, 26),
			outage: []Window{{at(20), at(21)}},
			reason: reasonNoEtcd,
		},
		{
			name:   "missed: excused when a claim stalled as etcd's raft leader died",
			runs:   without(clean(), "tick", 22, 22),
			faults: []Fault{{Kind: LeaderKill, Target: "m2", Start: at(21.9), End: at(25)}},
			reason: reasonLeaderChange,
		},
		{
			name:   "missed: not excused by the death of a follower",
			runs:   without(clean(), "tick", 22, 22),
			faults: []Fault{{Kind: MemberKill, Target: "m1", Start: at(21.9), End: at(25)}},
			want:   []string{"missed"},
		},
		{
			name:   "missed: excused after a wipe",
			runs:   without(clean(), "claim", 20, 29),
			faults: []Fault{{Kind: Wipe, Target: "m0,m1,m2", Start: at(20), End: at(25)}},
			reason: reasonWiped,
		},
		{
			name:   "missed: a replica 1.5 s ahead took over and skipped two ticks",
			runs:   join(without(clean(), "tick", 30, 59), steady("tick", "r2", 20, 32, 59, 1, 0.3)),
			faults: []Fault{{Kind: Deploy, Target: "r1", Start: at(29.5), End: at(31)}},
			reason: reasonSkew,
		},
		{
			name:   "missed: three ticks are more than 1.5 s of skew explains",
			runs:   join(without(clean(), "tick", 30, 59), steady("tick", "r2", 20, 33, 59, 1, 0.3)),
			faults: []Fault{{Kind: Deploy, Target: "r1", Start: at(29.5), End: at(31)}},
			want:   []string{"missed"},
		},
		{
			// Claim mode: r2 (1.5 s ahead) ran tick 28, was restarted, and on
			// its return at 28.7 (its clock 30.2) claimed tick 30 before
			// r1 and r3 had reached 29.
			name:       "missed: a replica ahead rejoined and skipped a tick the others had not reached",
			runs:       rejoinedAhead(),
			faults:     []Fault{{Kind: Deploy, Target: "r2", Start: at(28.3), End: at(28.7)}},
			claimAllow: true,
			reason:     reasonSkew,
		},
		{
			name:       "missed: a replica ahead that never left skips nothing",
			runs:       rejoinedAhead(),
			claimAllow: true,
			want:       []string{"missed"},
		},
		{
			name: "missed: a replica behind skips nothing",
			runs: join(without(clean(), "tick", 30, 59), steady("tick", "r3", 20, 31, 59, 1, 0.3)),
			want: []string{"missed"},
		},
		{
			name: "missed: a Forbid job's tick after its run ended",
			runs: without(clean(), "slow", 30, 30),
			want: []string{"missed"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenario()
			sc.Faults, sc.Outages = tc.faults, tc.outage
			sc.Jobs[2].Forbid = !tc.claimAllow
			rep := Check(tc.runs, sc)
			var got []string
			for _, v := range rep.Violations {
				if len(got) == 0 || got[len(got)-1] != v.Rule {
					got = append(got, v.Rule)
				}
			}
			slices.Sort(got)
			got = slices.Compact(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("rules broken: %v, want %v\n%s", got, tc.want, rep.Summary())
			}
			if tc.reason != "" {
				excused := 0
				for _, j := range rep.Jobs {
					excused += j.MissedBy[tc.reason]
				}
				if excused == 0 {
					t.Errorf("no miss excused as %q\n%s", tc.reason, rep.Summary())
				}
				if _, ok := limits[tc.reason]; !ok {
					t.Errorf("excuse %q names no documented limit", tc.reason)
				}
			}
			// Every excused miss is explained by the fault behind it.
			for _, j := range rep.Jobs {
				n := 0
				for _, e := range j.Excused {
					n += e.Ticks
					if e.Cause == "" {
						t.Errorf("%s: %d ticks excused as %q with no cause", j.Job, e.Ticks, e.Why)
					}
				}
				if want := j.Missed - j.MissedBy[reasonMissing]; n != want {
					t.Errorf("%s: %d excused misses explained, want %d", j.Job, n, want)
				}
			}
			for _, v := range rep.Violations {
				if len(v.Lines) == 0 {
					t.Errorf("violation without ledger lines: %s", v)
				}
			}
		})
	}
}

// TestStrictShare: a tick is strictly checked when no excuse covers it, and
// a run that checks too little of its ticks fails.
func TestStrictShare(t *testing.T) {
	sc := scenario()
	rep := Check(clean(), sc)
	if got := rep.StrictShare(); got != 1 {
		t.Errorf("a run without faults checked %.2f of its ticks strictly, want all", got)
	}
	// A leader's crash at 20 covers, of the leader-mode jobs, the ticks
	// fired from 19 (1 s before) to 28 (TTL 5 s + failover 3 s after) by
	// any replica, whose offsets spread over 2.5 s: ticks 18 to 29. Of the
	// claim job it covers only the ticks r1 fired in the second before it,
	// 19 and 20: r1 held no marker then; and none of replace, which r1 did
	// not lead.
	sc.Faults = []Fault{{Kind: Kill, Target: "r1", Led: []string{"tick", "slow"}, LedKnown: true, Start: at(20), End: at(21)}}
	rep = Check(clean(), sc)
	for _, j := range rep.Jobs {
		want := map[string]int{"tick": 60 - 12, "slow": 60 - 12, "claim": 60 - 2, "replace": 60}[j.Job]
		if j.Strict != want {
			t.Errorf("%s: %d ticks strictly checked, want %d\n%s", j.Job, j.Strict, want, rep.Summary())
		}
	}
	sc.MinStrict = 0.95
	rep = Check(clean(), sc)
	if len(rep.Violations) != 1 || rep.Violations[0].Rule != "strictness" {
		t.Errorf("a run checking %.2f strictly against a minimum of 0.95: violations %v, want one of strictness", rep.StrictShare(), rep.Violations)
	}
}

func TestLedgerLinesRoundTrip(t *testing.T) {
	rs := []Run{
		run("tick", 7, "r2", 1234, 7.001234, 7.3, Written),
		{Job: "slow", Tick: at(9), Instance: "r3", Fence: 5, Epoch: 2, Start: at(9.5), End: at(11), Outcome: Interrupted},
		{Job: "claim", Tick: at(10), Instance: "r1", Fence: 9, Start: at(10.1), Wrote: at(10.4), End: at(10.3), Outcome: Refused},
	}
	var text []string
	for _, r := range rs {
		text = append(text, r.String())
	}
	path := filepath.Join(t.TempDir(), "ledger")
	if err := os.WriteFile(path, []byte(strings.Join(text, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := readLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(rs) {
		t.Fatalf("read %d runs, want %d", len(back), len(rs))
	}
	for i := range rs {
		if back[i].String() != rs[i].String() || !back[i].Start.Equal(rs[i].Start) {
			t.Errorf("line %d: read back %q, want %q", i, back[i], rs[i])
		}
	}
	for _, bad := range []string{
		"tick 2026 r1 1 0 x - y written",
		"tick 2026-01-02T03:04:00Z r1 1 0 2026-01-02T03:04:00Z 2026-01-02T03:04:01Z 2026-01-02T03:04:01Z lost",
		"tick 2026-01-02T03:04:00Z r1 1 0 2026-01-02T03:04:00Z - 2026-01-02T03:04:01Z written",
		"short line",
	} {
		if _, err := parseRun(bad); err == nil {
			t.Errorf("parseRun(%q): no error", bad)
		}
	}
}

var flagRecheck = flag.String("chaos.recheck", "", "check again the run kept in this directory (its ledger and report.json, from -chaos.dir DIR -chaos.report DIR/report.json)")

// TestRecheck checks a kept run's ledger again with the checker as it is
// now, to compare rules on one run. It needs -chaos.recheck.
func TestRecheck(t *testing.T) {
	if *flagRecheck == "" {
		t.Skip("no -chaos.recheck directory")
	}
	data, err := os.ReadFile(filepath.Join(*flagRecheck, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rr runReport
	if err := json.Unmarshal(data, &rr); err != nil {
		t.Fatal(err)
	}
	runs, err := readLedger(filepath.Join(*flagRecheck, "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	sc := Scenario{From: rr.From, To: rr.To, Faults: rr.Faults, Outages: rr.Outages, Offsets: map[string]time.Duration{}}
	if sc.TTL, err = time.ParseDuration(rr.TTL); err != nil {
		t.Fatal(err)
	}
	for id, o := range rr.Offsets {
		if sc.Offsets[id], err = time.ParseDuration(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range schedulers {
		sc.Jobs = append(sc.Jobs, s.Job)
	}
	t.Logf("seed %d:\n%s", rr.Seed, Check(runs, sc).Summary())
}

// TestQuietAfterLetsAFaultBeStrictlyOutweighed: the quiet after each fault
// that opens an excuse leaves strictly checked ticks enough to outweigh
// the excused ones at minStrict, on a clean ledger with that fault.
func TestQuietAfterLetsAFaultBeStrictlyOutweighed(t *testing.T) {
	for _, f := range []Fault{
		{Kind: Kill, Target: "r1", Start: at(10), End: at(12)},
		{Kind: Pause, Target: "r1", Start: at(10), End: at(18)},
		{Kind: Partition, Target: "r1", Start: at(10), End: at(18)},
		{Kind: LeaderKill, Target: "m0", Start: at(10), End: at(14)},
		{Kind: QuorumLoss, Target: "m0,m1", Start: at(10), End: at(15)},
		{Kind: Wipe, Target: "m0,m1,m2", Start: at(10), End: at(19)},
		{Kind: ColdStart, Target: "all", Start: at(10), End: at(26)},
	} {
		sc := scenario()
		sc.Offsets = map[string]time.Duration{"r1": -2 * time.Second, "r2": 0, "r3": 2 * time.Second}
		quiet := quietAfter(f, sc.TTL, 4*time.Second)
		// Ticks due from the fault's start to the next fault.
		sc.From, sc.To = f.Start, f.End.Add(quiet)
		if f.Kind == QuorumLoss || f.Kind == Wipe || f.Kind == ColdStart {
			sc.Outages = []Window{{f.Start, f.End.Add(probeLag)}}
		}
		f.Led, f.LedKnown = []string{"tick", "slow"}, true
		sc.Faults = []Fault{f}
		var runs []Run
		for i := range int(sc.To.Sub(base)/time.Second) + 2 {
			runs = append(runs, run("tick", i, "r1", 10, float64(i)+0.02, float64(i)+0.3, Written))
		}
		rep := Check(runs, sc)
		if got := rep.Jobs[0].StrictShare(); got < minStrict {
			t.Errorf("%s: quiet %v after it leaves %.2f of the ticks strictly checked, want %.2f or more\n%s", f.Kind, quiet, got, minStrict, rep.Summary())
		}
	}
}

func TestCheckWeighsTheReplicasReportsAgainstTheLedger(t *testing.T) {
	// busy is r2's report that claim's tick found a run in progress when.
	busy := func(tick int, when float64) Skip {
		return Skip{Job: "claim", Tick: at(float64(tick)), Instance: "r2", At: at(when), Why: skipBusy}
	}
	heldUp := func(job string, ticks ...int) []Skip {
		var sks []Skip
		for _, tk := range ticks {
			sks = append(sks, Skip{Job: job, Tick: at(float64(tk)), Instance: "r2", At: at(float64(tk) + 1), Why: skipHeldUp})
		}
		return sks
	}
	for _, tc := range []struct {
		name      string
		runs      []Run
		skips     []Skip
		violation bool
		busy      int    // of the claim job, beyond the clean ledger's
		reason    string // the excuse of every missed tick, if any
	}{
		{
			name:  "a tick reported busy as a run was in progress is busy",
			runs:  without(clean(), "claim", 34, 34),
			skips: []Skip{busy(34, 33.1)},
			busy:  1,
		},
		{
			name:  "a tick reported busy within 3 s of a run's end is busy",
			runs:  without(clean(), "claim", 34, 35),
			skips: []Skip{busy(35, 36.1), busy(34, 34.1)},
			busy:  2,
		},
		{
			name:      "a tick reported busy long after the last run ended is missed",
			runs:      without(clean(), "claim", 34, 38),
			skips:     []Skip{busy(34, 33.5), busy(35, 34.5), busy(36, 35.5), busy(37, 36.1), busy(38, 37.5)},
			busy:      4,
			violation: true,
		},
		{
			name:      "a report of another tick excuses nothing",
			runs:      without(clean(), "claim", 34, 34),
			skips:     []Skip{busy(35, 33.1)},
			violation: true,
		},
		{
			name:   "a claim held up past the next tick is excused",
			runs:   without(clean(), "claim", 34, 35),
			skips:  heldUp("claim", 34, 35),
			reason: reasonHeldUp,
		},
		{
			name:      "more held-up claims than a loaded machine explains are a violation",
			runs:      without(clean(), "claim", 34, 37),
			skips:     heldUp("claim", 34, 35, 36, 37),
			violation: true,
		},
		{
			name:   "a Replace tick whose command was stopped before it reached the sink is excused",
			runs:   without(clean(), "replace", 34, 34),
			skips:  []Skip{{Job: "replace", Tick: at(34), Instance: "r2", At: at(35.01), Why: skipReplaced}},
			reason: reasonReplaced,
		},
		{
			name:      "a stopped command excuses nothing of a job that does not replace",
			runs:      without(clean(), "tick", 34, 34),
			skips:     []Skip{{Job: "tick", Tick: at(34), Instance: "r1", At: at(35.01), Why: skipReplaced}},
			violation: true,
		},
		{
			name:   "a Replace tick overtaken while the run it replaces ended is excused",
			runs:   without(clean(), "replace", 34, 34),
			skips:  []Skip{{Job: "replace", Tick: at(34), Instance: "r2", At: at(35.01), Why: skipOvertaken}},
			reason: reasonReplaced,
		},
		{
			name:      "an overtaken report excuses nothing of a job that does not replace",
			runs:      without(clean(), "tick", 34, 34),
			skips:     []Skip{{Job: "tick", Tick: at(34), Instance: "r1", At: at(35.01), Why: skipOvertaken}},
			violation: true,
		},
		{
			name:      "a held-up report excuses nothing in leader mode",
			runs:      without(clean(), "tick", 34, 34),
			skips:     heldUp("tick", 34),
			violation: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := scenario()
			sc.Skips = tc.skips
			rep := Check(tc.runs, sc)
			if got := len(rep.Violations) > 0; got != tc.violation {
				t.Fatalf("violations: %v, want %v\n%s", got, tc.violation, rep.Summary())
			}
			for _, j := range rep.Jobs {
				if j.Job == "claim" && j.Busy != tc.busy {
					t.Errorf("claim: busy %d, want %d\n%s", j.Busy, tc.busy, rep.Summary())
				}
				if tc.reason != "" && j.Missed != j.MissedBy[tc.reason] {
					t.Errorf("%s: missed %d, of which %d %s\n%s", j.Job, j.Missed, j.MissedBy[tc.reason], tc.reason, rep.Summary())
				}
			}
		})
	}
}

func TestParseSkipReadsCronxLogLines(t *testing.T) {
	line := `time=2026-12-02T12:40:09.420Z level=DEBUG msg="cronx: skipped: a later tick of the job came due while this one waited for etcd" job=claim tick=2026-12-02T12:40:06.000Z`
	sk, ok := parseSkip(line)
	want := Skip{Job: "claim", Tick: time.Date(2026, 12, 2, 12, 40, 6, 0, time.UTC), At: time.Date(2026, 12, 2, 12, 40, 9, 420e6, time.UTC), Why: skipHeldUp}
	if !ok || !sk.Tick.Equal(want.Tick) || !sk.At.Equal(want.At) || sk.Job != want.Job || sk.Why != want.Why {
		t.Errorf("parseSkip = %+v, %v; want %+v", sk, ok, want)
	}
	replaced := `time=2026-12-02T12:54:43.621Z level=WARN msg="baton crontab: stopping the command" job=replace tick=2026-12-02T12:54:42.000Z cause="cronx: run replaced by a later tick" grace=3s`
	if sk, ok := parseSkip(replaced); !ok || sk.Why != skipReplaced || sk.Job != "replace" || !sk.Tick.Equal(time.Date(2026, 12, 2, 12, 54, 42, 0, time.UTC)) {
		t.Errorf("parseSkip(%q) = %+v, %v; want replace's tick 12:54:42 replaced", replaced, sk, ok)
	}
	overtaken := `time=2026-12-05T15:06:30.112Z level=INFO msg="cronx: skipped: a later run was claimed while this one waited to start" job=replace tick=2026-12-05T15:06:29.000Z`
	if sk, ok := parseSkip(overtaken); !ok || sk.Why != skipOvertaken || sk.Job != "replace" || !sk.Tick.Equal(time.Date(2026, 12, 5, 15, 6, 29, 0, time.UTC)) {
		t.Errorf("parseSkip(%q) = %+v, %v; want replace's tick 15:06:29 overtaken", overtaken, sk, ok)
	}
	for _, l := range []string{
		`time=2026-12-02T12:54:43.621Z level=WARN msg="baton crontab: stopping the command" job=replace tick=2026-12-02T12:54:42.000Z cause="cronx: run timed out" grace=3s`,
		`time=2026-12-02T12:40:09.420Z level=DEBUG msg=run now=2026-12-02T12:40:10.000Z entry=1`,
		`time=2026-12-02T12:40:09.420Z level=INFO msg="cronx: skipped: paused" job=claim`,
		`level=INFO msg="cronx: skipped: paused" job=claim tick=2026-12-02T12:40:06.000Z`,
	} {
		if sk, ok := parseSkip(l); ok {
			t.Errorf("parseSkip(%q) = %+v, want no skip", l, sk)
		}
	}
}

func TestLogsAroundAViolationAreTheJobsReplicasLinesInItsSpan(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines ...string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("r1-claim.log",
		`time=2026-12-02T10:32:10.000Z level=DEBUG msg=run now=a`,
		`time=2026-12-02T10:32:15.100Z level=DEBUG msg=run now=b`,
		`time=2026-12-02T10:32:16.300Z level=INFO msg="cronx: skipped: a run is in progress" job=claim tick=2026-12-02T10:32:17.000Z`)
	write("r2-claim.log", `time=2026-12-02T10:32:15.900Z level=DEBUG msg=run now=c`, `not a log line`)
	write("r1-tick.log", `time=2026-12-02T10:32:15.500Z level=DEBUG msg=run now=d`)
	h := &harness{dir: dir, nodes: []*node{{id: "r1"}, {id: "r2"}}}
	v := Violation{Rule: "missed", Job: "claim", Span: Window{
		time.Date(2026, 12, 2, 10, 32, 15, 0, time.UTC), time.Date(2026, 12, 2, 10, 32, 17, 0, time.UTC)}}
	got := h.logsAround(v)
	want := []string{
		`r1 time=2026-12-02T10:32:15.100Z level=DEBUG msg=run now=b`,
		`r2 time=2026-12-02T10:32:15.900Z level=DEBUG msg=run now=c`,
		`r1 time=2026-12-02T10:32:16.300Z level=INFO msg="cronx: skipped: a run is in progress" job=claim tick=2026-12-02T10:32:17.000Z`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("logsAround:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if sks := h.skips(); len(sks) != 1 || sks[0].Instance != "r1" || sks[0].Why != skipBusy {
		t.Errorf("skips = %+v, want r1's one skip", sks)
	}
	if got := h.logsAround(Violation{Rule: "missed", Job: "claim"}); got != nil {
		t.Errorf("logsAround a violation without a span = %q, want nothing", got)
	}
}
