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

// TestPageShowsTheReleaseThatRanAJobAtStart: the page, the text and the
// JSON of a job that runs at start name the release whose start ran it.
func TestPageShowsTheReleaseThatRanAJobAtStart(t *testing.T) {
	t.Parallel()
	m := etcdtest.Shared(t)
	cli := m.Client(t)
	ran := make(chan struct{}, 1)
	c := cronx.New(cronx.WithEtcd(cli), cronx.WithName("web"), cronx.WithRelease("RABC"),
		cronx.WithElection(election.WithPrefix("/app"), election.WithIdentity("web-1")))
	if _, err := c.AddJob("0 0 1 1 *", cronx.Named("migrate", cronx.FuncJob(func() { ran <- struct{}{} }), cronx.WithRunAtStart())); err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
	select {
	case <-ran:
	case <-time.After(15 * time.Second):
		t.Fatal("no run at start within 15s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	until(t, 10*time.Second, "the run at start recorded", func() bool {
		st, err := c.Status(ctx)
		return err == nil && len(st.Jobs) == 1 && len(st.Jobs[0].History) == 1 && len(st.Jobs[0].Started) == 1
	})
	page, err := New(cli, "/app")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, body := get(t, page, http.MethodGet); !strings.Contains(body, `<span class="started">ran at start of RABC</span>`) {
		t.Errorf("the page does not name the release:\n%s", body)
	}
	snap, err := Read(ctx, cli, "/app", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if j := snap.Schedulers[0].Jobs[0]; len(j.Started) != 1 || j.Started[0] != "RABC" {
		t.Errorf("snapshot's job %+v, want started by RABC", j)
	}
	var text strings.Builder
	if err := snap.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "0 0 1 1 * (ran at start of RABC)") {
		t.Errorf("text:\n%s", text.String())
	}
}
