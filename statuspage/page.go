package statuspage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Defaults of a Page.
const (
	// DefaultRefresh is how often the page reloads itself.
	DefaultRefresh = 5 * time.Second
	// DefaultTimeout bounds the etcd reads of one request.
	DefaultTimeout = 5 * time.Second
)

// Page is an http.Handler that serves the status page of one key prefix:
// every election and lock, every scheduler with its leader, and each job's
// schedule, next tick, pause, last runs and ticks not run. Each request
// reads etcd afresh; the page reloads itself every refresh interval. It is
// read-only and shows no secret: identities, job names, specs, lease ids
// and run errors, but no credentials, environment or command lines.
type Page struct {
	client  *clientv3.Client
	prefix  string
	refresh time.Duration
	timeout time.Duration
	now     func() time.Time
	logger  *slog.Logger
}

// Option configures a Page.
type Option func(*Page)

// WithRefresh sets how often the page reloads itself; 0 turns reloading off.
func WithRefresh(d time.Duration) Option { return func(p *Page) { p.refresh = d } }

// WithTimeout bounds the etcd reads of one request.
func WithTimeout(d time.Duration) Option { return func(p *Page) { p.timeout = d } }

// WithLogger sets where a failed read of etcd is logged; the default
// discards it (the page shows it).
func WithLogger(l *slog.Logger) Option { return func(p *Page) { p.logger = l } }

// New returns the status page of the key prefix (BATON_PREFIX, else
// "/baton", when empty) read through client, which the caller keeps and
// closes.
func New(client *clientv3.Client, prefix string, opts ...Option) (*Page, error) {
	if client == nil {
		return nil, errors.New("statuspage: New: nil etcd client")
	}
	prefix, err := resolvePrefix(prefix)
	if err != nil {
		return nil, err
	}
	p := &Page{client: client, prefix: prefix, refresh: DefaultRefresh, timeout: DefaultTimeout, now: time.Now}
	for _, o := range opts {
		if o != nil {
			o(p)
		}
	}
	switch {
	case p.refresh < 0:
		return nil, fmt.Errorf("statuspage: refresh %v is negative", p.refresh)
	case p.refresh%time.Second != 0:
		return nil, fmt.Errorf("statuspage: refresh %v is not a whole number of seconds", p.refresh)
	case p.timeout <= 0:
		return nil, fmt.Errorf("statuspage: timeout %v must be positive", p.timeout)
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	return p, nil
}

// ServeHTTP answers GET and HEAD with the page: 200 with the snapshot, or
// 503 with the error when etcd could not be read (the page keeps reloading,
// so it recovers by itself).
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the status page is read-only", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	now := p.now()
	v := view{Prefix: p.prefix, Refresh: int(p.refresh / time.Second), At: now}
	code := http.StatusOK
	snap, err := Read(ctx, p.client, p.prefix, "", now)
	if err != nil {
		p.logger.Warn("statuspage: read etcd", "prefix", p.prefix, "err", err)
		v.Err, code = err.Error(), http.StatusServiceUnavailable
	} else {
		v.Snapshot = snap
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, v); err != nil {
		http.Error(w, "statuspage: render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	// No script runs and no other site frames the page, whatever etcd holds.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	w.WriteHeader(code)
	if r.Method == http.MethodGet {
		w.Write(buf.Bytes())
	}
}
