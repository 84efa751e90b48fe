package ledger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

func at(sec int, ms int) time.Time {
	return t0.Add(time.Duration(sec)*time.Second + time.Duration(ms)*time.Millisecond)
}

// run is a run of tick sec by instance, starting ms after the tick and
// lasting 100ms; ms < 0 leaves the end unknown.
func run(instance string, sec, ms int) Run {
	r := Run{Job: "tick", Tick: at(sec, 0), Instance: instance, Start: at(sec, max(ms, 0))}
	if ms >= 0 {
		r.End = r.Start.Add(100 * time.Millisecond)
	}
	return r
}

func TestTally(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		runs                    []Run
		fault                   *Fault
		dups, extra, missed, ov int
		recovery                time.Duration
		by                      string
	}{
		{
			name:     "one run per tick",
			runs:     []Run{run("a", 0, 5), run("a", 1, 5), run("a", 2, 5), run("a", 3, 5)},
			recovery: -1,
		},
		{
			name:     "a skewed replica runs every tick again",
			runs:     []Run{run("a", 0, 5), run("b", 0, 205), run("c", 0, 405), run("a", 1, 5), run("a", 2, 5), run("b", 2, 205), run("a", 3, 5)},
			dups:     2,
			extra:    3,
			recovery: -1,
		},
		{
			name:     "a crash leaves a gap; the next run is the recovery",
			runs:     []Run{run("a", 0, 5), run("b", 3, 5)},
			fault:    &Fault{At: at(0, 50), Instance: "a"},
			missed:   2,
			recovery: 2955 * time.Millisecond,
			by:       "b",
		},
		{
			name:     "only the faulted replica ran again",
			runs:     []Run{run("a", 0, 5), run("a", 3, 5)},
			fault:    &Fault{At: at(0, 50), Instance: "a"},
			missed:   2,
			recovery: 2955 * time.Millisecond,
			by:       "a",
		},
		{
			name: "a paused run still going when another starts overlaps",
			runs: []Run{
				{Job: "tick", Tick: at(0, 0), Instance: "a", Start: at(0, 5), End: at(2, 500)},
				run("b", 1, 5), run("b", 2, 5), run("b", 3, 5),
			},
			ov:       1,
			recovery: -1,
		},
		{
			name:     "a killed run with no end overlaps nothing",
			runs:     []Run{run("a", 0, -1), run("b", 0, 50), run("a", 1, 5), run("a", 2, 5), run("a", 3, 5)},
			dups:     1,
			extra:    1,
			recovery: -1,
		},
		{
			name:     "ticks outside the window and other jobs do not count",
			runs:     []Run{run("a", -1, 5), run("a", 0, 5), run("a", 1, 5), run("a", 2, 5), run("a", 3, 5), run("a", 4, 5), {Job: "other", Tick: at(1, 0), Instance: "a", Start: at(1, 0)}},
			recovery: -1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Tally(tc.runs, "tick", at(0, 0), at(3, 0), time.Second, tc.fault)
			if c.Ticks != 4 {
				t.Errorf("ticks = %d, want 4", c.Ticks)
			}
			if c.Duplicates != tc.dups || c.Extra != tc.extra || c.Missed != tc.missed || c.Overlaps != tc.ov {
				t.Errorf("duplicates %d, extra %d, missed %d, overlaps %d; want %d, %d, %d, %d",
					c.Duplicates, c.Extra, c.Missed, c.Overlaps, tc.dups, tc.extra, tc.missed, tc.ov)
			}
			if c.Recovery != tc.recovery || c.RecoveredBy != tc.by {
				t.Errorf("recovery %v by %q, want %v by %q", c.Recovery, c.RecoveredBy, tc.recovery, tc.by)
			}
		})
	}
}

func TestReadMergesStartAndEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	a := run("a", 0, 5)
	b := run("b", 1, 5)
	aStart, bStart := a, b
	aStart.End, bStart.End = time.Time{}, time.Time{}
	var lines string
	for _, r := range []Run{aStart, bStart, a} { // b never ended
		lines += r.line()
	}
	lines += "tick 2026-01-02T03:04:09Z c 0 1" // a partial line: a write in progress
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("read %d runs, want 2: %+v", len(runs), runs)
	}
	if !runs[0].End.Equal(a.End) || runs[0].Instance != "a" {
		t.Errorf("run a = %+v, want its end %v", runs[0], a.End)
	}
	if !runs[1].End.IsZero() || runs[1].Instance != "b" {
		t.Errorf("run b = %+v, want no end", runs[1])
	}
}

func TestTailReportsEachStartOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	tl := NewTail(path)
	if runs, err := tl.Next(); err != nil || len(runs) != 0 {
		t.Fatalf("missing ledger: %v, %v; want nothing", runs, err)
	}
	if err := Do(path, "tick", at(0, 300), "a", 7, 0); err != nil {
		t.Fatal(err)
	}
	runs, err := tl.Next()
	if err != nil || len(runs) != 1 || runs[0].Instance != "a" || runs[0].Fence != 7 || !runs[0].Tick.Equal(at(0, 0)) {
		t.Fatalf("after one run: %+v, %v; want one start of a, fence 7, tick truncated to %v", runs, err, at(0, 0))
	}
	if runs, err := tl.Next(); err != nil || len(runs) != 0 {
		t.Fatalf("nothing new: %+v, %v; want nothing", runs, err)
	}
}

func TestParseNamesTheBadLine(t *testing.T) {
	_, _, err := parse(strings.NewReader("tick 2026-01-02T03:04:00Z a 0 1 0\ntick yesterday a 0 1 0\n"), "L")
	if err == nil || !strings.Contains(err.Error(), "L:2") || !strings.Contains(err.Error(), "yesterday") {
		t.Fatalf("err = %v, want one naming L:2 and the bad tick", err)
	}
}
