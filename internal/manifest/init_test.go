package manifest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// etcdBlock is the service Init adds for one member built like a service
// with `build: .`, indented as a service.
var etcdBlock = comment("  ", headComment(1, Ephemeral)) + `  etcd:
    build: .
    command: baton etcd --name etcd --data-dir /var/lib/etcd --listen-client-urls http://0.0.0.0:2379 --advertise-client-urls http://etcd:2379
    internal: true
    singleton: true
    port: 2379
    health: /health
    liveness:
      path: /livez
      grace: 30
    volumeOptions:
      - emptyDir:
          id: etcd-data
          mountPath: /var/lib/etcd
`

const (
	endpointsItem = "  - BATON_ETCD_ENDPOINTS=http://etcd:2379\n"
	authItems     = "  - BATON_ETCD_USERNAME\n  - BATON_ETCD_PASSWORD\n"
	envItems      = endpointsItem + authItems
)

// comment is text as a YAML comment indented by indent.
func comment(indent, text string) string {
	return indent + "# " + strings.ReplaceAll(text, "\n", "\n"+indent+"# ") + "\n"
}

// TestInitKeepsTheFile checks Init's output byte for byte: every line of
// the input is still there, in order, comments and blank lines included,
// with the new ones where a person would put them. What yaml.v3 writes its
// own way is a comment after a value, with one space before it, and the
// indentation of lists.
func TestInitKeepsTheFile(t *testing.T) {
	tests := []struct {
		name, in, want string
		opts           Options
		changes        []string
	}{{
		name: "comments everywhere",
		in: `# Header: the app.

environment:   # app-level
  - PORT=3000  # the port
  # more to come

services:
  # the web tier
  web:
    build: .   # here
    command: sh -c "baton crontab crontab & exec node server.js"
    port: 3000

  worker:
    build: ./worker
    # no command yet
  # old:
  #   build: ./old

# timers below
timers:
  nightly:
    schedule: "0 3 * * *"
    command: baton run --once nightly --ttl 1h -- bin/nightly
    service: worker
# end
`,
		want: `# Header: the app.

environment: # app-level
  - PORT=3000 # the port
  # more to come
` + envItems + `
services:
  # the web tier
  web:
    build: . # here
    command: sh -c "baton crontab crontab & exec node server.js"
    port: 3000

  worker:
    build: ./worker
    # no command yet
  # old:
  #   build: ./old

` + etcdBlock + `
# timers below
timers:
  nightly:
    schedule: "0 3 * * *"
    command: baton run --once nightly --ttl 1h -- bin/nightly
    service: worker
# end
`,
		changes: []string{"added BATON_ETCD_ENDPOINTS=http://etcd:2379", "added BATON_ETCD_USERNAME", "added BATON_ETCD_PASSWORD", "added service etcd (baton etcd, from the image of service web)"},
	}, {
		name: "no environment: it goes above services, below the file's opening comment",
		in: `# my app
services:
  web:
    build: ./app
    command: baton crontab crontab
`,
		want: `# my app
environment:
` + envItems + `services:
  web:
    build: ./app
    command: baton crontab crontab
` + wiredKeys + strings.Replace(etcdBlock, "build: .", "build: ./app", 1),
		changes: []string{"added BATON_ETCD_ENDPOINTS", "added BATON_ETCD_USERNAME", "added BATON_ETCD_PASSWORD", "added service etcd (baton etcd, from the image of service web)",
			"service web: added BATON_HTTP=:9090, port: 9090, health: /healthz, liveness: {path: /healthz}, internal: true"},
	}, {
		name: "an environment with no entries",
		in: `environment:
services:
  web:
    build: .
`,
		want: "environment:\n" + envItems + "services:\n  web:\n    build: .\n" + etcdBlock,
	}, {
		name:    "no services",
		in:      "environment:\n  - A=1\n",
		want:    "environment:\n  - A=1\n" + envItems + "services:\n" + etcdBlock,
		changes: []string{"added BATON_ETCD_ENDPOINTS", "added BATON_ETCD_USERNAME", "added BATON_ETCD_PASSWORD", "added service etcd (baton etcd, built from .)"},
	}, {
		name: "an empty file",
		in:   "",
		want: "environment:\n" + envItems + "services:\n" + etcdBlock,
	}, {
		name: "a file of comments, with no line break at its end",
		in:   "# nothing yet",
		want: "# nothing yet\nenvironment:\n" + envItems + "services:\n" + etcdBlock,
	}, {
		name: "an etcd service from the etcd image is completed, not duplicated",
		in: `services:
  web:
    build: .
  etcd:
    image: gcr.io/etcd-development/etcd:v3.7.3 # pinned
    scale: 1
`,
		want: `environment:
` + endpointsItem + `services:
  web:
    build: .
  etcd:
    image: gcr.io/etcd-development/etcd:v3.7.3 # pinned
    scale: 1
    command: /usr/local/bin/etcd --name etcd --data-dir /var/lib/etcd --listen-client-urls http://0.0.0.0:2379 --advertise-client-urls http://etcd:2379
    internal: true
    singleton: true
    port: 2379
    health: /health
    liveness:
      path: /livez
      grace: 30
    volumeOptions:
      - emptyDir:
          id: etcd-data
          mountPath: /var/lib/etcd
`,
		changes: []string{"added BATON_ETCD_ENDPOINTS", "service etcd: added command, internal: true, singleton: true, port: 2379, health: /health, liveness, volumeOptions"},
	}, {
		name: "an etcd service with a port gets its health check; its values stay",
		in: `environment:
  - BATON_ETCD_ENDPOINTS=http://etcd:2379
services:
  etcd:
    build: .
    command: baton etcd --listen-client-urls http://0.0.0.0:2379
    port: 2379
    internal: true # by hand
    singleton: true
`,
		want: `environment:
  - BATON_ETCD_ENDPOINTS=http://etcd:2379
` + authItems + `services:
  etcd:
    build: .
    command: baton etcd --listen-client-urls http://0.0.0.0:2379
    port: 2379
    internal: true # by hand
    singleton: true
    health: /health
    liveness:
      path: /livez
      grace: 30
`,
		changes: []string{"added BATON_ETCD_USERNAME", "added BATON_ETCD_PASSWORD", "service etcd: added health: /health, liveness"},
	}, {
		name: "a BATON_ETCD_ENDPOINTS already set is left as it is",
		in: `environment:
  - BATON_ETCD_ENDPOINTS
services:
  web:
    build: .
`,
		want:    "environment:\n  - BATON_ETCD_ENDPOINTS\n" + authItems + "services:\n  web:\n    build: .\n" + etcdBlock,
		changes: []string{"added BATON_ETCD_USERNAME", "added BATON_ETCD_PASSWORD", "added service etcd"},
	}, {
		name: "four-space indentation is kept; an unindented list is indented",
		in: `environment:
- A=1
services:
    web:
        build: .
`,
		want: `environment:
    - A=1
    - BATON_ETCD_ENDPOINTS=http://etcd:2379
    - BATON_ETCD_USERNAME
    - BATON_ETCD_PASSWORD
services:
    web:
        build: .
` + comment("    ", headComment(1, Ephemeral)) + `    etcd:
        build: .
        command: baton etcd --name etcd --data-dir /var/lib/etcd --listen-client-urls http://0.0.0.0:2379 --advertise-client-urls http://etcd:2379
        internal: true
        singleton: true
        port: 2379
        health: /health
        liveness:
            path: /livez
            grace: 30
        volumeOptions:
            - emptyDir:
                id: etcd-data
                mountPath: /var/lib/etcd
`,
	}, {
		name: "CRLF line breaks stay CRLF",
		in:   "services:\r\n  web:\r\n    build: .\r\n",
		want: strings.ReplaceAll("environment:\n"+envItems+"services:\n  web:\n    build: .\n"+etcdBlock, "\n", "\r\n"),
	}, {
		name: "the image option",
		in:   "services:\n  web:\n    build: .\n",
		opts: Options{Image: true},
		want: "environment:\n" + endpointsItem + "services:\n  web:\n    build: .\n" +
			strings.NewReplacer("build: .", "image: "+EtcdImage, "command: baton etcd", "command: /usr/local/bin/etcd").Replace(etcdBlock),
		changes: []string{"added BATON_ETCD_ENDPOINTS", "added service etcd (etcd from " + EtcdImage + ")"},
	}}
	// Each layout again with CRLF line breaks, which stay CRLF.
	for _, tt := range tests[:len(tests):len(tests)] {
		if strings.Contains(tt.in, "\n") && !strings.Contains(tt.in, "\r") {
			tt.name, tt.in, tt.want = tt.name+", CRLF", strings.ReplaceAll(tt.in, "\n", "\r\n"), strings.ReplaceAll(tt.want, "\n", "\r\n")
			tests = append(tests, tt)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustParse(t, tt.in)
			changes, err := Init(d, tt.opts)
			if err != nil {
				t.Fatalf("Init: %v", err)
			}
			if got := string(d.Bytes()); got != tt.want {
				t.Fatalf("Init wrote:\n%s\nwant:\n%s", got, tt.want)
			}
			if len(changes) < len(tt.changes) {
				t.Fatalf("changes %q, want %q", changes, tt.changes)
			}
			for i, c := range tt.changes {
				if !strings.Contains(changes[i], c) {
					t.Errorf("change %d is %q, want it to say %q", i, changes[i], c)
				}
			}
			assertSetUp(t, d, tt.opts)
		})
	}
}

