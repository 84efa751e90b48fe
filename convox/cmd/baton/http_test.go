package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/prometheus/client_golang/prometheus"
)

var servingAddr = regexp.MustCompile(`msg="baton: serving /metrics, /healthz, /readyz and the status page" addr=(\S+)`)

// servedAt waits for the process to say where it serves and returns the
// base URL.
func (p *process) servedAt() string {
	p.t.Helper()
	p.waitOutput("baton: serving /metrics", 30*time.Second)
	m := servingAddr.FindStringSubmatch(p.out.String())
	if m == nil {
		p.t.Fatalf("no address in:\n%s", p.out.String())
	}
	return "http://" + m[1]
}

// fetch does a request and returns the status and body.
func fetch(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFetch polls url until it answers want and its body contains each of
// contains.
func waitFetch(t *testing.T, url string, want int, contains ...string) string {
	t.Helper()
	var code int
	var body string
	until(t, 20*time.Second, url+" answering as expected", func() bool {
		code, body = fetch(t, http.MethodGet, url)
		if code != want {
			return false
		}
		for _, s := range contains {
			if !strings.Contains(body, s) {
				return false
			}
		}
		return true
	})
	return body
}

func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestCrontabServesHTTP: baton crontab --http serves /healthz, /readyz,
// /metrics with baton's metrics of its runs and leadership, and the status
// page with its jobs and leader; the page is read-only; the server goes
// with the process.
func TestCrontabServesHTTP(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Shared(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "crontab")
	os.WriteFile(file, []byte("tick: * * * * * * echo ran\n"), 0o644)
	p := startBaton(t, append(etcd.Env(), "BATON_ID=web-1", "BATON_HTTP=127.0.0.1:0"),
		"crontab", "--seconds", "--ttl", "2", file)
	base := p.servedAt()

	waitFetch(t, base+"/healthz", http.StatusOK, "ok")
	waitFetch(t, base+"/readyz", http.StatusOK, "ok")
	waitFetch(t, base+"/", http.StatusOK, `data-job="tick"`, `led by <span class="leader">web-1</span>`, "· web-1 · <span class=\"ok\">ok</span>")
	waitFetch(t, base+"/metrics", http.StatusOK, "go_goroutines ", "process_start_time_seconds ",
		`baton_job_runs_total{job="tick",outcome="success",scheduler="crontab"} `,
		`baton_scheduler_leader{scheduler="crontab"} 1`,
		`baton_job_tick_lateness_seconds_count{scheduler="crontab"} `)
	if code, _ := fetch(t, http.MethodPost, base+"/"); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", code)
	}
	if code, _ := fetch(t, http.MethodGet, base+"/pause"); code != http.StatusNotFound {
		t.Errorf("GET /pause: %d, want 404", code)
	}

	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(15 * time.Second); code != exitOK {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), time.Second); err == nil {
		t.Errorf("%s still accepts connections after baton exited", base)
	}
}

// TestCrontabHTTPWhileWaitingForEtcd: before etcd answers, baton is alive
// (a restart would not help) and not ready, and the page says it waits.
func TestCrontabHTTPWhileWaitingForEtcd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "crontab")
	os.WriteFile(file, []byte("tick: * * * * * * echo ran\n"), 0o644)
	p := startBaton(t, []string{"BATON_ETCD_ENDPOINTS=http://" + closedPort(t)},
		"crontab", "--seconds", "--dial-timeout", "1s", "--http", "127.0.0.1:0", file)
	base := p.servedAt()
	waitFetch(t, base+"/healthz", http.StatusOK, "ok")
	waitFetch(t, base+"/readyz", http.StatusServiceUnavailable, "waiting for etcd")
	waitFetch(t, base+"/", http.StatusServiceUnavailable, "waiting for etcd")
}

// TestRunServesHTTP: baton run --http answers /healthz from its wait loop
// while COMMAND runs, /readyz from etcd (503 once etcd is gone), and
// shows its election on the page.
func TestRunServesHTTP(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Start(t)
	p := startBaton(t, []string{"BATON_ETCD_ENDPOINTS=" + etcd.Endpoint(), "BATON_ID=worker-1"},
		"run", "--leader", "worker", "--http", "127.0.0.1:0", "--", "sleep", "60")
	base := p.servedAt()
	p.waitOutput("starting sleep", 20*time.Second)
	waitFetch(t, base+"/healthz", http.StatusOK, "ok")
	waitFetch(t, base+"/readyz", http.StatusOK, "ok")
	waitFetch(t, base+"/", http.StatusOK, `<tr class="election" data-election="worker"><td>worker</td><td class="leader">worker-1</td>`)
	waitFetch(t, base+"/metrics", http.StatusOK, "go_goroutines ",
		`baton_scheduler_leader{scheduler="worker"} 1`,
		`baton_scheduler_leadership_changes_total{change="gained",scheduler="worker"} 1`)
	etcd.Stop()
	waitFetch(t, base+"/readyz", http.StatusServiceUnavailable, "not ready: etcd: ")
}

