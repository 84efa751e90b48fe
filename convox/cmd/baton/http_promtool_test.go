package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/batonhq/baton/internal/etcdtest"
	"github.com/batonhq/baton/internal/promtool"
)

// TestMetricsPassPromtool: a real scrape of baton crontab --http, with
// runs that succeed and fail and series made at 0 for what has not
// happened yet, passes `promtool check metrics`, Prometheus's own check of
// the exposition format and its naming conventions.
func TestMetricsPassPromtool(t *testing.T) {
	t.Parallel()
	promtool.Path(t)
	etcd := etcdtest.Shared(t)
	file := filepath.Join(t.TempDir(), "crontab")
	os.WriteFile(file, []byte("ok: * * * * * * true\nbad: * * * * * * false\n"), 0o644)
	p := startBaton(t, append(etcd.Env(), "BATON_ID=web-1", "BATON_HTTP=127.0.0.1:0"),
		"crontab", "--seconds", "--ttl", "2", file)
	base := p.servedAt()
	body := waitFetch(t, base+"/metrics", http.StatusOK,
		`baton_job_runs_total{job="ok",outcome="success",scheduler="crontab"} `,
		`baton_job_runs_total{job="bad",outcome="failure",scheduler="crontab"} `,
		`baton_job_runs_total{job="ok",outcome="failure",scheduler="crontab"} 0`,
		`baton_job_ticks_not_run_total{job="ok",reason="no_leader",scheduler="crontab"} 0`,
		`baton_claim_latency_seconds_bucket{scheduler="crontab",le="0.001"} `,
		`baton_scheduler_leader{scheduler="crontab"} 1`)
	promtool.Run(t, body, "check", "metrics")
}