// assertSetUp checks what every Init result must be: a manifest Check finds
// nothing wrong with, that Init leaves as it is.
func assertSetUp(t *testing.T, d *Document, opts Options) {
	t.Helper()
	for _, p := range Check(d) {
		t.Errorf("Check after Init: line %d: %s", p.Line, p.Message)
	}
	before := string(d.Bytes())
	again, err := Init(d, opts)
	if err != nil {
		t.Fatalf("Init again: %v", err)
	}
	if len(again) != 0 || string(d.Bytes()) != before {
		t.Errorf("Init again changed %q:\n%s", again, d.Bytes())
	}
}

// TestInitNeverWritesIntoAnAnchor: on a manifest whose services share an
// anchor through merge keys, Init leaves the anchor and the merge keys as
// written (<<:, not yaml.v3's !!merge <<:) and adds what a service lacks to
// the service itself. What it lacks is judged as Convox reads the service:
// a merge key inside services counts for nothing (pkg/manifest/yaml.go,
// testdata/convox/merge-key.yml), so cron gets BATON_HTTP, port, health and
// liveness of its own, the etcd service builds from . as Convox would build
// web, and Check then reports the merge keys Convox drops.
func TestInitNeverWritesIntoAnAnchor(t *testing.T) {
	anchor := `x-common: &common
  build: ./app
  port: 9090
  health: /healthz
  environment:
    - LOG=info # shared
`
	in := anchor + `
services:
  web:
    <<: *common
    command: node server.js
  cron:
    <<: *common
    command: baton crontab crontab
`
	d, changes := initKeeping(t, in)
	got := string(d.Bytes())
	if !strings.HasPrefix(got, anchor+"\n") || strings.Contains(got, "!!merge") {
		t.Errorf("the anchor or a merge key was rewritten:\n%s", got)
	}
	for _, want := range []string{
		"  cron:\n    <<: *common\n    command: baton crontab crontab\n    environment:\n      - BATON_HTTP=:9090\n    port: 9090\n    health: /healthz\n    liveness:\n      path: /healthz\n    internal: true\n",
		"  etcd:\n    build: .\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Init wrote no %q:\n%s", want, got)
		}
	}
	if !slices.ContainsFunc(changes, func(c string) bool { return strings.HasPrefix(c, "service cron: added BATON_HTTP=:9090") }) {
		t.Errorf("changes %q", changes)
	}
	var merges []int
	for _, p := range Check(d) {
		if p.Rule != Ignored || !strings.Contains(p.Message, "Convox drops this merge key") {
			t.Errorf("Check: line %d: %s", p.Line, p.Message)
		}
		merges = append(merges, p.Line)
	}
	if want := []int{lineOf(t, got, "    <<: *common\n    command: node"), lineOf(t, got, "    <<: *common\n    command: baton")}; !slices.Equal(merges, want) {
		t.Errorf("Check reports merge keys on lines %v, want %v", merges, want)
	}
}

