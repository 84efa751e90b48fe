package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// A worker is this program run again as a child, to measure the SDK in a
// process that holds nothing else: its CPU time and memory are then the
// replicas' alone. The parent passes a workerRequest in the environment and
// reads the result from a file.
const workerEnv = "BATON_BENCH_WORKER"

type workerRequest struct {
	Kind     string
	Endpoint string
	EtcdPID  int
	Result   string
	Auth     credentials
	Params   json.RawMessage
	Profile  string // the profiles' path, less .cpu, .block and .allocs; empty: none
}

// workerKinds are the measurements a worker makes.
var workerKinds = map[string]func(ctx context.Context, w *worker, params json.RawMessage) (any, error){
	"claim":    claimWorker,
	"jobs":     jobsWorker,
	"replicas": replicasWorker,
	"idle":     idleWorker,
}

func workerMode() bool { return os.Getenv(workerEnv) != "" }

// runWorkerFromEnv runs the worker the environment asks for and returns the
// process's exit status.
func runWorkerFromEnv() int {
	var req workerRequest
	if err := json.Unmarshal([]byte(os.Getenv(workerEnv)), &req); err != nil {
		fmt.Fprintf(os.Stderr, "bench worker: %s: %v\n", workerEnv, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var cpu *cpuProfile
	if req.Profile != "" {
		var stop func()
		var err error
		if cpu, stop, err = startProfiles(req.Profile); err != nil {
			fmt.Fprintf(os.Stderr, "bench worker %s: %v\n", req.Kind, err)
			return 1
		}
		defer stop()
	}
	out, err := runWorker(ctx, req, cpu)
	if err == nil {
		var b []byte
		if b, err = json.Marshal(out); err == nil {
			err = os.WriteFile(req.Result, b, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench worker %s: %v\n", req.Kind, err)
		return 1
	}
	return 0
}

func runWorker(ctx context.Context, req workerRequest, cpu *cpuProfile) (any, error) {
	f, ok := workerKinds[req.Kind]
	if !ok {
		return nil, fmt.Errorf("no worker %q", req.Kind)
	}
	etcdAuth = req.Auth
	w := &worker{endpoint: req.Endpoint, etcdPID: req.EtcdPID, cpu: cpu,
		logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	return f(ctx, w, req.Params)
}

// runWorker runs a worker of kind with params against etcd and decodes its
// result into result.
func (h *harness) runWorker(ctx context.Context, dir, kind string, etcd *etcdProc, params, result any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	resFile := fmt.Sprintf("%s/%s-%d.json", dir, kind, time.Now().UnixNano())
	var profile string
	if h.cfg.profile != "" {
		dir, err := filepath.Abs(h.cfg.profile)
		if err != nil {
			return err
		}
		profile = filepath.Join(dir, fmt.Sprintf("%s-%d", kind, time.Now().UnixNano()))
	}
	req, err := json.Marshal(workerRequest{Kind: kind, Endpoint: etcd.endpoint, EtcdPID: etcd.pid(), Result: resFile, Auth: etcdAuth, Params: p, Profile: profile})
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	wp, err := h.start(dir, "worker-"+kind, exe, []string{workerEnv + "=" + string(req)})
	if err != nil {
		return err
	}
	select {
	case <-wp.done:
	case <-ctx.Done():
		wp.stop(10 * time.Second)
		return ctx.Err()
	}
	if wp.err != nil {
		return fmt.Errorf("worker %s: %v\n%s", kind, wp.err, tail(wp.output(), 40))
	}
	b, err := os.ReadFile(resFile)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, result)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// worker is what a worker's measurement uses.
type worker struct {
	endpoint string
	etcdPID  int
	logger   *slog.Logger
	cpu      *cpuProfile // -profile's; nil without it
}

// snapshot is the state of the counters at one moment.
type snapshot struct {
	at      time.Time
	selfCPU time.Duration
	etcd    procUsage
	server  serverCounts
}

func (w *worker) snapshot(ctx context.Context) (snapshot, error) { return w.take(ctx, true) }

func (w *worker) snapshotEnd(ctx context.Context) (snapshot, error) { return w.take(ctx, false) }

// take reads the counters. Reading etcd's metrics costs both processes a few
// milliseconds of CPU, so a window's first snapshot reads them before the
// CPU times and its last one after, to leave that cost out.
func (w *worker) take(ctx context.Context, start bool) (snapshot, error) {
	var s snapshot
	var err error
	if start {
		if s.server, err = scrape(ctx, w.endpoint); err != nil {
			return s, err
		}
	}
	if s.etcd, err = readProcUsage(w.etcdPID); err != nil {
		return s, err
	}
	s.selfCPU = selfCPU()
	s.at = time.Now()
	if !start {
		s.server, err = scrape(ctx, w.endpoint)
	}
	return s, err
}

// span is what happened between two snapshots.
type span struct {
	Seconds      float64
	SelfCPU      time.Duration
	EtcdCPU      time.Duration
	EtcdRSS      float64
	Requests     float64
	ByMethod     map[string]float64
	Fsyncs       float64
	FsyncSeconds float64
}

func spanOf(a, b snapshot) span {
	d := b.server.sub(a.server)
	return span{
		Seconds:      b.at.Sub(a.at).Seconds(),
		SelfCPU:      b.selfCPU - a.selfCPU,
		EtcdCPU:      b.etcd.cpu - a.etcd.cpu,
		EtcdRSS:      b.etcd.rss,
		Requests:     d.requests(),
		ByMethod:     d.byMethod,
		Fsyncs:       d.fsyncs,
		FsyncSeconds: d.fsyncSeconds,
	}
}

func (s span) counts() serverCounts { return serverCounts{byMethod: s.ByMethod} }

// selfCPU is this process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// memory is this process's memory after two garbage collections: the
// first moves what sync.Pools hold (gRPC's buffers of the last large
// messages, 2 MiB or more after a crowded tick's records) to their victim
// caches, which the second frees; after one, those buffers counted as live.
type memory struct {
	Heap float64 // bytes in live heap spans (HeapInuse)
	Live float64 // bytes of live objects (HeapAlloc)
	RSS  float64
}

func selfMemory() memory {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u, _ := readProcUsage(os.Getpid())
	return memory{Heap: float64(ms.HeapInuse), Live: float64(ms.HeapAlloc), RSS: u.rss}
}

// rpcCounter counts what one client sends etcd: unary calls, and each
// message sent on a stream (a keepalive, a watch request), by method.
type rpcCounter struct {
	mu    sync.Mutex
	calls map[string]float64
	// onTxn, when set, sees every transaction that succeeded.
	onTxn func(*etcdserverpb.TxnRequest)
}

func (c *rpcCounter) add(method string) {
	c.mu.Lock()
	c.calls[method[strings.LastIndexByte(method, '/')+1:]]++
	c.mu.Unlock()
}

func (c *rpcCounter) snapshot() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]float64{}
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

type countedStream struct {
	grpc.ClientStream
	c      *rpcCounter
	method string
}

func (s countedStream) SendMsg(m any) error {
	s.c.add(s.method)
	return s.ClientStream.SendMsg(m)
}

// countingClient returns a client of endpoint whose requests c counts.
func countingClient(endpoint string, c *rpcCounter) (*clientv3.Client, error) {
	if c.calls == nil {
		c.calls = map[string]float64{}
	}
	return clientv3.New(clientv3.Config{
		Endpoints:            []string{endpoint},
		Username:             etcdAuth.Username,
		Password:             etcdAuth.Password,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		Logger:               zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				c.add(method)
				err := invoker(ctx, method, req, reply, cc, opts...)
				if tr, ok := req.(*etcdserverpb.TxnRequest); ok && err == nil && c.onTxn != nil {
					c.onTxn(tr)
				}
				return err
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				s, err := streamer(ctx, desc, cc, method, opts...)
				if err != nil {
					return nil, err
				}
				return countedStream{ClientStream: s, c: c, method: method}, nil
			}),
		},
	})
}

// specCounter counts the jobs whose spec (P/jobs/<scheduler>/<job>/spec) a
// new leader has written, many to a transaction, and those whose
// registration it has put: when both are as many as jobs, the leader's
// start-up is over.
type specCounter struct {
	mu          sync.Mutex
	specs, regs int
}

// observe counts the specs a transaction compares at its top (a spec's
// write; a term's read-only check of them nests its compares) and the
// registrations it puts, at any depth.
func (s *specCounter) observe(tr *etcdserverpb.TxnRequest) {
	specs := 0
	for _, c := range tr.Compare {
		if strings.HasSuffix(string(c.Key), "/spec") {
			specs++
		}
	}
	regs := registrations(tr)
	s.mu.Lock()
	s.specs += specs
	s.regs += regs
	s.mu.Unlock()
}

// registrations counts the registrations tr puts (keys with /by/).
func registrations(tr *etcdserverpb.TxnRequest) int {
	n := 0
	for _, op := range append(append([]*etcdserverpb.RequestOp{}, tr.Success...), tr.Failure...) {
		if p := op.GetRequestPut(); p != nil && strings.Contains(string(p.Key), "/by/") {
			n++
		}
		if nested := op.GetRequestTxn(); nested != nil {
			n += registrations(nested)
		}
	}
	return n
}

// count is how many jobs have had both their spec and a registration
// written.
func (s *specCounter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return min(s.specs, s.regs)
}

// startProfiles starts the worker's CPU profile (path.cpu) and records
// where goroutines block (path.block, every wait of 10 µs or more, which
// shows a run or the loop waiting on a lock); stop writes both, and what
// the worker allocated (path.allocs), which the collector's share of a
// crowded tick follows.
func startProfiles(path string) (cpu *cpuProfile, stop func(), err error) {
	cpu = &cpuProfile{path: path}
	if err := cpu.start(".cpu"); err != nil {
		return nil, nil, err
	}
	runtime.SetBlockProfileRate(10000)
	return cpu, func() {
		cpu.stop()
		if f, err := os.Create(path + ".block"); err == nil {
			pprof.Lookup("block").WriteTo(f, 0)
			f.Close()
		}
		if f, err := os.Create(path + ".allocs"); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}, nil
}
