package statuspage

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestPageAndTextShowABackfillInProgress: a backfill in progress is shown
// with its ticks done of its ticks, on the page and in the text; its runs
// say they are a backfill's, not how late they were.
func TestPageAndTextShowABackfillInProgress(t *testing.T) {
	t.Parallel()
	m := etcdtest.Shared(t)
	cli := m.Client(t)
	c := cronx.New(cronx.WithEtcd(cli), cronx.WithName("web"),
		cronx.WithElection(election.WithPrefix("/bfpage"), election.WithIdentity("web-1")))
	release := make(chan struct{})
	runs := make(chan struct{}, 8)
	job := cronx.ContextFunc(func(context.Context) error {
		runs <- struct{}{}
		<-release
		return nil
	})
	if _, err := c.AddJob("0 * * * *", cronx.Named("report", job)); err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	until(t, 10*time.Second, "web-1 leads and published report", func() bool {
		st, err := c.Status(ctx)
		return err == nil && st.Leader.Identity == "web-1" && len(st.Jobs) == 1
	})
	to := time.Now().Truncate(time.Hour)
	if _, err := c.Backfill(ctx, "report", to.Add(-3*time.Hour), to, 0); err != nil {
		t.Fatal(err)
	}
	<-runs // the first tick runs, and waits

	page, err := New(cli, "/bfpage")
	if err != nil {
		t.Fatal(err)
	}
	_, _, body := get(t, page, http.MethodGet)
	if want := `<span class="backfill">backfill 1/3 of `; !strings.Contains(body, want) {
		t.Errorf("the page lacks %q:\n%s", want, body)
	}
	snap, err := Read(ctx, cli, "/bfpage", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := snap.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if want := "backfill web/report: 1/3 ticks of "; !strings.Contains(text.String(), want) {
		t.Errorf("the text lacks %q:\n%s", want, text.String())
	}

	close(release)
	until(t, 10*time.Second, "the backfill finished and its runs recorded", func() bool {
		st, _ := c.Status(ctx)
		return len(st.Jobs) == 1 && len(st.Jobs[0].History) == 3 && len(st.Jobs[0].Backfills) == 1 && st.Jobs[0].Backfills[0].Finished
	})
	_, _, body = get(t, page, http.MethodGet)
	if strings.Contains(body, `class="backfill"`) || strings.Count(body, " · backfill</li>") != 3 {
		t.Errorf("the page of a finished backfill shows it in progress, or not its three runs as a backfill's:\n%s", body)
	}
}
