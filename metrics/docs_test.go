package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/batonhq/baton/cronx"
	"github.com/batonhq/baton/election"
	"github.com/batonhq/baton/internal/promtool"
	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"
)

// The alert rules and the Grafana dashboard that the README shows, and
// the unit tests of the rules.
const (
	rulesFile     = "../docs/alerts.rules.yml"
	rulesTestFile = "../docs/alerts.test.yml"
	dashboardFile = "../docs/dashboard.json"
)

// families returns baton's metric families by name, each with a series:
// those of an observer that has seen every kind of event.
func families(t *testing.T) map[string]string {
	t.Helper()
	reg := prometheus.NewRegistry()
	obs, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	obs.OnJobAdded(cronx.JobAdded{Scheduler: "s", Job: "j", Coordinated: true, Mode: cronx.LeaderMode, Reasons: cronx.Reasons(),
		Hooks: []cronx.HookKind{cronx.OnFailure, cronx.OnSuccess}, Recovers: true})
	obs.OnStartAsked(cronx.StartAsked{Scheduler: "s", Job: "j", Release: "r1"})
	obs.OnJobAdded(cronx.JobAdded{Scheduler: "s", Job: "k", Coordinated: true, RunsAtStart: true})
	started := cronx.RunStarted{Scheduler: "s", Job: "j", Fence: election.Fence{Key: "k", Revision: 1}}
	obs.OnRunStarted(started)
	obs.OnRunEnded(cronx.RunEnded{RunStarted: started})
	obs.OnTickNotRun(cronx.TickNotRun{Scheduler: "s", Job: "j", Reason: cronx.ReasonPaused})
	obs.OnLeadershipGained(cronx.Leadership{Scheduler: "s"})
	obs.OnLeadershipLost(cronx.Leadership{Scheduler: "s"})
	obs.OnSessionLost(cronx.Session{Scheduler: "s"})
	obs.OnEtcdRefused(cronx.EtcdRefusal{Scheduler: "s"})
	obs.OnEtcdEmpty(cronx.EtcdEmpty{Scheduler: "s"})
	obs.OnHookFailed(cronx.HookFailed{Scheduler: "s", Job: "j", Hook: cronx.OnFailure})
	obs.OnJobEnded(cronx.JobEnded{Scheduler: "s", Job: "j", Time: time.Unix(1, 0)})
	obs.OnDropped(1)
	gathered, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range gathered {
		out[f.GetName()] = f.GetType().String() // "COUNTER", "HISTOGRAM", ...
	}
	return out
}

var metricName = regexp.MustCompile(`\bbaton_[a-z0-9_]*[a-z0-9]`)

// queried returns the baton metrics that queries name, a histogram's
// _bucket, _sum and _count series counted as the histogram's; those that
// are none of fams are errors.
func queried(t *testing.T, fams map[string]string, where string, queries []string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, q := range queries {
		for _, name := range metricName.FindAllString(q, -1) {
			if _, ok := fams[name]; !ok {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if base, found := strings.CutSuffix(name, suffix); found && fams[base] == "HISTOGRAM" {
						name = base
					}
				}
			}
			if _, ok := fams[name]; !ok {
				t.Errorf("%s queries %s, which package metrics does not have: %s", where, name, q)
				continue
			}
			out[name] = true
		}
	}
	return out
}

// grafanaPanel is what the test reads of a dashboard's panel.
type grafanaPanel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// TestDashboardShowsTheMetricsThatExist: the Grafana dashboard parses, each
// panel queries something, every metric it queries is one of package
// metrics, every one of them is on it, and its queries are PromQL that
// Prometheus parses (as recording rules, through promtool check rules).
func TestDashboardShowsTheMetricsThatExist(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title      string         `json:"title"`
		UID        string         `json:"uid"`
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: title %q, uid %q, %d panels", dashboardFile, d.Title, d.UID, len(d.Panels))
	}
	var queries []string
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if p.Title == "" || p.Type == "" || ids[p.ID] || len(p.Targets) == 0 {
			t.Errorf("panel %d %q (%s): want a unique id, a title, a type and a query", p.ID, p.Title, p.Type)
		}
		ids[p.ID] = true
		refs := map[string]bool{}
		for _, q := range p.Targets {
			if q.Expr == "" || q.RefID == "" || refs[q.RefID] {
				t.Errorf("panel %q: query %q with refId %q: want both, the refId unique", p.Title, q.Expr, q.RefID)
			}
			refs[q.RefID] = true
			queries = append(queries, q.Expr)
		}
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Definition)
	}
	fams := families(t)
	shown := queried(t, fams, dashboardFile, append(slices.Clone(queries), vars...))
	for name := range fams {
		if !shown[name] {
			t.Errorf("%s shows no %s", dashboardFile, name)
		}
	}

	// Grafana's variables, as Prometheus would see them once Grafana has
	// put in their values.
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, q := range queries {
		q = strings.NewReplacer("$__rate_interval", "5m", "$scheduler", ".*").Replace(q)
		fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %q\n", i, q)
	}
	file := t.TempDir() + "/dashboard.rules.yml"
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	promtool.Run(t, "", "check", "rules", file)
}

// TestAlertRulesQueryMetricsThatExist: the alert rules query only metrics
// of package metrics, pass promtool check rules and their unit tests, and
// the README shows them as they are.
func TestAlertRulesQueryMetricsThatExist(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var exprs []string
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	if len(exprs) == 0 {
		t.Fatalf("%s: no rules", rulesFile)
	}
	queried(t, families(t), rulesFile, exprs)

	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```yaml\n"+string(raw)+"```\n") {
		t.Errorf("README.md does not show %s as it is", rulesFile)
	}
	promtool.Run(t, "", "check", "rules", rulesFile)
	promtool.Run(t, "", "test", "rules", rulesTestFile)
}
