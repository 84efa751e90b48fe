package browser

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/testbin"
	"github.com/chromedp/chromedp"
)

// chromium finds the browser, or fails the test: a browser test that
// skips when the browser is missing proves nothing in CI.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("BATON_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH (apt-get install chromium), and BATON_CHROMIUM is not set")
	return ""
}

// buildBaton returns the baton command, as the main module's tests build it
// (testbin).
func buildBaton(t *testing.T) string {
	t.Helper()
	bin, err := testbin.Path(testbin.Build{Pkg: "./convox/cmd/baton"})
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// replica is one `baton crontab --http` process.
type replica struct {
	id   string
	cmd  *exec.Cmd
	out  *syncBuffer
	url  string
	done chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var servingAddr = regexp.MustCompile(`msg="baton: serving /metrics, /healthz, /readyz and the status page" addr=(\S+)`)

func startReplica(t *testing.T, bin, id string, env []string, args ...string) *replica {
	t.Helper()
	r := &replica{id: id, out: &syncBuffer{}, done: make(chan struct{})}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "BATON_ID=" + id}, env...)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			r.cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", id, r.out.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := servingAddr.FindStringSubmatch(r.out.String()); m != nil {
			r.url = "http://" + m[1] + "/"
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not say where it serves:\n%s", id, r.out.String())
		}
		select {
		case <-r.done:
			t.Fatalf("%s exited:\n%s", id, r.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// text reads the text of the first node matching sel in the page as it is
// now, without navigating: the page reloads itself. While it reloads the
// node may be missing for a moment, so a read is retried until d passes.
func waitText(t *testing.T, ctx context.Context, sel, what string, d time.Duration, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(d)
	var last string
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		s, err := chromedp.Run(rctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
		cancel()
		if err == nil {
			last = s
			if ok(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
			t.Fatalf("after %v: %s; %s reads %q; the page:\n%s", d, what, sel, last, html)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitEval evaluates js, an expression of a string, in the page as it is
// now until ok accepts its value or d passes; the page reloads itself, so
// a node may be missing for a moment.
func waitEval(t *testing.T, ctx context.Context, js, what string, d time.Duration, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(d)
	var last string
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		s, err := chromedp.Run(rctx, chromedp.Evaluate[string](js))
		cancel()
		if err == nil {
			last = s
			if ok(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
			t.Fatalf("after %v: %s; %s is %q; the page:\n%s", d, what, js, last, html)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stripTitles is the expression of the hover texts (the <title>s) of the
// shapes of class cls in job's strip, one a line.
func stripTitles(job, cls string) string {
	return `Array.from(document.querySelectorAll('tr[data-job="` + job + `"] .day svg.strip rect.strip-` + cls + ` > title')).map(n => n.textContent).join("\n")`
}

// TestStatusPageInABrowser: three replicas of a crontab on one etcd; the
// page of one of them shows the jobs, a new run without anyone reloading
// it, the next leader after the leader's SIGTERM, and a pause with the
// ticks it keeps from running; each job's strip of its last day marks its
// runs, ok and failed, and the hour of its paused ticks, with the details
// in each shape's hover text.
func TestStatusPageInABrowser(t *testing.T) {
	browserPath := chromium(t)
	dir := t.TempDir()
	bin := buildBaton(t)
	etcd := etcdtest.Start(t)
	tab := filepath.Join(dir, "crontab")
	os.WriteFile(tab, []byte("tick: */2 * * * * * echo tick\nreport: 0 0 3 * * * echo report\nflaky: */3 * * * * * exit 3\n"), 0o644)
	env := []string{"BATON_ETCD_ENDPOINTS=" + etcd.Endpoint(), "TZ=UTC"}

	replicas := map[string]*replica{}
	for _, id := range []string{"web-1", "web-2", "web-3"} {
		replicas[id] = startReplica(t, bin, id, env, "crontab", "--seconds", "--ttl", "2", "--http", "127.0.0.1:0", tab)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath),
		chromedp.NoSandbox, // the test may run as root, as CI does
		chromedp.DisableGPU,
		chromedp.WindowSize(1100, 720),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	// Who leads decides which replica's page to watch: not the leader's,
	// which is about to stop.
	if err := chromedp.Do(ctx, chromedp.Navigate(replicas["web-1"].url)); err != nil {
		t.Fatalf("open %s: %v", replicas["web-1"].url, err)
	}
	leader := waitText(t, ctx, `section[data-scheduler="crontab"] .leader`, "a leader shown", 30*time.Second,
		func(s string) bool { return replicas[s] != nil })
	watched := "web-1"
	if leader == watched {
		watched = "web-2"
		if err := chromedp.Do(ctx, chromedp.Navigate(replicas[watched].url)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s leads; watching %s's page", leader, watched)

	// The jobs, with their schedules.
	waitText(t, ctx, `tr[data-job="tick"] code`, "tick's spec", 10*time.Second, func(s string) bool { return s == "*/2 * * * * *" })
	waitText(t, ctx, `tr[data-job="report"] code`, "report's spec", 10*time.Second, func(s string) bool { return s == "0 0 3 * * *" })

	// A run, then a newer one, without a reload by hand.
	firstRun := waitText(t, ctx, `tr[data-job="tick"] li.run`, "a run of tick", 20*time.Second, func(s string) bool { return strings.Contains(s, " ok ") })
	waitText(t, ctx, `tr[data-job="tick"] li.run`, "a newer run of tick", 20*time.Second, func(s string) bool { return s != firstRun && strings.Contains(s, " ok ") })

	// The strips: a green mark for each run of tick, a red one for each of
	// flaky, whose hover text says how it failed; none for report.
	waitEval(t, ctx, stripTitles("tick", "ok"), "tick's runs marked ok on its strip", 10*time.Second,
		func(s string) bool { return strings.Count(s, " · ok · ") >= 2 })
	waitEval(t, ctx, stripTitles("flaky", "failed"), "flaky's runs marked failed on its strip", 20*time.Second,
		func(s string) bool { return strings.Contains(s, " · failed: exit status 3 · ") })
	if s := waitEval(t, ctx, stripTitles("flaky", "ok")+` + "|" + `+stripTitles("report", "ok")+` + "|" + `+stripTitles("report", "failed"),
		"the other strips", 5*time.Second, func(string) bool { return true }); s != "||" {
		t.Errorf("flaky's strip has ok marks, or report's any: %q", s)
	}
	waitEval(t, ctx, `document.querySelector('tr[data-job="report"] svg.strip').getAttribute("aria-label")`, "report's empty day", 5*time.Second,
		func(s string) bool { return s == "last day: 0 ran, 0 failed (of the runs kept), 0 not run" })

	// SIGTERM of the leader: the page shows the next one.
	replicas[leader].cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-replicas[leader].done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit after SIGTERM", leader)
	}
	next := waitText(t, ctx, `section[data-scheduler="crontab"] .leader`, "the next leader shown", 30*time.Second,
		func(s string) bool { return replicas[s] != nil && s != leader })
	t.Logf("%s leads after %s's SIGTERM", next, leader)

	// baton pause: the page shows it.
	pause := exec.Command(bin, "pause", "tick", "--id", "ops")
	pause.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	if out, err := pause.CombinedOutput(); err != nil {
		t.Fatalf("baton pause tick: %v\n%s", err, out)
	}
	waitText(t, ctx, `tr[data-job="tick"] .state`, "tick paused", 20*time.Second, func(s string) bool { return strings.HasPrefix(s, "paused by ops") })
	waitText(t, ctx, `tr[data-job="report"] .state`, "report still active", 5*time.Second, func(s string) bool { return strings.HasPrefix(s, "active") })
	// Its ticks from then on are counted as not run, with their reason.
	waitText(t, ctx, `tr[data-job="tick"] td.notrun`, "tick's paused ticks counted", 20*time.Second, func(s string) bool { return strings.Contains(s, " paused") })
	// ... and on its strip, as an amber band over this hour, whose hover
	// text gives the count by reason.
	waitEval(t, ctx, stripTitles("tick", "notrun"), "tick's paused ticks on its strip", 20*time.Second,
		func(s string) bool {
			return regexp.MustCompile(`(?m)^\d\d:\d\d–\d\d:\d\d: \d+ not run: (.+, )?paused \d+`).MatchString(s)
		})
	band, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const r = document.querySelector('tr[data-job="tick"] rect.strip-notrun').getBoundingClientRect(); `+
		`const s = document.querySelector('tr[data-job="tick"] svg.strip').getBoundingClientRect(); return (r.width > 0 && r.right <= s.right + 0.5 && r.right >= s.right - 13) + ""; })()`))
	if err != nil || band != "true" {
		t.Errorf("tick's band of paused ticks is not drawn at the strip's right end, the current hour: %q, %v", band, err)
	}

	// On a phone's width the page itself does not scroll sideways: only
	// the tables do, inside their boxes.
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile),
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-job="tick"]`)),
	); err != nil {
		t.Fatal(err)
	}
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
	if err != nil {
		t.Fatal(err)
	}
	if overflow {
		t.Error("on a 390 px wide screen the page scrolls sideways")
	}

	if out := os.Getenv("BATON_SCREENSHOT"); out != "" {
		if err := chromedp.Do(ctx,
			chromedp.EmulateViewport(1300, 720),
			chromedp.Reload(),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-job="tick"]`)),
		); err != nil {
			t.Fatal(err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", out, len(png))
	}

	// Every replica stopped: baton status --serve, from anywhere, still
	// lists the jobs, marked as not scheduled by anyone since the last stop.
	status := exec.Command(bin, "status", "--serve", "127.0.0.1:0")
	status.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	statusOut := &syncBuffer{}
	status.Stdout, status.Stderr = statusOut, statusOut
	if err := status.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { status.Process.Kill(); status.Wait() }()
	for id, r := range replicas {
		r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not exit after SIGTERM", id)
		}
	}
	var statusURL string
	for deadline := time.Now().Add(30 * time.Second); statusURL == ""; {
		if m := statusServing.FindStringSubmatch(statusOut.String()); m != nil {
			statusURL = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("baton status --serve does not say where it serves:\n%s", statusOut.String())
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1100, 720), chromedp.Navigate(statusURL)); err != nil {
		t.Fatalf("open %s: %v", statusURL, err)
	}
	for _, job := range []string{"tick", "report", "flaky"} {
		waitText(t, ctx, `tr[data-job="`+job+`"] td.next`, job+" marked not scheduled", 20*time.Second,
			func(s string) bool { return strings.HasPrefix(s, "not scheduled by anyone since ") })
	}
	waitText(t, ctx, `tr[data-job="tick"] li.run`, "tick's last runs, with every replica down", 5*time.Second,
		func(s string) bool { return strings.Contains(s, " ok ") })
}

var statusServing = regexp.MustCompile(`serving the status page of \S+ on (http://\S+/)`)
