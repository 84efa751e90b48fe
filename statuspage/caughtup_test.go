package statuspage

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestACaughtUpRunIsShownAsSuch: a run of a tick missed while nobody ran
// the job, run late within its catch-up window, says so on the page and in
// baton status's tables; a run on time does not.
func TestACaughtUpRunIsShownAsSuch(t *testing.T) {
	t.Parallel()
	tick := time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)
	late := Run{Tick: tick, Instance: "web-1", Start: tick.Add(90 * time.Minute), CaughtUp: true}
	ontime := Run{Tick: tick, Instance: "web-1", Start: tick}
	snap := &Snapshot{Prefix: "/baton", Schedulers: []Scheduler{{Name: "crontab", Jobs: []Job{
		{Name: "late", Spec: "0 2 * * *", LastTick: tick, LastRun: &late, History: []Run{late}},
		{Name: "ontime", Spec: "0 2 * * *", LastTick: tick, LastRun: &ontime, History: []Run{ontime}},
	}}}}
	var page bytes.Buffer
	if err := pageTemplate.Execute(&page, view{Prefix: "/baton", At: tick.Add(2 * time.Hour), Snapshot: snap}); err != nil {
		t.Fatal(err)
	}
	body := page.String()
	lateRow, ontimeRow := body[strings.Index(body, `data-job="late"`):strings.Index(body, `data-job="ontime"`)], body[strings.Index(body, `data-job="ontime"`):]
	if !strings.Contains(lateRow, " late · caught up</li>") || strings.Contains(ontimeRow, "caught up") {
		t.Errorf("the page's rows:\nlate: %s\nontime: %s", lateRow, ontimeRow)
	}
	var text bytes.Buffer
	if err := snap.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(text.String(), "(caught up)"); n != 1 {
		t.Errorf("baton status shows %d runs caught up, want 1:\n%s", n, text.String())
	}
}
