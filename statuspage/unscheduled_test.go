package statuspage

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestPageListsTheJobsWhenNoReplicaRuns: once every replica has stopped,
// the page, the text and the JSON still list each job, with its spec and
// last runs, marked as not scheduled by anyone since the last stop; a job
// that a deploy dropped is not listed.
func TestPageListsTheJobsWhenNoReplicaRuns(t *testing.T) {
	t.Parallel()
	m := etcdtest.Shared(t)
	cli := m.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	replica := func(id string, jobs ...string) *cronx.Cron {
		c := cronx.New(cronx.WithEtcd(cli), cronx.WithName("web"),
			cronx.WithElection(election.WithPrefix("/app"), election.WithIdentity(id)))
		for _, j := range jobs {
			if _, err := c.AddJob("0 0 1 1 *", cronx.Named(j, cronx.FuncJob(func() {}))); err != nil {
				t.Fatal(err)
			}
		}
		c.Start()
		// Its jobs, registered: while none is, Status lists the roster's.
		until(t, 10*time.Second, id+" leads and registered its jobs", func() bool {
			st, err := c.Status(ctx)
			if err != nil || st.Leader.Identity != id || len(st.Jobs) != len(jobs) {
				return false
			}
			for _, j := range st.Jobs {
				if !slices.Contains(jobs, j.Name) || !j.NotScheduledSince.IsZero() {
					return false
				}
			}
			return true
		})
		return c
	}
	old := replica("web-1", "report", "dropped")
	<-old.Stop().Done()
	c := replica("web-2", "report", "sweep")
	if err := c.Trigger(ctx, "report"); err != nil {
		t.Fatal(err)
	}
	until(t, 10*time.Second, "report's run recorded", func() bool {
		st, _ := c.Status(ctx)
		return len(st.Jobs) == 2 && len(st.Jobs[0].History) == 1
	})
	before := time.Now()
	<-c.Stop().Done()

	page, err := New(cli, "/app")
	if err != nil {
		t.Fatal(err)
	}
	_, _, body := get(t, page, http.MethodGet)
	if strings.Contains(body, `data-job="dropped"`) {
		t.Errorf("the page lists the dropped job:\n%s", body)
	}
	for _, job := range []string{"report", "sweep"} {
		_, row, ok := strings.Cut(body, `data-job="`+job+`"`)
		row, _, _ = strings.Cut(row, "</tr>")
		if !ok || !strings.Contains(row, `<span class="unscheduled">not scheduled by anyone since `) || !strings.Contains(row, "<code>0 0 1 1 *</code>") {
			t.Errorf("%s's row lacks its spec or the mark:\n%s", job, row)
		}
		if job == "report" && !strings.Contains(row, "web-2 · <span class=\"ok\">ok</span>") {
			t.Errorf("report's row lacks its last run:\n%s", row)
		}
	}
	snap, err := Read(ctx, cli, "/app", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	jobs := snap.Schedulers[0].Jobs
	if len(jobs) != 2 || jobs[0].Name != "report" || jobs[1].Name != "sweep" || jobs[0].NotScheduledSince.Before(before) {
		t.Fatalf("snapshot's jobs %+v, want report and sweep, not scheduled since web-2 stopped", jobs)
	}
	var text strings.Builder
	if err := snap.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(text.String(), "not scheduled by anyone since "+local(jobs[0].NotScheduledSince)); n != 2 || strings.Contains(text.String(), "dropped") {
		t.Errorf("text, want report and sweep marked, and no dropped:\n%s", text.String())
	}
}
