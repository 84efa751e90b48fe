package convox

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/etcdtest"
)

func setenv(t *testing.T, env map[string]string) {
	t.Helper()
	for _, k := range []string{"APP", "RACK", "SERVICE", "RELEASE", "BUILD", "PORT", "HOSTNAME",
		"BATON_ETCD_ENDPOINTS", "BATON_PREFIX", "BATON_ID"} {
		t.Setenv(k, env[k])
	}
}

var convoxEnv = map[string]string{
	"APP": "billing", "RACK": "production", "SERVICE": "web", "RELEASE": "RABCDEF",
	"BUILD": "BABCDEF", "PORT": "3000", "HOSTNAME": "web-6499468bf8-8wkjj",
}

func with(base map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		inConvox  bool
		endpoints string
		prefix    string
		identity  string
	}{
		{"convox defaults", convoxEnv, true, DefaultEndpoint, "/baton/billing", fmt.Sprintf("web-6499468bf8-8wkjj/%d", os.Getpid())},
		{"BATON variables win", with(convoxEnv, "BATON_ETCD_ENDPOINTS", "http://etcd-0:2379,http://etcd-1:2379",
			"BATON_PREFIX", "/jobs", "BATON_ID", "web-a"), true, "http://etcd-0:2379,http://etcd-1:2379", "/jobs", "web-a"},
		{"outside convox nothing is derived", map[string]string{"HOSTNAME": "laptop"}, false, "", "", ""},
		{"outside convox BATON variables apply", map[string]string{"BATON_ETCD_ENDPOINTS": "127.0.0.1:2379", "BATON_ID": "me"},
			false, "127.0.0.1:2379", "", "me"},
		{"APP alone is not convox", map[string]string{"APP": "billing"}, false, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setenv(t, tt.env)
			c := Load()
			if c.InConvox != tt.inConvox {
				t.Errorf("InConvox = %v, want %v", c.InConvox, tt.inConvox)
			}
			if got := strings.Join(c.Connection.Endpoints, ","); got != tt.endpoints {
				t.Errorf("endpoints %q, want %q", got, tt.endpoints)
			}
			if c.Prefix != tt.prefix || c.Identity != tt.identity {
				t.Errorf("prefix %q identity %q, want %q %q", c.Prefix, c.Identity, tt.prefix, tt.identity)
			}
			if s := c.String(); !strings.HasPrefix(s, "convox: ") {
				t.Errorf("String() = %q", s)
			}
			if !tt.inConvox && !c.Configured() {
				if _, err := c.Client(); err == nil {
					t.Error("Client() without any etcd configured did not fail")
				}
			}
		})
	}
}

// TestCronOptionsCoordinateUnderTheAppPrefix runs a Cron set up by Load in a
// Convox-like environment against an embedded etcd standing in for the
// bundled service, and finds its claims under /baton/<APP>.
func TestCronOptionsCoordinateUnderTheAppPrefix(t *testing.T) {
	srv := etcdtest.Start(t)
	setenv(t, with(convoxEnv, "BATON_ETCD_ENDPOINTS", srv.Endpoint()))
	cfg := Load()
	cli, err := cfg.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	ran := make(chan cronx.Info, 4)
	c := cronx.New(cfg.CronOptions(cli, cronx.WithSeconds(), cronx.WithElection(election.WithTTL(2*time.Second)))...)
	if _, err := c.AddJob("* * * * * *", cronx.Named("report", cronx.ContextFunc(func(ctx context.Context) error {
		info, _ := cronx.InfoFrom(ctx)
		ran <- info
		return nil
	}))); err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
	var info cronx.Info
	select {
	case info = <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("no run within 10s")
	}
	if want := fmt.Sprintf("web-6499468bf8-8wkjj/%d", os.Getpid()); info.Instance != want {
		t.Errorf("instance %q, want %q: the Convox process id and the pid", info.Instance, want)
	}
	resp, err := cli.Get(context.Background(), "/baton/billing/jobs/cron/report/last")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("no claim under /baton/billing: %v %v", resp, err)
	}
}
