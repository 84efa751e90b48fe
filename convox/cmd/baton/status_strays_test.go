package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestStatusSkipsAndNamesStrayKeys: a key under P/jobs/ that no scheduler
// wrote (a scheduler name with a space or a '<', put with etcdctl) used to
// make baton status fail for the whole prefix; it shows every scheduler's
// jobs and names the keys it ignored, as tables and as JSON.
func TestStatusSkipsAndNamesStrayKeys(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, map[string]string{"report": "0 0 0 1 1 *"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, k := range []string{"/baton/jobs/my scheduler/x/spec", "/baton/jobs/<b>/x/spec"} {
		if _, err := s.cli.Put(ctx, k, "@hourly"); err != nil {
			t.Fatal(err)
		}
	}
	out := s.baton(exitOK, "status")
	line(t, out, "crontab", "report")
	for _, want := range []string{
		`ignored key "` + s.srv.BatonPrefix("/baton") + `/jobs/<b>/x/spec": scheduler name "<b>": use letters`,
		`ignored key "` + s.srv.BatonPrefix("/baton") + `/jobs/my scheduler/x/spec": scheduler name "my scheduler": use letters`,
	} {
		if !strings.Contains(out, "\n"+want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	var doc struct {
		Schedulers []struct{ Name string } `json:"schedulers"`
		Ignored    []struct {
			Key  string `json:"key"`
			Keys int    `json:"keys"`
			Why  string `json:"why"`
		} `json:"ignored_keys"`
	}
	js := s.baton(exitOK, "status", "--json")
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("--json: %v:\n%s", err, js)
	}
	if len(doc.Schedulers) != 1 || doc.Schedulers[0].Name != "crontab" || len(doc.Ignored) != 2 ||
		!strings.HasSuffix(doc.Ignored[1].Key, "/jobs/my scheduler/x/spec") || doc.Ignored[1].Keys != 1 ||
		!strings.Contains(doc.Ignored[1].Why, `"my scheduler"`) {
		t.Errorf("--json: schedulers %+v, ignored_keys %+v; want crontab, and both keys named:\n%s", doc.Schedulers, doc.Ignored, js)
	}
}
