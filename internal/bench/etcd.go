package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdProc is a `baton etcd` member in a process of its own.
type etcdProc struct {
	*proc
	endpoint string
}

// credentials are an etcd user's name and password; the zero value is no
// auth.
type credentials struct {
	Username, Password string
}

// benchUser is the app's user of a member run with -auth: `baton etcd`
// creates it with a role on the default prefix, as it does for an app.
var benchUser = credentials{Username: "bench", Password: "bench-secret"}

// etcdAuth is what every client of the harness and its workers logs in
// with: benchUser under -auth, else nothing.
var etcdAuth credentials

// env is the environment that makes `baton etcd` turn auth on with c as
// the app's user, and makes a baton client log in as c.
func (c credentials) env() []string {
	if c.Username == "" {
		return nil
	}
	return []string{"BATON_ETCD_USERNAME=" + c.Username, "BATON_ETCD_PASSWORD=" + c.Password}
}

// startEtcd runs a one-member `baton etcd` with its data under dir and
// returns once it reports itself healthy.
func (h *harness) startEtcd(ctx context.Context, dir string) (*etcdProc, error) {
	ports, err := etcdtest.FreePorts(2) // below the ephemeral range: no connection meanwhile takes one
	if err != nil {
		return nil, err
	}
	endpoint := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	p, err := h.start(dir, "etcd", h.baton, etcdAuth.env(), "etcd",
		"--name", "bench",
		"--data-dir", filepath.Join(dir, "etcd-data"),
		"--listen-client-urls", endpoint,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		"--log-level", "error")
	if err != nil {
		return nil, err
	}
	e := &etcdProc{proc: p, endpoint: endpoint}
	err = poll(ctx, 30*time.Second, 50*time.Millisecond, "etcd to be healthy", func() (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("baton etcd exited: %v\n%s", p.err, p.output())
		}
		return healthy(endpoint), nil
	})
	if err != nil {
		p.stop(5 * time.Second)
		return nil, err
	}
	return e, nil
}

func healthy(endpoint string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(endpoint + "/health")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.Contains(string(b), `"health":"true"`)
}

// newClient returns a quiet etcd client of endpoint.
func newClient(endpoint string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:            []string{endpoint},
		Username:             etcdAuth.Username,
		Password:             etcdAuth.Password,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		Logger:               zap.NewNop(),
	})
}

// serverCounts are etcd's own counters of what its clients asked, read
// from its /metrics: requests by method, and its WAL fsyncs. A request is a
// unary call, or a message a client sent on a stream: each lease keepalive,
// each watch created.
type serverCounts struct {
	byMethod     map[string]float64
	fsyncs       float64
	fsyncSeconds float64
}

func (s serverCounts) requests() float64 {
	var n float64
	for _, v := range s.byMethod {
		n += v
	}
	return n
}

// sub returns s − before.
func (s serverCounts) sub(before serverCounts) serverCounts {
	d := serverCounts{byMethod: map[string]float64{}, fsyncs: s.fsyncs - before.fsyncs, fsyncSeconds: s.fsyncSeconds - before.fsyncSeconds}
	for k, v := range s.byMethod {
		if v -= before.byMethod[k]; v != 0 {
			d.byMethod[k] = v
		}
	}
	return d
}

// describe lists the methods, busiest first, as "Txn 120, LeaseKeepAlive 6".
func (s serverCounts) describe(scale float64) string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range s.byMethod {
		all = append(all, kv{k, v})
	}
	if len(all) == 0 {
		return "none"
	}
	slices.SortFunc(all, func(a, b kv) int {
		if c := cmp.Compare(b.v, a.v); c != 0 {
			return c
		}
		return strings.Compare(a.k, b.k)
	})
	var parts []string
	for _, e := range all {
		parts = append(parts, e.k+" "+num(e.v*scale))
	}
	return strings.Join(parts, ", ")
}

