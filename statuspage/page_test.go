package statuspage

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// until polls cond until it holds or d passes.
func until(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(t *testing.T, h http.Handler, method string) (int, http.Header, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, "/", nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, rec.Result().Header, string(b)
}

// TestPageShowsLeaderJobsRunsAndPause: a page read from a live scheduler
// shows its leader, each job's schedule, a triggered run with its instance
// and outcome, and a pause, and reloads itself.
func TestPageShowsLeaderJobsRunsAndPause(t *testing.T) {
	t.Parallel()
	m := etcdtest.Shared(t)
	cli := m.Client(t)
	ran := make(chan struct{}, 4)
	c := cronx.New(cronx.WithEtcd(cli), cronx.WithName("web"),
		cronx.WithElection(election.WithPrefix("/app"), election.WithIdentity("web-1")))
	if _, err := c.AddJob("0 0 1 1 *", cronx.Named("report", cronx.FuncJob(func() { ran <- struct{}{} }))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddJob("@every 1h", cronx.Named("sweep", cronx.FuncJob(func() {}))); err != nil {
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
	if err := c.Trigger(ctx, "report"); err != nil {
		t.Fatal(err)
	}
	<-ran
	until(t, 10*time.Second, "the triggered run recorded", func() bool {
		st, _ := c.Status(ctx)
		return len(st.Jobs) == 2 && len(st.Jobs[0].History) == 1
	})
	if err := c.Pause(ctx, "sweep"); err != nil {
		t.Fatal(err)
	}

	page, err := New(cli, "/app", WithRefresh(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	code, hdr, body := get(t, page, http.MethodGet)
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Fatalf("GET: %d %q:\n%s", code, hdr.Get("Content-Type"), body)
	}
	for _, want := range []string{
		`<meta http-equiv="refresh" content="3">`,
		`<meta name="viewport"`,
		`led by <span class="leader">web-1</span> since`,
		`<tr class="job" data-job="report">`,
		`<code>0 0 1 1 *</code>`,
		`· web-1 · <span class="ok">ok</span>`,
		`· triggered</li>`,
		`<span class="paused">paused</span> by web-1`,
		`<tr class="election" data-election="web"><td>web</td><td class="leader">web-1</td>`,
		"in ", // the next tick, relative
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<script") {
		t.Errorf("page has a script:\n%s", body)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q lets scripts run or the page be framed", csp)
	}
	if code, _, body := get(t, page, http.MethodHead); code != http.StatusOK || body != "" {
		t.Errorf("HEAD: %d, body %q; want 200 and none", code, body)
	}
	if code, hdr, _ := get(t, page, http.MethodPost); code != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d, Allow %q; want 405, GET, HEAD", code, hdr.Get("Allow"))
	}
}

// TestPageEscapesWhatEtcdHolds: names, identities, specs and errors come
// from etcd, which anyone with access may write; the page shows them as
// text, never as markup.
func TestPageEscapesWhatEtcdHolds(t *testing.T) {
	t.Parallel()
	m := etcdtest.Shared(t)
	cli := m.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const evil = `<script>alert("x")</script>`
	for k, v := range map[string]string{
		"/baton/jobs/s/report/spec":    evil,
		"/baton/jobs/s/report/by/1":    evil, // a live replica has it
		"/baton/jobs/s/report/paused":  evil,
		"/baton/jobs/s/report/history": `[{"tick":"2026-01-01T00:00:00Z","instance":"<script>i</script>","start":"2026-01-01T00:00:01Z","duration":1000000,"error":"<script>e</script>"}]`,
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := concurrency.NewElection(sess, "/baton/election/s").Campaign(ctx, evil); err != nil {
		t.Fatal(err)
	}
	if err := concurrency.NewElection(sess, "/baton/election/<b>x</b>").Campaign(ctx, evil); err != nil {
		t.Fatal(err)
	}

	page, err := New(cli, "/baton")
	if err != nil {
		t.Fatal(err)
	}
	code, _, body := get(t, page, http.MethodGet)
	if code != http.StatusOK {
		t.Fatalf("GET: %d\n%s", code, body)
	}
	for _, raw := range []string{"<script", "<b>x</b>"} {
		if strings.Contains(body, raw) {
			t.Errorf("page has %q unescaped:\n%s", raw, body)
		}
	}
	for _, want := range []string{
		"led by <span class=\"leader\">" + html.EscapeString(evil),
		"<code>" + html.EscapeString(evil) + "</code>",
		"paused</span> by " + html.EscapeString(evil),
		"&lt;script&gt;i&lt;/script&gt;",
		"failed: &lt;script&gt;e&lt;/script&gt;",
		"<td>&lt;b&gt;x&lt;/b&gt;</td>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q:\n%s", want, body)
		}
	}
}

// TestPageSaysEtcdIsDown: with etcd down the page answers 503 with the
// error within its timeout, and keeps reloading.
func TestPageSaysEtcdIsDown(t *testing.T) {
	t.Parallel()
	m := etcdtest.Start(t)
	cli := m.Client(t)
	page, err := New(cli, "/baton", WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m.Stop()
	start := time.Now()
	code, _, body := get(t, page, http.MethodGet)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `id="error">etcd could not be read: `) ||
		!strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("GET with etcd down: %d:\n%s", code, body)
	}
	// Between the 1s asked for and the default: the option is what ended
	// the wait, with room for a loaded machine's pauses.
	if d := time.Since(start); d >= DefaultTimeout-time.Second {
		t.Errorf("GET with etcd down took %v; want about the 1s timeout, not the default %v", d, DefaultTimeout)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	m := etcdtest.Shared(t)
	cli := m.Client(t)
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"negative refresh", []Option{WithRefresh(-time.Second)}, "refresh -1s is negative"},
		{"fractional refresh", []Option{WithRefresh(1500 * time.Millisecond)}, "refresh 1.5s is not a whole number of seconds"},
		{"zero timeout", []Option{WithTimeout(0)}, "timeout 0s must be positive"},
	} {
		if _, err := New(cli, "", tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(nil, ""); err == nil {
		t.Error("New(nil client): no error")
	}
	if _, err := New(cli, "/trailing/"); err == nil || !strings.Contains(err.Error(), `"/trailing/"`) {
		t.Errorf("New with prefix /trailing/: %v; want an error naming it", err)
	}
}
