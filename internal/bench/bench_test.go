package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/testbin"
)

// TestMain lets this test binary serve as the harness's worker, as the
// bench program does for itself.
func TestMain(m *testing.M) {
	if workerMode() {
		os.Exit(runWorkerFromEnv())
	}
	os.Exit(m.Run())
}

// smokeConfig is every figure with counts so small that the harness runs
// end to end in seconds; the figures mean nothing.
func smokeConfig(baton string) config {
	return config{
		baton:          baton,
		handovers:      2,
		failoverTTLs:   []int{2},
		failoverTrials: 1,
		claimJobs:      []int{10},
		claimTicks:     2,
		jobs:           []int{200},
		jobsWindow:     2 * time.Second,
		jobsStartup:    time.Minute,
		crowdJobs:      []int{100},
		crowdReplicas:  2,
		replicas:       []int{3},
		replicaProcs:   []int{2},
		replicasWindow: 2 * time.Second,
		idleWindow:     3 * time.Second,
		settle:         300 * time.Millisecond,
	}
}

// TestFiguresSmoke runs every figure of the harness with tiny counts, so
// that it keeps working as baton changes.
func TestFiguresSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and baton processes")
	}
	// The build convox/cmd/baton's tests run.
	baton, err := testbin.Path(testbin.Build{Pkg: "./convox/cmd/baton"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range figures {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			h := &harness{cfg: smokeConfig(baton), dir: t.TempDir(), baton: baton, stderr: testLog{t}}
			defer h.close()
			// A figure that saw a promise broken (a handover's tick missed
			// or run twice) fails, naming it, after its report.
			rep, err := h.runFigure(ctx, f)
			var out bytes.Buffer
			if rep != nil {
				rep.write(&out)
				t.Log("\n" + out.String())
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.tables) == 0 {
				t.Fatal("no table")
			}
			for _, tb := range rep.tables {
				if len(tb.rows) == 0 {
					t.Errorf("a table with no rows: %v", tb.header)
				}
				for _, row := range tb.rows {
					if len(row) != len(tb.header) {
						t.Errorf("row %v has %d cells for %d columns", row, len(row), len(tb.header))
					}
				}
			}
			if !strings.Contains(out.String(), "go run ./internal/bench ") {
				t.Error("the report does not say how to rerun it")
			}
		})
	}
}

// testLog sends the harness's progress to the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestChooseFigures(t *testing.T) {
	all, err := chooseFigures(nil)
	if err != nil || len(all) != len(figures) {
		t.Fatalf("no names: %d figures, %v", len(all), err)
	}
	got, err := chooseFigures([]string{"idle", "handover"})
	if err != nil || len(got) != 2 || got[0].name != "handover" || got[1].name != "idle" {
		t.Fatalf("two names: %v, %v", got, err)
	}
	if _, err := chooseFigures([]string{"handover", "nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("an unknown figure: %v", err)
	}
}

func TestHelpListsEveryFigure(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("-h exited %d", code)
	}
	for _, f := range figures {
		if !strings.Contains(stderr.String(), f.name) {
			t.Errorf("-h does not list %s:\n%s", f.name, stderr.String())
		}
	}
	if code := runMain([]string{"nope"}, &stdout, &stderr); code != 2 {
		t.Errorf("an unknown figure exited %d, want 2", code)
	}
}

func TestArgsForRerunsTheMeasuredFigure(t *testing.T) {
	cfg := defaultConfig()
	if args := cfg.argsFor("failover"); len(args) != 0 {
		t.Errorf("defaults: %v", args)
	}
	cfg.failoverTTLs = []int{2}
	cfg.handovers = 7
	if got := strings.Join(cfg.argsFor("failover"), " "); got != "-failover-ttls=2" {
		t.Errorf("failover: %q", got)
	}
	if got := strings.Join(cfg.argsFor("handover"), " "); got != "-handovers=7" {
		t.Errorf("handover: %q", got)
	}
}

func TestScrapeCountsRequestsNotStreamEnds(t *testing.T) {
	in := `# HELP x
grpc_server_started_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 5
grpc_server_msg_received_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 5
grpc_server_started_total{grpc_method="LeaseKeepAlive",grpc_service="etcdserverpb.Lease",grpc_type="bidi_stream"} 4
grpc_server_msg_received_total{grpc_method="LeaseKeepAlive",grpc_service="etcdserverpb.Lease",grpc_type="bidi_stream"} 7
grpc_server_handled_total{grpc_code="OK",grpc_method="LeaseKeepAlive",grpc_service="etcdserverpb.Lease",grpc_type="bidi_stream"} 2
grpc_server_handled_total{grpc_code="Canceled",grpc_method="LeaseKeepAlive",grpc_service="etcdserverpb.Lease",grpc_type="bidi_stream"} 1
etcd_disk_wal_fsync_duration_seconds_sum 0.5
etcd_disk_wal_fsync_duration_seconds_count 10
`
	sc, err := parseMetrics(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	// Seven receives on four streams, three of them ended: four messages.
	if sc.byMethod["Range"] != 5 || sc.byMethod["LeaseKeepAlive"] != 4 || sc.requests() != 9 {
		t.Errorf("counts %v", sc.byMethod)
	}
	if sc.fsyncs != 10 || sc.fsyncSeconds != 0.5 {
		t.Errorf("fsyncs %v in %v s", sc.fsyncs, sc.fsyncSeconds)
	}
}

func TestQuantile(t *testing.T) {
	s := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {0.1, 1}, {0, 1}} {
		if got := quantile(s, tc.q); got != tc.want {
			t.Errorf("quantile %v = %v, want %v", tc.q, got, tc.want)
		}
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("no samples")
	}
}

func TestTally(t *testing.T) {
	at := func(s int, id string) ledgerLine { return ledgerLine{tick: time.Unix(int64(s), 0), id: id} }
	tl := tally([]ledgerLine{at(10, "r1"), at(11, "r1"), at(11, "r2"), at(13, "r2"), at(14, "r2")})
	if tl.ticks != 5 || len(tl.missed) != 1 || !tl.missed[0].Equal(time.Unix(12, 0)) || tl.extraRuns() != 1 ||
		len(tl.twice) != 1 || !tl.twice[0].tick.Equal(time.Unix(11, 0)) || strings.Join(tl.twice[0].by, ",") != "r1,r2" {
		t.Errorf("tally = %+v; want 5 ticks, 12 s missed, 11 s run by r1 and r2", tl)
	}
}