// TestInitReadsQuotedMergeKeys: a quoted "<<" is one Convox merges
// (testdata/full.yml, service inherit), so a service that gets its port
// from one needs nothing, the etcd service copies the merged build, and a
// service whose environment comes from one is left as it is, since the
// environment is the anchor's, and the change says so.
func TestInitReadsQuotedMergeKeys(t *testing.T) {
	in := `x-app: &app
  build:
    path: .
    manifest: Dockerfile.web
  environment:
    - LOG=info
services:
  web:
    "<<": *app
    command: baton crontab crontab
  api:
    "<<": *app
    command: bin/api
    port: 3000
`
	d, changes := initKeeping(t, in)
	got := string(d.Bytes())
	if !strings.Contains(got, "  etcd:\n    build:\n      path: .\n      manifest: Dockerfile.web\n    command: baton etcd") {
		t.Errorf("the etcd service does not copy web's merged build:\n%s", got)
	}
	if slices.ContainsFunc(changes, func(c string) bool { return strings.Contains(c, "BATON_HTTP") }) || strings.Contains(got, "BATON_HTTP") {
		t.Errorf("changes %q:\n%s", changes, got)
	}
	if !slices.ContainsFunc(Notes(d), func(p Problem) bool {
		return p.Line == lineOf(t, got, "  web:") && strings.Contains(p.Message, "note: service web runs baton with no port, so Convox probes nothing and a stuck process stays; init gives it none, as its environment comes from a merge key")
	}) {
		t.Errorf("no note says why web has no probe: %v", Notes(d))
	}
	assertSetUp(t, d, Options{})
}

