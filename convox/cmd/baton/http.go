package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/batonhq/baton/statuspage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// probeTimeout bounds one /healthz or /readyz check: a probe that waits
// longer than its caller's own timeout tells it nothing.
const probeTimeout = 2 * time.Second

// httpUsage is the --http flag's help, shared by crontab and run.
const httpUsage = "serve /metrics, /healthz, /readyz and the status page (/) on ADDR, HOST:PORT or :PORT (default $BATON_HTTP; none when empty)"

// httpFlag adds --http to fs; the returned func gives the address to serve,
// the flag's or else $BATON_HTTP's, empty for none.
func httpFlag(fs *pflag.FlagSet) func() string {
	addr := fs.String("http", "", httpUsage)
	return func() string {
		if fs.Changed("http") {
			return *addr
		}
		return os.Getenv("BATON_HTTP")
	}
}

// checkHTTPAddr says what is wrong with an address to listen on, naming it.
func checkHTTPAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want HOST:PORT or :PORT (like :9090 or 127.0.0.1:9090): %v", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// opsServer serves a command's /metrics, /healthz, /readyz and status page.
// It listens at once, so a taken port is an error before anything starts;
// the etcd client comes later, once etcd answers, and until then /readyz
// and the page say that baton waits for etcd.
type opsServer struct {
	srv    *http.Server
	ln     net.Listener
	prefix string
	reg    prometheus.Gatherer // /metrics, which says whether etcd refuses a scheduler's writes
	logger *slog.Logger
	// alive checks the command's own loop, for /healthz.
	alive  func(context.Context) error
	client atomic.Pointer[clientv3.Client]
	page   atomic.Pointer[statuspage.Page]
	served chan struct{} // closed when Serve has returned
	once   sync.Once
}

// newRegistry is the registry /metrics serves: the Go runtime's and the
// process's metrics, to which a command adds its own.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// startOpsServer listens on addr and serves until stop. The error names
// addr and source, the flag or variable that gave it.
func startOpsServer(source, addr, prefix string, reg *prometheus.Registry, alive func(context.Context) error, logger *slog.Logger) (*opsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", source, addr, err)
	}
	s := &opsServer{ln: ln, prefix: prefix, reg: reg, logger: logger, alive: alive, served: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("GET /{$}", s.statusPage)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("baton: --http stopped serving", "addr", ln.Addr().String(), "err", err)
		}
	}()
	logger.Info("baton: serving /metrics, /healthz, /readyz and the status page", "addr", ln.Addr().String())
	return s, nil
}

// Addr is the address the server listens on.
func (s *opsServer) Addr() string { return s.ln.Addr().String() }

// connected gives the server the etcd client that /readyz and the page read.
func (s *opsServer) connected(cli *clientv3.Client) error {
	page, err := statuspage.New(cli, s.prefix, statuspage.WithLogger(s.logger))
	if err != nil {
		return err
	}
	s.page.Store(page)
	s.client.Store(cli)
	return nil
}

// stop closes the listener and every connection, waiting a moment for
// requests in flight; it may be called more than once.
func (s *opsServer) stop() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			s.srv.Close()
		}
		<-s.served
	})
}

func (s *opsServer) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), probeTimeout)
	defer cancel()
	if err := s.alive(ctx); err != nil {
		http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	plain(w, "ok\n")
}

func (s *opsServer) readyz(w http.ResponseWriter, r *http.Request) {
	cli := s.client.Load()
	if cli == nil {
		http.Error(w, "not ready: waiting for etcd", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), probeTimeout)
	defer cancel()
	// A linearizable read: it needs the etcd cluster's quorum, as claims do.
	if _, err := cli.Get(ctx, s.prefix+"/etcd/born", clientv3.WithCountOnly()); err != nil {
		http.Error(w, "not ready: etcd: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if names := s.refusing(); len(names) > 0 {
		msg := "not ready: etcd refuses the writes of scheduler " + strings.Join(names, ", ")
		// In etcd's words, when a write that changes nothing says them.
		if err := checkAccess(ctx, cli, s.prefix, readWrite); err != nil {
			msg += ": " + err.Error()
		} else {
			msg += " (the log says why)"
		}
		http.Error(w, msg, http.StatusServiceUnavailable)
		return
	}
	plain(w, "ok\n")
}

// refusedMetric is the gauge, 1 while etcd refuses a scheduler's claims,
// that the schedulers of the process (package metrics) keep.
const refusedMetric = "baton_etcd_writes_refused"

// refusing names the schedulers of this process whose claims etcd refuses
// now, as their metrics say: a read does not tell an etcd that is out of
// space, or a role that lost its write permission, from a healthy one.
func (s *opsServer) refusing() []string {
	families, err := s.reg.Gather()
	if err != nil {
		s.logger.Error("baton: /readyz: reading the metrics", "err", err)
	}
	var names []string
	for _, f := range families {
		if f.GetName() != refusedMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetGauge().GetValue() == 0 {
				continue
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == "scheduler" {
					names = append(names, l.GetValue())
				}
			}
		}
	}
	return names
}

func (s *opsServer) statusPage(w http.ResponseWriter, r *http.Request) {
	page := s.page.Load()
	if page == nil {
		http.Error(w, "waiting for etcd", http.StatusServiceUnavailable)
		return
	}
	page.ServeHTTP(w, r)
}

func plain(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, body)
}

// httpSource names where the address came from, for an error.
func httpSource(fs *pflag.FlagSet) string {
	if fs.Changed("http") {
		return "--http"
	}
	return "BATON_HTTP"
}
