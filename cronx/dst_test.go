package cronx

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("zone data for %s: %v", name, err)
	}
	return loc
}

// ticksOf returns the ticks of s in (from, to], in UTC.
func ticksOf(s Schedule, from, to time.Time) []string {
	var out []string
	for t := s.Next(from); !t.IsZero() && !t.After(to); t = s.Next(t) {
		out = append(out, t.UTC().Format("01-02 15:04"))
	}
	return out
}

// TestDSTOnceOnTransitionNights checks the rule's ticks on real zone data:
// the nights Europe/Berlin and America/New_York go forward and back in
// 2026, beside robfig's own ticks, which the default keeps.
func TestDSTOnceOnTransitionNights(t *testing.T) {
	t.Parallel()
	berlin, newYork := mustZone(t, "Europe/Berlin"), mustZone(t, "America/New_York")
	for _, tc := range []struct {
		name       string
		spec       string
		loc        *time.Location
		from, to   time.Time
		robfig     []string
		once       []string
		sameAsSpec bool
	}{
		{
			name: "Berlin forward: 02:30 is skipped, runs at 03:00", spec: "30 2 * * *", loc: berlin,
			from: time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC), to: time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC),
			robfig: []string{"03-30 00:30"},
			once:   []string{"03-29 01:00", "03-30 00:30"},
		},
		{
			name: "Berlin forward: two skipped times run once", spec: "15,45 2 * * *", loc: berlin,
			from: time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC), to: time.Date(2026, 3, 29, 12, 0, 0, 0, time.UTC),
			robfig: nil,
			once:   []string{"03-29 01:00"},
		},
		{
			name: "Berlin back: 02:30 occurs twice, runs once", spec: "30 2 * * *", loc: berlin,
			from: time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC), to: time.Date(2026, 10, 26, 12, 0, 0, 0, time.UTC),
			robfig: []string{"10-25 00:30", "10-25 01:30", "10-26 01:30"},
			once:   []string{"10-25 00:30", "10-26 01:30"},
		},
		{
			name: "Berlin back: asked from the repeated hour's second pass", spec: "30 2 * * *", loc: berlin,
			from: time.Date(2026, 10, 25, 1, 10, 0, 0, time.UTC), to: time.Date(2026, 10, 26, 12, 0, 0, 0, time.UTC),
			robfig: []string{"10-25 01:30", "10-26 01:30"},
			once:   []string{"10-26 01:30"},
		},
		{
			name: "New York forward: 02:30 runs at 03:00", spec: "30 2 * * *", loc: newYork,
			from: time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC), to: time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC),
			robfig: []string{"03-09 06:30"},
			once:   []string{"03-08 07:00", "03-09 06:30"},
		},
		{
			name: "New York back: 01:30 runs once", spec: "30 1 * * *", loc: newYork,
			from: time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC), to: time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC),
			robfig: []string{"11-01 05:30", "11-01 06:30", "11-02 06:30"},
			once:   []string{"11-01 05:30", "11-02 06:30"},
		},
		{
			name: "every hour keeps real hours", spec: "30 * * * *", loc: berlin, sameAsSpec: true,
			from: time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), to: time.Date(2026, 10, 25, 2, 0, 0, 0, time.UTC),
			robfig: []string{"10-25 00:30", "10-25 01:30"},
			once:   []string{"10-25 00:30", "10-25 01:30"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseStandard("CRON_TZ=" + tc.loc.String() + " " + tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := ticksOf(s, tc.from, tc.to); !slices.Equal(got, tc.robfig) {
				t.Errorf("robfig's ticks %v, want %v", got, tc.robfig)
			}
			once := withDST(s, DSTOnce)
			if got := ticksOf(once, tc.from, tc.to); !slices.Equal(got, tc.once) {
				t.Errorf("DSTOnce ticks %v, want %v", got, tc.once)
			}
			if (once == s) != tc.sameAsSpec {
				t.Errorf("DSTOnce wrapped the schedule: %v, want %v", once != s, !tc.sameAsSpec)
			}
			// The spec in the Cron's zone, with no CRON_TZ, ticks alike.
			local, err := ParseStandard(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := ticksOf(withDST(withLocation(local), DSTOnce), tc.from.In(tc.loc), tc.to.In(tc.loc)); !slices.Equal(got, tc.once) {
				t.Errorf("in the Cron's zone, DSTOnce ticks %v, want %v", got, tc.once)
			}
		})
	}
}