// TestEncodeKeepsTheFile: encoding a manifest's node tree gives back its
// bytes where yaml.v3 would not on its own: blank lines between entries and
// between list items, plain merge keys (not !!merge <<), four-space
// indentation, indented comments that end the file; with comments, anchors, quoting, flow collections
// and block scalars as they were.
func TestEncodeKeepsTheFile(t *testing.T) {
	src := `# The app.

x-common: &common
  build: .
  environment:
    - A=1 # a comment

    - B=2

environment:
  - C=3

services:
  # the web tier
  web:
    <<: *common
    command: sh -c "baton crontab crontab & exec node server.js"
    port: 3000 # the web port

  # worker:
  #   build: .
  cron:
    "<<": *common
    command: 'baton crontab crontab'
    health: {path: /x, interval: 5}
    test: |
      make test

      make more
    scale: [1, 2]

# timers below
timers:
  nightly:
    schedule: "0 3 * * *"
    command: baton run --once nightly --ttl 1h -- bin/nightly
    service: cron
# end
`
	trailing := strings.TrimSuffix(src, "# end\n") + "\n  # cron2:\n  #   build: .\n" // yaml.v3's foot comment of the document
	for _, in := range []string{src, strings.ReplaceAll(src, "  ", "    "), trailing} {
		d := mustParse(t, in)
		out, err := encode(d.root, d.src)
		if err != nil || string(out) != in {
			t.Errorf("encode: %v:\n%s\nwant:\n%s", err, out, in)
		}
	}
}