// scrape reads etcd's counters from endpoint's /metrics.
func scrape(ctx context.Context, endpoint string) (serverCounts, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/metrics", nil)
	if err != nil {
		return serverCounts{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return serverCounts{}, err
	}
	defer resp.Body.Close()
	return parseMetrics(resp.Body)
}

// parseMetrics reads etcd's counters from its /metrics text.
func parseMetrics(r io.Reader) (serverCounts, error) {
	sc := serverCounts{byMethod: map[string]float64{}}
	// A stream's messages are counted as its receives less the streams
	// ended: the gRPC middleware counts every receive, and a stream's last
	// one is its end (io.EOF or a cancellation), which is no request. A
	// unary call is one request.
	unary := map[string]float64{}
	received := map[string]float64{}
	ended := map[string]float64{}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		line := s.Text()
		metric, _, _ := strings.Cut(line, "{")
		metric, _, _ = strings.Cut(metric, " ")
		labels, value, ok := metricLine(line)
		if !ok || value == 0 {
			continue
		}
		method := labels["grpc_method"]
		switch metric {
		case "grpc_server_started_total":
			if labels["grpc_type"] == "unary" {
				unary[method] += value
			}
		case "grpc_server_msg_received_total":
			if labels["grpc_type"] != "unary" {
				received[method] += value
			}
		case "grpc_server_handled_total":
			if labels["grpc_type"] != "unary" {
				ended[method] += value
			}
		case "etcd_disk_wal_fsync_duration_seconds_count":
			sc.fsyncs = value
		case "etcd_disk_wal_fsync_duration_seconds_sum":
			sc.fsyncSeconds = value
		}
	}
	for m, v := range unary {
		sc.byMethod[m] += v
	}
	for m, v := range received {
		if v -= ended[m]; v > 0 {
			sc.byMethod[m] += v
		}
	}
	return sc, s.Err()
}

// metricLine parses `name{k="v",...} value` of the Prometheus text format.
func metricLine(line string) (map[string]string, float64, bool) {
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return nil, 0, false
	}
	v, err := strconv.ParseFloat(line[i+1:], 64)
	if err != nil {
		return nil, 0, false
	}
	labels := map[string]string{}
	if open := strings.IndexByte(line, '{'); open >= 0 {
		if end := strings.LastIndexByte(line[:i], '}'); end > open {
			for kv := range strings.SplitSeq(line[open+1:end], ",") {
				k, val, ok := strings.Cut(kv, "=")
				if ok {
					labels[k] = strings.Trim(val, `"`)
				}
			}
		}
	}
	return labels, v, true
}

// procUsage is a process's CPU time and resident memory, from /proc.
type procUsage struct {
	cpu time.Duration // user + system
	rss float64       // bytes
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// readProcUsage reads a process's CPU time as the sum of its threads' time
// on a CPU (/proc/PID/task/*/schedstat, in nanoseconds), or, without
// schedstat, from /proc/PID/stat in 10 ms units, too coarse for an idle
// process.
func readProcUsage(pid int) (procUsage, error) {
	var u procUsage
	if readFile(fmt.Sprintf("/proc/%d/schedstat", pid)) != "" {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return u, err
		}
		for _, t := range tasks {
			// A thread that has just exited has no file any more.
			f := strings.Fields(readFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name())))
			if len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				u.cpu += time.Duration(ns)
			}
		}
	} else {
		stat := readFile(fmt.Sprintf("/proc/%d/stat", pid))
		end := strings.LastIndexByte(stat, ')')
		if end < 0 {
			return u, fmt.Errorf("no /proc/%d/stat", pid)
		}
		// Fields after the command: state is field 3, utime 14, stime 15.
		f := strings.Fields(stat[end+1:])
		if len(f) < 13 {
			return u, fmt.Errorf("short /proc/%d/stat", pid)
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		u.cpu = time.Duration(utime+stime) * time.Second / clockTicks
	}
	for l := range strings.SplitSeq(readFile(fmt.Sprintf("/proc/%d/status", pid)), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			u.rss = kb * 1024
		}
	}
	return u, nil
}
