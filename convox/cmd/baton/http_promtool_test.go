package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/etcdtest"
)

// promtool returns the path of Prometheus's promtool (Debian's prometheus
// package). CI, which .ci/run installs it for, fails without it; elsewhere
// the test that needs it is skipped, saying how to install it.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("promtool not found on PATH (%v): .ci/run installs it (apt-get install prometheus)", err)
	}
	t.Skipf("promtool not found on PATH (%v): apt-get install prometheus to run this test; CI fails without it", err)
	return ""
}

// TestMetricsPassPromtool: a real scrape of baton crontab --http, with
// runs that succeed and fail and series made at 0 for what has not
// happened yet, passes `promtool check metrics`, Prometheus's own check of
// the exposition format and its naming conventions.
func TestMetricsPassPromtool(t *testing.T) {
	pt := promtool(t)
	etcd := etcdtest.Start(t)
	file := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(file, []byte("ok: * * * * * * true\nbad: * * * * * * false\n"), 0o644)
	p := startBaton(t, []string{"BATON_ETCD_ENDPOINTS=" + etcd.Endpoint(), "BATON_ID=web-1", "BATON_HTTP=127.0.0.1:0"},
		"crontab", "--seconds", "--ttl", "2", file)
	base := p.servedAt()
	body := waitFetch(t, base+"/metrics", http.StatusOK,
		`baton_job_runs_total{job="ok",outcome="success",scheduler="crontab"} `,
		`baton_job_runs_total{job="bad",outcome="failure",scheduler="crontab"} `,
		`baton_job_runs_total{job="ok",outcome="failure",scheduler="crontab"} 0`,
		`baton_job_ticks_not_run_total{job="ok",reason="no_leader",scheduler="crontab"} 0`,
		`baton_claim_latency_seconds_bucket{scheduler="crontab",le="0.001"} `,
		`baton_scheduler_leader{scheduler="crontab"} 1`)
	check := exec.Command(pt, "check", "metrics")
	check.Stdin = strings.NewReader(body)
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\nof:\n%s", err, out, body)
	}
}
