package election

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// closedEndpoint returns the URL of a 127.0.0.1 port nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// noPanic runs f and turns a panic into an error.
func noPanic(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

func TestEnvironmentDefaults(t *testing.T) {
	// A client of nothing: the constructors do no I/O.
	cli := etcdtest.NewClient(t, closedEndpoint(t))
	for _, tc := range []struct {
		name         string
		env          map[string]string
		opts         []Option
		wantPrefix   string
		wantIdentity string
		wantTTL      time.Duration
	}{
		{
			name:         "defaults",
			env:          map[string]string{"BATON_ID": "web-1"},
			wantPrefix:   DefaultPrefix,
			wantIdentity: "web-1",
			wantTTL:      DefaultTTL,
		},
		{
			name:         "environment",
			env:          map[string]string{"BATON_PREFIX": "/baton/billing", "BATON_ID": "web-6499468bf8-8wkjj", "BATON_TTL": " 3 "},
			wantPrefix:   "/baton/billing",
			wantIdentity: "web-6499468bf8-8wkjj",
			wantTTL:      3 * time.Second,
		},
		{
			name:         "options win",
			env:          map[string]string{"BATON_PREFIX": "/baton/billing", "BATON_ID": "web-1", "BATON_TTL": "3"},
			opts:         []Option{WithPrefix("/mine"), WithIdentity("me"), WithTTL(4 * time.Second)},
			wantPrefix:   "/mine",
			wantIdentity: "me",
			wantTTL:      4 * time.Second,
		},
		{
			name:         "hostname and pid without BATON_ID",
			env:          map[string]string{"HOSTNAME": "web-6499468bf8-8wkjj"},
			wantPrefix:   DefaultPrefix,
			wantIdentity: "web-6499468bf8-8wkjj/",
			wantTTL:      DefaultTTL,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"BATON_PREFIX", "BATON_ID", "BATON_TTL"} {
				t.Setenv(k, tc.env[k])
			}
			if h, ok := tc.env["HOSTNAME"]; ok {
				t.Setenv("HOSTNAME", h)
			}
			e, err := New(cli, "jobs", tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(e.Identity(), tc.wantIdentity) {
				t.Errorf("Identity = %q, want %q", e.Identity(), tc.wantIdentity)
			}
			if want := tc.wantPrefix + "/election/jobs/"; e.prefix != want {
				t.Errorf("election prefix = %q, want %q", e.prefix, want)
			}
			if e.opts.ttl != tc.wantTTL {
				t.Errorf("TTL = %v, want %v", e.opts.ttl, tc.wantTTL)
			}
			m, err := NewMutex(cli, "jobs", tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.wantPrefix + "/lock/jobs/"; m.prefix != want || m.opts.ttl != tc.wantTTL {
				t.Errorf("mutex prefix, TTL = %q, %v; want %q, %v", m.prefix, m.opts.ttl, want, tc.wantTTL)
			}
		})
	}
}

// The environment reaches etcd: a holder configured only by BATON_PREFIX and
// BATON_ID is seen under that prefix with that identity.
func TestEnvironmentReachesEtcd(t *testing.T) {
	t.Setenv("BATON_PREFIX", "/baton/billing")
	t.Setenv("BATON_ID", "web-7")
	t.Setenv("BATON_TTL", "2")
	srv := etcdtest.Shared(t)
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 10*time.Second)
	m, err := NewMutex(cli, "report")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	h, err := Holder(ctx, cli, "/baton/billing", "report")
	if err != nil || h.Identity != "web-7" {
		t.Fatalf("Holder = %+v, %v; want web-7 under /baton/billing", h, err)
	}
	resp, err := cli.TimeToLive(ctx, clientv3.LeaseID(mustLease(t, cli, h.Fence.Key)))
	if err != nil || resp.GrantedTTL != 2 {
		t.Fatalf("hold lease TTL = %+v, %v; want 2 from BATON_TTL", resp, err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func mustLease(t *testing.T, cli *clientv3.Client, key string) int64 {
	t.Helper()
	resp, err := cli.Get(deadlineCtx(t, 5*time.Second), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get %s: %v, %v", key, resp, err)
	}
	return resp.Kvs[0].Lease
}

func TestBadEnvironment(t *testing.T) {
	cli := etcdtest.NewClient(t, closedEndpoint(t))
	for _, ttl := range []string{"x", "0", "-1", "1.5", "1500ms", "9000000001", "99999999999999999999", "2500001h"} {
		t.Run(ttl, func(t *testing.T) {
			t.Setenv("BATON_TTL", ttl)
			constructors := map[string]func() error{
				"New":        func() error { _, err := New(cli, "jobs"); return err },
				"NewMutex":   func() error { _, err := NewMutex(cli, "jobs"); return err },
				"NewSession": func() error { _, err := NewSession(deadlineCtx(t, time.Second), cli); return err },
			}
			for name, f := range constructors {
				err := noPanic(f)
				if err == nil || !strings.Contains(err.Error(), "BATON_TTL") || !strings.Contains(err.Error(), fmt.Sprintf("%q", ttl)) {
					t.Errorf("%s with BATON_TTL=%q = %v, want an error naming BATON_TTL and the value", name, ttl, err)
				}
			}
		})
	}
}

func TestBadInputIsAnErrorNamingIt(t *testing.T) {
	cli := etcdtest.NewClient(t, closedEndpoint(t)) // never dialled: validation comes first
	t.Setenv("BATON_ID", "test")
	ttl := WithTTL(2 * time.Second)
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"New nil client", func() error { _, err := New(nil, "jobs", ttl); return err }, "nil etcd client"},
		{"NewMutex nil client", func() error { _, err := NewMutex(nil, "jobs", ttl); return err }, "nil etcd client"},
		{"NewSession nil client", func() error { _, err := NewSession(context.Background(), nil, ttl); return err }, "nil etcd client"},
		// Each of these used to panic, Observe in a goroutine of its own.
		{"Observe nil client", func() error { _, err := Observe(context.Background(), nil, "/baton", "jobs"); return err }, "nil etcd client"},
		{"Holder nil client", func() error { _, err := Holder(context.Background(), nil, "/baton", "jobs"); return err }, "nil etcd client"},
		{"LastClaim nil client", func() error { _, _, _, err := LastClaim(context.Background(), nil, "/baton/k"); return err }, "nil etcd client"},
		{"Fence.Valid nil client", func() error {
			_, err := (Fence{Key: "/baton/k", Revision: 1}).Valid(context.Background(), nil)
			return err
		}, "nil etcd client"},
		{"New empty name", func() error { _, err := New(cli, "", ttl); return err }, "name is empty"},
		{"NewMutex empty name", func() error { _, err := NewMutex(cli, "", ttl); return err }, "name is empty"},
		{"New name with slash", func() error { _, err := New(cli, "a/b", ttl); return err }, `"a/b"`},
		{"NewMutex name with slash", func() error { _, err := NewMutex(cli, "a/b", ttl); return err }, `"a/b"`},
		{"New name with space", func() error { _, err := New(cli, "daily report", ttl); return err }, `"daily report"`},
		{"New long name", func() error { _, err := New(cli, strings.Repeat("x", 201), ttl); return err }, "longer than 200"},
		{"New TTL 500ms", func() error { _, err := New(cli, "jobs", WithTTL(500*time.Millisecond)); return err }, "TTL 500ms"},
		{"NewMutex TTL 1.5s", func() error { _, err := NewMutex(cli, "jobs", WithTTL(1500*time.Millisecond)); return err }, "TTL 1.5s"},
		{"NewSession TTL 1.5s", func() error {
			_, err := NewSession(context.Background(), cli, WithTTL(1500*time.Millisecond))
			return err
		}, "TTL 1.5s"},
		{"New negative TTL", func() error { _, err := New(cli, "jobs", WithTTL(-time.Second)); return err }, "TTL -1s"},
		{"New margin equal to TTL", func() error { _, err := New(cli, "jobs", ttl, WithMargin(2*time.Second)); return err }, "margin 2s"},
		{"NewMutex margin above TTL", func() error { _, err := NewMutex(cli, "jobs", ttl, WithMargin(3*time.Second)); return err }, "margin 3s"},
		{"NewSession negative margin", func() error {
			_, err := NewSession(context.Background(), cli, ttl, WithMargin(-time.Second))
			return err
		}, "margin -1s"},
		{"New prefix ends with slash", func() error { _, err := New(cli, "jobs", ttl, WithPrefix("/baton/")); return err }, `prefix "/baton/"`},
		{"NewMutex prefix ends with slash", func() error { _, err := NewMutex(cli, "jobs", ttl, WithPrefix("/baton/")); return err }, `prefix "/baton/"`},
		{"NewSession empty prefix", func() error {
			_, err := NewSession(context.Background(), cli, ttl, WithPrefix(""))
			return err
		}, "prefix is empty"},
		{"New empty identity", func() error { _, err := New(cli, "jobs", ttl, WithIdentity("")); return err }, "identity is empty"},
		{"Observe name with slash", func() error { _, err := Observe(context.Background(), cli, "/baton", "a/b"); return err }, `"a/b"`},
		{"Run nil lead", func() error {
			e, err := New(cli, "jobs", ttl)
			if err != nil {
				return nil
			}
			return e.Run(context.Background(), nil)
		}, "nil lead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := noPanic(tc.call)
			if err == nil || strings.HasPrefix(err.Error(), "panic") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestTTLBelowServerMinimum(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t) // a member of its own: the test counts every lease
	cli := srv.Client(t)
	ctx := deadlineCtx(t, 10*time.Second)
	opt := WithTTL(time.Second) // valid locally; the embedded server's minimum is 2s

	if _, err := NewSession(ctx, cli, opt); !errors.Is(err, ErrTTLBelowMinimum) {
		t.Fatalf("NewSession = %v, want ErrTTLBelowMinimum", err)
	}
	m, err := NewMutex(cli, "jobs", opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(ctx); !errors.Is(err, ErrTTLBelowMinimum) {
		t.Fatalf("Lock = %v, want ErrTTLBelowMinimum", err)
	}
	// Run gives up at once: retrying cannot help.
	e, err := New(cli, "jobs", opt)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() {
		ran <- e.Run(ctx, func(context.Context, Term) { t.Error("elected with a TTL the server does not grant") })
	}()
	if err := waitFor(t, ran, 5*time.Second, "Run to return"); !errors.Is(err, ErrTTLBelowMinimum) {
		t.Fatalf("Run = %v, want ErrTTLBelowMinimum", err)
	}
	leases, err := cli.Leases(ctx)
	if err != nil || len(leases.Leases) != 0 {
		t.Fatalf("leases left behind: %v, %v", leases, err)
	}
}