// TestDSTOnceAcrossReplicas runs the Berlin transition nights on three
// replicas in claim mode, where each replica computes every tick itself:
// under DSTOnce the skipped 02:30 runs once at 03:00 and the doubled 02:30
// once, under one tick name in the whole cluster; the default job beside
// it keeps robfig's rule.
func TestDSTOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, night := range []struct {
		name         string
		start, end   time.Time
		once, robfig []string
	}{
		{"forward", time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC), time.Date(2026, 3, 29, 3, 0, 0, 0, time.UTC),
			[]string{"03-29 01:00"}, nil},
		{"back", time.Date(2026, 10, 24, 23, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 3, 0, 0, 0, time.UTC),
			[]string{"10-25 00:30"}, []string{"10-25 00:30", "10-25 01:30"}},
	} {
		t.Run(night.name, func(t *testing.T) {
			var mu sync.Mutex
			ran := map[string][]string{} // job → ticks
			by := map[string]string{}    // job tick → instance
			job := func(ctx context.Context) error {
				info, _ := InfoFrom(ctx)
				k := info.Job + " " + info.Tick.UTC().Format("01-02 15:04")
				mu.Lock()
				defer mu.Unlock()
				if prev, ok := by[k]; ok {
					t.Errorf("%s ran twice, on %s and %s", k, prev, info.Instance)
				}
				by[k] = info.Instance
				ran[info.Job] = append(ran[info.Job], info.Tick.UTC().Format("01-02 15:04"))
				return nil
			}
			pc := newPolicyCluster(t, "dst", night.start, ClaimMode, func(id string, c *Cron) {
				mustAdd(t, c, "CRON_TZ=Europe/Berlin 30 2 * * *", Named("once", ContextFunc(job), WithDST(DSTOnce)))
				mustAdd(t, c, "CRON_TZ=Europe/Berlin 30 2 * * *", Named("robfig", ContextFunc(job)))
			})
			pc.ready(night.end)
			pc.stepUntil(night.end)
			want := map[string][]string{"once": night.once, "robfig": night.robfig}
			until := time.Now().Add(10 * time.Second)
			for {
				mu.Lock()
				got := fmt.Sprint(ran["once"], ran["robfig"])
				mu.Unlock()
				if got == fmt.Sprint(want["once"], want["robfig"]) {
					break
				}
				if time.Now().After(until) {
					t.Fatalf("runs (once, robfig) %s, want %v %v", got, want["once"], want["robfig"])
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// stepUntil moves every replica's clock from one wake-up to the next until
// end, waiting at each for every replica to arm its next timer and for the
// tick's runs to end.
func (pc *policyCluster) stepUntil(end time.Time) {
	pc.t.Helper()
	for {
		var due time.Time
		for _, f := range pc.fakes {
			if !f.WaitTimers(1, 10*time.Second) {
				pc.t.Fatal("a replica armed no timer within 10s")
			}
			if d, ok := f.NextDue(); ok && (due.IsZero() || d.Before(due)) {
				due = d
			}
		}
		if due.After(end) {
			return
		}
		pc.set(due)
		// Each replica re-arms past due once it has fired.
		deadline := time.Now().Add(10 * time.Second)
		for _, f := range pc.fakes {
			for {
				if d, ok := f.NextDue(); ok && d.After(due) {
					break
				}
				if time.Now().After(deadline) {
					pc.t.Fatalf("a replica did not re-arm after %v", due)
				}
				time.Sleep(time.Millisecond)
			}
		}
		// Then every claim and run of the tick ends, as it would before
		// the next tick on a real clock.
		for _, c := range pc.crons {
			select {
			case <-c.runs.idle().Done():
			case <-time.After(10 * time.Second):
				pc.t.Fatalf("the runs of %v did not end within 10s", due)
			}
		}
	}
}

func TestDSTOptionErrors(t *testing.T) {
	t.Parallel()
	_, err := New().AddJob("* * * * *", Named("report", FuncJob(func() {}), WithDST(DST(7))))
	if err == nil || !strings.Contains(err.Error(), `job "report"`) || !strings.Contains(err.Error(), "WithDST(7)") {
		t.Errorf("WithDST(7): %v, want an error naming the job and the option", err)
	}
}
