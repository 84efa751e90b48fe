package statuspage

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

// TestPageShowsOutcomesAndWhyAJobPausedItself: the page and the text show
// a job's last success, and of a job that paused itself after a failure
// (WithPauseAfter) its last failure, its failures in a row and why it
// paused.
func TestPageShowsOutcomesAndWhyAJobPausedItself(t *testing.T) {
	t.Parallel()
	m := etcdtest.Shared(t)
	cli := m.Client(t)
	c := cronx.New(cronx.WithEtcd(cli), cronx.WithName("web"),
		cronx.WithElection(election.WithPrefix("/app"), election.WithIdentity("web-1")))
	fail := cronx.ContextFunc(func(context.Context) error { return errors.New("exit status 3") })
	if _, err := c.AddJob("0 0 1 1 *", cronx.Named("report", fail, cronx.WithPauseAfter(1))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddJob("0 0 1 1 *", cronx.Named("sweep", cronx.FuncJob(func() {}))); err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	until(t, 10*time.Second, "web-1 leads and published both jobs", func() bool {
		st, err := c.Status(ctx)
		return err == nil && st.Leader.Identity == "web-1" && len(st.Jobs) == 2
	})
	for _, job := range []string{"report", "sweep"} {
		if err := c.Trigger(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	until(t, 10*time.Second, "both runs recorded, report paused", func() bool {
		st, _ := c.Status(ctx)
		return len(st.Jobs) == 2 && st.Jobs[0].Paused && !st.Jobs[1].LastSuccess.IsZero()
	})

	page, err := New(cli, "/app")
	if err != nil {
		t.Fatal(err)
	}
	_, _, body := get(t, page, http.MethodGet)
	report, sweep, _ := strings.Cut(body, `data-job="sweep"`)
	for _, want := range []string{
		`<span class="paused">paused</span> by web-1<br><span class="paused-reason">1 consecutive failures; the last: exit status 3</span>`,
		`last success <span class="none">never</span>`,
		`<span class="failed">1 in a row</span>`,
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report's row lacks %q:\n%s", want, report)
		}
	}
	if !strings.Contains(sweep, `<span class="last-success">last success 20`) || strings.Contains(sweep, "last-failure") {
		t.Errorf("sweep's row lacks its last success, or shows a failure:\n%s", sweep)
	}

	snap, err := Read(ctx, cli, "/app", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := snap.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	var header, row string
	for _, l := range strings.Split(text.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "SCHEDULER"):
			header = l
		case strings.HasPrefix(l, "web ") && strings.Contains(l, "report"):
			row = l
		}
	}
	if !strings.Contains(header, "LAST SUCCESS") || !strings.Contains(header, "LAST FAILURE") ||
		!strings.Contains(row, "yes (web-1: 1 consecutive failures; the last: exit status 3)") {
		t.Errorf("text:\n%s", text.String())
	}
	col, cells := len([]rune(header[:max(strings.Index(header, "FAILURES"), 0)])), []rune(row)
	if col == 0 || col >= len(cells) || !strings.HasPrefix(string(cells[col:]), "1 ") {
		t.Errorf("report's FAILURES column is not 1:\n%s\n%s", header, row)
	}
}