// initKeeping runs Init on in and checks that every line of in is kept.
func initKeeping(t *testing.T, in string) (*Document, []string) {
	t.Helper()
	d := mustParse(t, in)
	changes, err := Init(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	assertLinesKept(t, in, string(d.Bytes()))
	return d, changes
}

// assertLinesKept checks that every line of in is in out, in order.
func assertLinesKept(t *testing.T, in, out string) {
	t.Helper()
	rest := strings.Split(out, "\n")
	for _, l := range strings.Split(in, "\n") {
		i := 0
		for i < len(rest) && rest[i] != l {
			i++
		}
		if i == len(rest) {
			t.Fatalf("line %q of the input is gone or out of order:\n%s", l, out)
		}
		rest = rest[i+1:]
	}
}

// TestInitFlowAndBlockScalars checks layouts where what Init adds cannot
// sit as the input has it (a flow collection, which becomes a block one; a
// block scalar that keeps its trailing blank lines): the result still means
// the input plus the additions, comments included.
func TestInitFlowAndBlockScalars(t *testing.T) {
	tests := []struct{ name, in string }{
		{"flow services", "# app\nservices: {web: {build: ., port: 3000}} # all of it\n"},
		{"flow environment", "environment: [A=1, B=2] # two\nservices:\n  web:\n    build: .\n"},
		{"services: {}", "services: {}\n"},
		{"a kept block scalar last", "services:\n  web:\n    build: .\n    test: |+\n      make test\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustParse(t, tt.in)
			var before map[string]any
			if err := yaml.Unmarshal([]byte(tt.in), &before); err != nil {
				t.Fatal(err)
			}
			if _, err := Init(d, Options{}); err != nil {
				t.Fatal(err)
			}
			var after map[string]any
			if err := yaml.Unmarshal(d.Bytes(), &after); err != nil {
				t.Fatalf("result does not parse: %v\n%s", err, d.Bytes())
			}
			services, _ := after["services"].(map[string]any)
			if services["etcd"] == nil {
				t.Fatalf("no etcd service:\n%s", d.Bytes())
			}
			for name, def := range before["services"].(map[string]any) {
				if !equalYAML(services[name], def) {
					t.Errorf("service %s changed: %v, was %v", name, services[name], def)
				}
			}
			for _, l := range strings.Split(tt.in, "\n") {
				if _, comment, ok := strings.Cut(l, "# "); ok && !strings.Contains(string(d.Bytes()), comment) {
					t.Errorf("comment %q lost:\n%s", comment, d.Bytes())
				}
			}
			assertSetUp(t, d, Options{})
		})
	}
}

func equalYAML(a, b any) bool {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	return string(x) == string(y)
}

