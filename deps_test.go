package baton_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// The SDK packages an app imports, and the internal ones they link, and what
// each may not link. election exports what an application needs and links
// none of the machinery only cronx uses.
var sdk = map[string][]string{
	"./election": {"go.etcd.io/etcd/server/v3", "github.com/robfig/cron/v3", "github.com/batonhq/baton/cronx", "github.com/batonhq/baton/convox",
		"github.com/batonhq/baton/internal/claims", "github.com/batonhq/baton/internal/emptyetcd"},
	"./internal/claimcond": {"go.etcd.io/etcd/server/v3", "github.com/batonhq/baton/election", "github.com/batonhq/baton/cronx", "github.com/batonhq/baton/convox"},
	"./internal/claims":    {"go.etcd.io/etcd/server/v3", "github.com/robfig/cron/v3", "github.com/batonhq/baton/cronx", "github.com/batonhq/baton/convox"},
	"./internal/emptyetcd": {"go.etcd.io/etcd/server/v3", "github.com/batonhq/baton/election", "github.com/batonhq/baton/cronx", "github.com/batonhq/baton/convox"},
	"./internal/leasepool": {"go.etcd.io/etcd/server/v3", "github.com/robfig/cron/v3", "github.com/batonhq/baton/cronx", "github.com/batonhq/baton/convox"},
	"./cronx":              {"go.etcd.io/etcd/server/v3", "github.com/batonhq/baton/convox", "github.com/batonhq/baton/metrics"},
	"./metrics":            {"go.etcd.io/etcd/server/v3", "github.com/batonhq/baton/convox"},
	"./convox":             {"go.etcd.io/etcd/server/v3"},
	"./statuspage":         {"go.etcd.io/etcd/server/v3", "github.com/batonhq/baton/convox"},
}

// TestSDKDoesNotLinkAnEtcdServer checks the dependency rules of DESIGN.md:
// an app that imports the SDK links no etcd server, and nothing imports
// upward.
func TestSDKDoesNotLinkAnEtcdServer(t *testing.T) {
	for pkg, banned := range sdk {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, b := range banned {
				if dep == b || strings.HasPrefix(dep, b+"/") {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}

// TestExamplesUseThePublicPackagesOnly checks that every example builds on
// what a user can import: it imports no package of internal/, and links no
// etcd server (an example that needs etcd starts `baton etcd` or reads
// BATON_ETCD_ENDPOINTS).
func TestExamplesUseThePublicPackagesOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./examples/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list ./examples/...: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 2 {
		t.Fatalf("go list ./examples/... found %d packages; want the examples:\n%s", len(lines), out)
	}
	under := func(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }
	for _, line := range lines {
		f := strings.Split(line, "|")
		for _, imp := range strings.Fields(f[1]) {
			if under(imp, "github.com/batonhq/baton/internal") {
				t.Errorf("%s imports %s", f[0], imp)
			}
		}
		for _, dep := range strings.Fields(f[2]) {
			if under(dep, "go.etcd.io/etcd/server/v3") {
				t.Errorf("%s links %s", f[0], dep)
			}
		}
	}
}

// allowedModules are the modules baton may require directly: etcd (whose
// client API also brings zap for its logger and gRPC for dial options),
// robfig/cron, pflag, yaml.v3 for editing convox.yml with its comments,
// Prometheus's client_golang for the metrics package, and golang.org/x/sys
// (in the graph through etcd) for the prctl(2) that makes the baton command
// a child subreaper, and google.golang.org/protobuf (in the graph through
// etcd) for baton etcd's reading of the member metadata in its write-ahead
// log.
var allowedModules = []string{
	"go.etcd.io/etcd/",
	"go.uber.org/zap",
	"google.golang.org/grpc",
	"github.com/robfig/cron/v3",
	"github.com/spf13/pflag",
	"gopkg.in/yaml.v3",
	"github.com/prometheus/client_golang",
	"golang.org/x/sys",
	"google.golang.org/protobuf",
}

func TestDirectDependenciesAreTheAgreedOnes(t *testing.T) {
	out, err := exec.Command("go", "mod", "edit", "-json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var mod struct {
		Require []struct {
			Path     string
			Indirect bool
		}
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	for _, r := range mod.Require {
		if r.Indirect {
			continue
		}
		ok := false
		for _, a := range allowedModules {
			ok = ok || strings.HasPrefix(r.Path, a)
		}
		if !ok {
			t.Errorf("go.mod requires %s directly; DESIGN.md allows %v", r.Path, allowedModules)
		}
	}
}
