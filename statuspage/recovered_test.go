package statuspage

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestRecoveredRunIsMarked: a run again of a tick whose runner died is
// marked so on the page's runs and in baton status's last run.
func TestRecoveredRunIsMarked(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	run := Run{Tick: now.Add(-time.Minute), Instance: "web-2", Start: now.Add(-30 * time.Second), DurationSeconds: 2, Recovered: 1}
	snap := &Snapshot{Prefix: "/baton", Schedulers: []Scheduler{{Name: "crontab", Jobs: []Job{
		{Name: "report", Spec: "@hourly", LastTick: run.Tick, LastBy: "web-1", LastRun: &run, History: []Run{run}},
	}}}}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, view{Prefix: "/baton", At: now, Snapshot: snap}); err != nil {
		t.Fatal(err)
	}
	if want := `<span class="recovered">recovered 1</span>`; !strings.Contains(buf.String(), want) {
		t.Errorf("the page's runs lack %q:\n%s", want, buf.String())
	}
	if _, _, result := lastRun(snap.Schedulers[0].Jobs[0]); !strings.HasSuffix(result, " (recovered 1)") {
		t.Errorf("baton status's last run: %q, want it marked recovered", result)
	}
}