// TestStatusServe: baton status --serve serves the page of the whole
// prefix from a process that runs no job, until SIGTERM.
func TestStatusServe(t *testing.T) {
	t.Parallel()
	s := startScheduler(t, map[string]string{"report": "0 0 0 1 1 *"})
	p := startBaton(t, s.env, "status", "--serve", "127.0.0.1:0")
	base := p.servedAt()
	waitFetch(t, base+"/", http.StatusOK, `data-job="report"`, `led by <span class="leader">web-1</span>`)
	waitFetch(t, base+"/readyz", http.StatusOK, "ok")
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != exitOK {
		t.Fatalf("exit %d after SIGTERM", code)
	}
}

// TestHTTPAddressErrors: a malformed address is a usage error and one that
// cannot be bound a failure, each naming the address and where it came
// from, before anything runs.
func TestHTTPAddressErrors(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	inUse := taken.Addr().String()
	etcd := etcdtest.Shared(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "crontab")
	os.WriteFile(file, []byte("tick: * * * * * * echo ran\n"), 0o644)
	env := etcd.Env()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"crontab, no port", env, []string{"crontab", "--seconds", "--http", "8080", file}, exitUsage, `--http "8080": want HOST:PORT`},
		{"crontab, bad port", env, []string{"crontab", "--seconds", "--http", ":http", file}, exitUsage, `--http ":http": port "http" is not a number`},
		{"crontab, BATON_HTTP", append(env, "BATON_HTTP=localhost"), []string{"crontab", "--seconds", file}, exitUsage, `BATON_HTTP "localhost": want HOST:PORT`},
		{"crontab, in use", env, []string{"crontab", "--seconds", "--http", inUse, file}, exitFailure, "--http " + inUse + ": listen tcp " + inUse + ": bind: address already in use"},
		{"crontab, not here", env, []string{"crontab", "--seconds", "--http", "192.0.2.1:8080", file}, exitFailure, "--http 192.0.2.1:8080: listen tcp 192.0.2.1:8080: bind: cannot assign requested address"},
		{"run, no port", env, []string{"run", "--leader", "w", "--http", "99999", "--", "true"}, runUsage, `--http "99999": want HOST:PORT`},
		{"run, in use", env, []string{"run", "--leader", "w", "--http", inUse, "--", "true"}, runFailure, "--http " + inUse + ": listen tcp " + inUse + ": bind: address already in use"},
		{"status, bad", env, []string{"status", "--serve", "x:y:z"}, exitUsage, `--serve "x:y:z": want HOST:PORT`},
		{"status, in use", env, []string{"status", "--serve", inUse}, exitFailure, "--serve " + inUse + ": listen tcp " + inUse},
		{"status, with --json", env, []string{"status", "--serve", ":0", "--json"}, exitUsage, "--serve shows every scheduler as a page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runBaton(t, tc.env, tc.args...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d, with %q:\n%s", code, tc.code, tc.want, out)
			}
			if strings.Contains(out, "[tick] ran") || strings.Contains(out, "serving") {
				t.Errorf("started despite the bad address:\n%s", out)
			}
		})
	}
}

// TestOpsServerHealthAndStop: /healthz reports the command's loop that does
// not answer, /readyz waits for the client, and stop frees the address and
// returns only once the server is gone.
func TestOpsServerHealthAndStop(t *testing.T) {
	t.Parallel()
	stuck := errors.New("the loop did not answer")
	s, err := startOpsServer("--http", "127.0.0.1:0", "/baton", prometheus.NewRegistry(), func(context.Context) error { return stuck }, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.Addr()
	if code, body := fetch(t, http.MethodGet, base+"/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "unhealthy: the loop did not answer") {
		t.Errorf("/healthz of a stuck loop: %d %q", code, body)
	}
	if code, body := fetch(t, http.MethodGet, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for etcd") {
		t.Errorf("/readyz before etcd: %d %q", code, body)
	}
	s.stop()
	s.stop() // twice is fine
	select {
	case <-s.served:
	default:
		t.Error("stop returned while the server still served")
	}
	ln, err := net.Listen("tcp", s.Addr())
	if err != nil {
		t.Errorf("the address is still taken after stop: %v", err)
	} else {
		ln.Close()
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