func TestInitThreeMembers(t *testing.T) {
	d := mustParse(t, "services:\n  web:\n    build: .\n    command: baton crontab crontab\n")
	changes, err := Init(d, Options{Members: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"added BATON_ETCD_ENDPOINTS=http://etcd-0:2379,http://etcd-1:2379,http://etcd-2:2379",
		"added BATON_ETCD_USERNAME", "added BATON_ETCD_PASSWORD",
		"added service etcd-0", "added service etcd-1", "added service etcd-2",
		"service web: added BATON_HTTP=:9090",
	}
	if len(changes) != len(want) {
		t.Fatalf("changes %q, want %q", changes, want)
	}
	for i := range want {
		if !strings.HasPrefix(changes[i], want[i]) {
			t.Errorf("change %d is %q, want %q", i, changes[i], want[i])
		}
	}
	var m struct {
		Services map[string]map[string]any
	}
	if err := yaml.Unmarshal(d.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"etcd-0", "etcd-1", "etcd-2"} {
		s := m.Services[name]
		cmd, _ := s["command"].(string)
		for _, flag := range []string{
			"--name " + name, "--advertise-client-urls http://" + name + ":2379",
			"--listen-peer-urls http://0.0.0.0:2380", "--initial-advertise-peer-urls http://" + name + ":2380",
			"--initial-cluster etcd-0=http://etcd-0:2380,etcd-1=http://etcd-1:2380,etcd-2=http://etcd-2:2380",
		} {
			if !strings.Contains(cmd, flag) {
				t.Errorf("%s: command %q lacks %q", name, cmd, flag)
			}
		}
		if s["port"] != nil || s["health"] != nil || s["liveness"] != nil {
			t.Errorf("%s has port, health or liveness: a readiness check would keep the members apart, and a liveness check restart one that waits for its peers: %v", name, s)
		}
		if ports, _ := s["ports"].([]any); len(ports) != 2 || ports[0] != 2379 || ports[1] != 2380 {
			t.Errorf("%s: ports %v, want [2379 2380]", name, s["ports"])
		}
		if s["singleton"] != true || s["internal"] != true {
			t.Errorf("%s: singleton %v internal %v, want both true", name, s["singleton"], s["internal"])
		}
	}
	assertSetUp(t, d, Options{Members: 3})
	assertSetUp(t, d, Options{}) // without --members, what is there is kept
}

func TestInitRefuses(t *testing.T) {
	tests := []struct {
		name, in string
		opts     Options
		want     string
		conflict bool
	}{
		{"three members beside one", "services:\n  etcd:\n    build: .\n", Options{Members: 3}, "etcd-0, etcd-1, etcd-2", true},
		{"one member beside three", "services:\n  etcd-0:\n    build: .\n  etcd-1:\n    build: .\n", Options{Members: 1}, "etcd-0, etcd-1", true},
		{"one member beside another etcd", "services:\n  coord:\n    command: etcd --name coord\n", Options{Members: 1}, "coord", true},
		{"two members", "services: {}\n", Options{Members: 2}, "want 1 or 3", false},
		{"services is a list", "services:\n  - web\n", Options{}, "line 2: services is a list", false},
		{"services is an alias", "x: &s\n  web: {}\nservices: *s\n", Options{}, "line 3: services is an alias (*s)", false},
		{"environment is a mapping", "environment:\n  A: 1\nservices: {}\n", Options{}, "line 2: environment is a mapping", false},
		{"an etcd service that is an alias", "x: &e\n  build: .\nservices:\n  etcd: *e\n", Options{}, "line 4: service etcd is shared through an anchor (*e) and lacks internal; init writes into no anchor", false},
		{"an etcd service with an anchor", "services:\n  etcd: &e\n    build: .\n  etcd2: *e\n", Options{}, "line 2: service etcd is shared through an anchor (&e)", false},
		{"an environment with an anchor", "environment: &env\n  - A=1\nservices:\n  web:\n    environment: *env\n", Options{}, "line 1: environment has the anchor &env; init writes into no anchor", false},
		{"services from a merge key", "x: &x\n  services:\n    web: {}\n<<: *x\n", Options{}, "line 2: services comes from a merge key", false},
	}
	// Each layout again with CRLF line breaks, which stay CRLF.
	for _, tt := range tests[:len(tests):len(tests)] {
		if strings.Contains(tt.in, "\n") && !strings.Contains(tt.in, "\r") {
			tt.name, tt.in, tt.want = tt.name+", CRLF", strings.ReplaceAll(tt.in, "\n", "\r\n"), strings.ReplaceAll(tt.want, "\n", "\r\n")
			tests = append(tests, tt)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustParse(t, tt.in)
			changes, err := Init(d, tt.opts)
			if err == nil {
				t.Fatalf("Init succeeded with %q:\n%s", changes, d.Bytes())
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			if errors.Is(err, ErrConflict) != tt.conflict {
				t.Errorf("errors.Is(%v, ErrConflict) = %v, want %v", err, !tt.conflict, tt.conflict)
			}
			if string(d.Bytes()) != tt.in {
				t.Errorf("the document changed:\n%s", d.Bytes())
			}
		})
	}
}

// TestInitCompletesTheMembersThere checks that without a member count Init
// completes the cluster the manifest has, and with the matching count adds
// a missing member.
func TestInitCompletesTheMembersThere(t *testing.T) {
	d := mustParse(t, "services:\n  web:\n    build: .\n")
	if _, err := Init(d, Options{Members: 3}); err != nil {
		t.Fatal(err)
	}
	full := string(d.Bytes())

	// Drop etcd-2 and ask again for three: it comes back as it was.
	i := strings.Index(full, "  etcd-2:")
	d = mustParse(t, full[:i])
	changes, err := Init(d, Options{Members: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || !strings.HasPrefix(changes[0], "added service etcd-2") {
		t.Errorf("changes %q, want only etcd-2 added", changes)
	}
	if string(d.Bytes()) != full {
		t.Errorf("got:\n%s\nwant:\n%s", d.Bytes(), full)
	}
}
