package manifest

import (
	"strings"
	"testing"
)

// problem is an expected problem: on the line that holds at, with msg in
// its message, about rule (baton's unless given).
type problem struct {
	at, msg string
	rule    Rule
}

// etcdOK is a bundled etcd service Check has nothing to say about.
const etcdOK = `  etcd:
    build: .
    command: baton etcd --name etcd --listen-client-urls http://0.0.0.0:2379 --advertise-client-urls http://etcd:2379
    internal: true
    singleton: true
    port: 2379
    health: /health
`

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []problem
	}{
		// Manifests that are right.
		{name: "empty", in: ""},
		{name: "a web app without baton", in: "services:\n  web:\n    build: .\n    port: 3000\n"},
		{name: "baton with the bundled etcd and no variable (http://etcd:2379 is the default)",
			in: "services:\n  web:\n    command: baton crontab crontab\n" + etcdOK},
		{name: "an etcd outside the app", in: `environment:
  - BATON_ETCD_ENDPOINTS=https://etcd.example.com:2379,10.0.0.7:2379
services:
  web:
    command: baton crontab crontab
`},
		{name: "the etcd app's layout: etcd.NAME, no etcd in the app", in: "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd.shop-etcd:2379\n  - BATON_ETCD_USERNAME\n  - BATON_ETCD_PASSWORD\nservices:\n  web:\n    command: baton crontab crontab\n"},
		{name: "endpoints set with convox env set", in: "environment:\n  - BATON_ETCD_ENDPOINTS\nservices:\n  web:\n    command: baton crontab crontab\n"},
		{name: "a cluster-local name", in: "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd.myapp.convox.local:2379\nservices:\n" + etcdOK},
		// Forms from convox/convox pkg/manifest/testdata/full.yml and its
		// reference: a quoted merge key, a nested environment list, "*", the
		// port, ports and scale forms of yaml.go, YAML 1.1 booleans, scale min
		// and max (testdata/autoscale-combined.yml), and a timer's
		// concurrency and parallelCount (docs/reference/primitives/app/timer.md).
		{name: "forms Convox accepts", in: `x-defaults: &defaults
  build: .
anchored: &also {}
environment:
  - A=1
  - B=two=2
  - "*"
  - [C=3, D=4]
services:
  web:
    "<<": *defaults
    port: https:3000
    ports:
      - 5000
      - 5001/udp
      - 5002/sctp
    scale:
      count: 1-3
      cpu: 256
      targets:
        cpu: 50
    deployment:
      minimum: 0
      maximum: 200
    health:
      path: /check
      interval: 5
    singleton: yes
    sticky: on
    domain: a.example.com,b.example.com
  api:
    image: example/api:1
    port:
      port: 8080
      scheme: tcp
    scale: "2"
  big:
    port: 70000
    scale:
      min: 1
      max: 8
      autoscale:
        cpu:
          threshold: 70
  grpc:
    port: grpc:5551
    scale:
      count:
        min: 1
        max: 4
` + etcdOK + `timers:
  nightly:
    schedule: "0 3 * * ? *"
    command: baton run --once nightly --ttl 1h -- bin/nightly
    service: web
    concurrency: Forbid
    parallelCount: 1
    annotations:
      - a.example.com/b=c
`},
		// convox/convox pkg/manifest/testdata/full.yml merges with a quoted
		// "<<", and its manifest_test.go expects the merged keys.
		{name: "a quoted merge key", in: "x-etcd: &etcd\n" + strings.TrimPrefix(etcdOK, "  etcd:\n") + "services:\n  etcd:\n    \"<<\": *etcd\n"},
		{name: "three members", in: threeMembers},

		// baton finds no etcd.
		{name: "baton, no variable, no etcd service",
			in:   "services:\n  web:\n    command: sh -c 'baton crontab crontab & exec node server.js'\n",
			want: []problem{{"command:", "service web runs baton, but no etcd is reachable: BATON_ETCD_ENDPOINTS is not set and there is no service etcd", Baton}}},
		{name: "a timer through baton, no etcd",
			in:   "services:\n  web:\n    build: .\ntimers:\n  report:\n    schedule: '*/5 * * * *'\n    command: baton run --once report --ttl 4m -- node report.js\n    service: web\n",
			want: []problem{{"command: baton run", "timer report runs baton, but no etcd is reachable", Baton}}},
		{name: "the variable names a service that is not there",
			in:   "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd2:2379\nservices:\n  web:\n    command: baton crontab crontab\n" + etcdOK,
			want: []problem{{"etcd2", "environment: BATON_ETCD_ENDPOINTS: http://etcd2:2379 names service etcd2, but there is no service etcd2", Baton}}},
		{name: "the variable names a proxy, which need not be etcd",
			in: "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd-proxy:2379\nservices:\n  web:\n    command: baton crontab crontab\n  etcd-proxy:\n    image: envoyproxy/envoy:v1.31\n    command: envoy -c /etc/envoy.yaml\n    port: 2379\n    internal: true\n    scale: 2\n"},
		{name: "the variable names an etcd image with defaults",
			in: "environment:\n  - BATON_ETCD_ENDPOINTS=http://coord:2379\nservices:\n  coord:\n    image: bitnami/etcd:3\n    port: 2379\n",
			want: []problem{
				{"  coord:", "service coord runs etcd but is not singleton: true", Baton},
				{"  coord:", "service coord runs etcd but is not internal: true", Baton},
			}},
		{name: "a service's own variable names a service that is not there",
			in:   "services:\n  web:\n    command: baton crontab crontab\n    environment:\n      - BATON_ETCD_ENDPOINTS=http://coordinator:2379\n" + etcdOK,
			want: []problem{{"coordinator", "service web: environment: BATON_ETCD_ENDPOINTS: http://coordinator:2379 names service coordinator", Baton}}},
		{name: "the variable names a service with no port",
			in:   "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd:2379\nservices:\n  etcd:\n    command: baton etcd --listen-client-urls http://0.0.0.0:2379\n    internal: true\n    singleton: true\n",
			want: []problem{{"BATON_ETCD", "names service etcd, which has no port: or ports:, so Convox gives it no address", Baton}}},
		{name: "the variable names a port the service does not expose",
			in:   "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd:12379\nservices:\n" + etcdOK,
			want: []problem{{"BATON_ETCD", "http://etcd:12379: service etcd does not expose port 12379 (it has 2379)", Baton}}},
		{name: "a service's bare variable cancels the app's default",
			in:   "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd:2379\nservices:\n  web:\n    environment:\n      - BATON_ETCD_ENDPOINTS\n" + etcdOK,
			want: []problem{{"      - BATON_ETCD_ENDPOINTS", "service web: environment lists BATON_ETCD_ENDPOINTS without a value, which overrides the app-level default", Baton}}},

		// etcd services that would split or never start.
		{name: "etcd neither singleton nor internal, scaled",
			in: "services:\n  etcd:\n    command: baton etcd --listen-client-urls http://0.0.0.0:2379\n    port: 2379\n    health: /health\n    singleton: false\n    scale: 2\n",
			want: []problem{
				{"singleton: false", "service etcd runs etcd but is not singleton: true", Baton},
				{"  etcd:", "service etcd runs etcd but is not internal: true", Baton},
				{"scale: 2", "service etcd runs etcd at scale 2: each process would be a separate one-member cluster", Baton},
			}},
		{name: "etcd autoscaled, or an agent",
			in: "services:\n  etcd:\n    image: gcr.io/etcd-development/etcd:v3.7.3\n    command: etcd --listen-client-urls=http://0.0.0.0:2379\n    internal: true\n    singleton: true\n    agent: true\n    scale:\n      count: 1-3\n    ports: [2379]\n",
			want: []problem{
				{"agent: true", "service etcd runs etcd as an agent", Baton},
				{"scale:", "service etcd runs etcd at scale 3", Baton},
			}},
		{name: "etcd on Convox's default health path",
			in:   "services:\n  etcd:\n    command: baton etcd --listen-client-urls http://0.0.0.0:2379\n    internal: true\n    singleton: true\n    port: 2379\n",
			want: []problem{{"  etcd:", "service etcd: port 2379 gets Convox's readiness check on /, which etcd answers with 404", Baton}}},
		{name: "etcd listening on loopback only",
			in:   "services:\n  etcd:\n    command: baton etcd --name etcd\n    internal: true\n    singleton: true\n    port: 2379\n    health: /health\n",
			want: []problem{{"command:", "service etcd: etcd serves clients on 127.0.0.1 only", Baton}}},
		{name: "the etcd image with no command",
			in:   "services:\n  etcd:\n    image: gcr.io/etcd-development/etcd:v3.7.3\n    internal: true\n    singleton: true\n    port: 2379\n",
			want: []problem{{"image:", "service etcd runs etcd's image without a command: etcd then serves 127.0.0.1 only", Baton}}},
		{name: "etcd's volume where etcd does not keep its data",
			in:   "services:\n  etcd:\n    command: baton etcd --data-dir /var/lib/etcd --listen-client-urls http://0.0.0.0:2379\n    internal: true\n    singleton: true\n    port: 2379\n    health: /health\n    volumeOptions:\n      - awsEfs:\n          id: etcd-data\n          accessMode: ReadWriteOnce\n          mountPath: /data\n",
			want: []problem{{"volumeOptions:", "service etcd keeps etcd's data in /var/lib/etcd, but its volume is mounted on /data, so the data is not on it", Baton}}},
		{name: "etcd's volume and no --data-dir",
			in:   "services:\n  etcd:\n    command: baton etcd --listen-client-urls http://0.0.0.0:2379\n    internal: true\n    singleton: true\n    port: 2379\n    health: /health\n    volumeOptions:\n      - emptyDir:\n          id: etcd-data\n          mountPath: /var/lib/etcd/\n",
			want: []problem{{"volumeOptions:", "service etcd mounts a volume on /var/lib/etcd, but etcd keeps its data in its working directory (no --data-dir): give it --data-dir /var/lib/etcd", Baton}}},
		{name: "etcd's data under its volume",
			in: "services:\n  etcd:\n    command: baton etcd --data-dir /var/lib/etcd/member --listen-client-urls http://0.0.0.0:2379\n    internal: true\n    singleton: true\n    port: 2379\n    health: /health\n    volumeOptions:\n      - emptyDir:\n          id: etcd-data\n          mountPath: /var/lib/etcd\n"},
		{name: "a member of three with port:",
			in:   strings.Replace(threeMembers, "    ports: [2379, 2380] # etcd-0\n", "    port: 2379\n    health: /health\n    ports: [2380]\n", 1),
			want: []problem{{"    port: 2379", "service etcd-0 is one of 3 etcd members and has port:, so Convox checks its readiness", Baton}}},
		{name: "a member whose peer port is not exposed",
			in:   strings.Replace(threeMembers, "    ports: [2379, 2380] # etcd-1\n", "    ports: [2379] # etcd-1\n", 1),
			want: []problem{{"--name etcd-0", "member etcd-1 at http://etcd-1:2380, but service etcd-1 does not expose port 2380", Baton}, {"--name etcd-1", "service etcd-1 does not expose port 2380", Baton}, {"--name etcd-2", "service etcd-1 does not expose port 2380", Baton}}},
		{name: "a member that is not a service",
			in:   strings.Replace(threeMembers, "etcd-2=http://etcd-2:2380", "etcd-3=http://etcd-3:2380", -1),
			want: []problem{{"--name etcd-0", "names member etcd-3 at http://etcd-3:2380, but there is no service etcd-3", Baton}, {"--name etcd-1", "no service etcd-3", Baton}, {"--name etcd-2", "no service etcd-3", Baton}}},

		// Timers.
		{name: "a timer that runs its command directly",
			in:   "services:\n  web:\n    build: .\ntimers:\n  cleanup:\n    schedule: '0 3 * * *'\n    command: bin/cleanup\n    service: web\n",
			want: []problem{{"bin/cleanup", `timer cleanup runs "bin/cleanup" directly: a Convox timer is a Kubernetes CronJob, which may start one schedule twice`, Baton}}},
		// What Convox's parser drops without a word.
		// Convox's parser (yaml.v2's Unmarshal into the structs of
		// pkg/manifest) drops keys it does not know.
		{name: "unknown keys", in: "servics:\n  web:\n    build: .\nservices:\n  web:\n    singelton: true\n    enviroment:\n      - A=1\n    x-mine: 1\nresources:\n  db:\n    type: postgres\n    option: {}\nx-notes: free\n",
			want: []problem{
				{"servics:", `unknown key "servics" (did you mean services?); Convox ignores keys it does not know`, Ignored},
				{"singelton:", `service web: unknown key "singelton" (did you mean singleton?)`, Ignored},
				{"enviroment:", `(did you mean environment?)`, Ignored},
				{"x-mine:", `service web: unknown key "x-mine"; Convox ignores`, Ignored},
				{"option:", `resource db: unknown key "option" (did you mean options?)`, Ignored},
			}},
		// ServiceHealth's UnmarshalYAML (yaml.go) reads grace, path,
		// interval, timeout, disable and port; ServiceLiveness (service.go)
		// has no grpcService; Resource (resource.go) has an image.
		{name: "unknown keys of health and liveness", in: "resources:\n  cache:\n    type: redis\n    image: redis:7\nservices:\n  web:\n    port: 3000\n    health:\n      pth: /up\n      grpcService: shop.Web\n    liveness:\n      path: /live\n      failureTreshold: 5\n",
			want: []problem{
				{"pth:", `service web: health: unknown key "pth" (did you mean path?)`, Ignored},
				{"grpcService:", `service web: health: unknown key "grpcService"`, Ignored},
				{"failureTreshold:", `service web: liveness: unknown key "failureTreshold" (did you mean failureThreshold?)`, Ignored},
			}},
		// Services' UnmarshalYAML (yaml.go) reads the services into a
		// yaml.v2 MapSlice, which drops a merge key at any depth; baton's
		// rules then read the etcd service as Convox does, without what the
		// anchor held. testdata/convox/merge-key.yml has Convox's verdict.
		{name: "merge keys inside services", in: `x-etcd: &etcd
  internal: true
  singleton: true
  port: 2379
  health: /health
x-health: &health
  path: /check
x-scale: &scale
  scale: 2
services:
  etcd:
    <<: *etcd
    command: baton etcd --name etcd --listen-client-urls http://0.0.0.0:2379
  web:
    build: .
    port: 3000
    health:
      <<: *health
      grace: 10
  worker:
    <<: [*scale]
    build: .
`,
			want: []problem{
				{"<<: *etcd", "service etcd: Convox drops this merge key and all it brings (internal, singleton, port, health): it reads services entry by entry with yaml.v2", Ignored},
				{"  etcd:", "service etcd runs etcd but is not singleton: true", Baton},
				{"  etcd:", "service etcd runs etcd but is not internal: true", Baton},
				{"<<: *health", `service web: health: Convox drops this merge key and all it brings (path)`, Ignored},
				{"<<: [*scale]", `service worker: Convox drops this merge key and all it brings (scale): it reads services entry by entry with yaml.v2, which loses a merge key there (pkg/manifest/yaml.go), and since Convox's defaults see those keys in the merged file, the service gets no process at all (scale 0); write those keys out, or quote the key ("<<": [*scale])`, Ignored},
			}},
		{name: "etcd's liveness check on a path etcd does not serve",
			in:   "services:\n" + strings.Replace(etcdOK, "    health: /health\n", "    health: /health\n    liveness:\n      path: /healthz\n", 1),
			want: []problem{{"liveness:", "service etcd: port 2379 gets Convox's liveness check on /healthz, which etcd answers with 404, so Kubernetes restarts it again and again", Baton}}},
		{name: "etcd's liveness check on /livez",
			in: "services:\n" + strings.Replace(etcdOK, "    health: /health\n", "    health: /health\n    liveness:\n      path: /livez\n      grace: 30\n", 1)},
		// Environment in convox/convox pkg/manifest/yaml.go: a list of strings
		// (and lists of them); other entries dropped. Anything but a list
		// Convox refuses itself.
		{name: "environment entries", in: `environment:
  - PORT: 3000
  - 3000
services:
  web:
    environment:
      LOG: info
`,
			want: []problem{
				{"PORT: 3000", "environment entry PORT: PORT is a mapping, which Convox drops without a word; write - PORT=3000", Ignored},
				{"- 3000", "environment entry is the number 3000, which Convox drops without a word", Ignored},
			}},
		// unmarshalMapSlice in convox/convox pkg/manifest/yaml.go reads the
		// entries of a section in order, keeping both of a name given twice;
		// within a service, yaml.v2 keeps the last of a key.
		{name: "given twice", in: "services:\n  web:\n    build: .\n    port: 3000\n    port: 4000\n  web:\n    image: x\n",
			want: []problem{
				{"port: 4000", `key "port" is given twice (also on line 4); Convox keeps only this one`, Ignored},
				{"  web:\n    image", `"web" is defined twice (also on line 2); Convox reads both entries under one name`, Ignored},
			}},
		// At the top level, Manifest's fields are decoded by yaml.v2 into a
		// struct, which calls Environment's, Services', Timers' and
		// Resources' UnmarshalYAML once for each block on the same value;
		// each appends (pkg/manifest/yaml.go): Convox reads every block.
		{name: "environment given twice", in: "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd.shop-etcd:2379\nservices:\n  web:\n    build: .\n    command: baton crontab crontab\nenvironment:\n  - OTHER=1\n",
			want: []problem{
				{"environment:\n  - OTHER", `key "environment" is given twice (also on line 1); Convox reads both, the entries of this one after those of the first`, Ignored},
			}},
		{name: "services given twice, etcd in the first", in: "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd-0:2379\nservices:\n  etcd-0:\n    command: baton etcd --name etcd-0 --listen-client-urls http://0.0.0.0:2379\n    internal: true\n    singleton: true\n    port: 2379\n    health: /health\nservices:\n  web:\n    build: .\n    command: baton crontab crontab\n",
			want: []problem{
				{"services:\n  web", `key "services" is given twice (also on line 3); Convox reads both, the entries of this one after those of the first`, Ignored},
			}},
		{name: "timers given twice", in: "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd.shop-etcd:2379\nservices:\n  web:\n    build: .\ntimers:\n  a:\n    schedule: \"0 * * * *\"\n    service: web\n    command: bin/a\ntimers:\n  b:\n    schedule: \"0 * * * *\"\n    service: web\n    command: bin/b\n  a:\n    schedule: \"0 * * * *\"\n    service: web\n    command: bin/c\n",
			want: []problem{
				{"timers:\n  b", `key "timers" is given twice (also on line 6); Convox reads both`, Ignored},
				{"bin/a", `timer a runs "bin/a" directly`, Baton},
				{"bin/b", `timer b runs "bin/b" directly`, Baton},
				{"  a:\n    schedule: \"0 * * * *\"\n    service: web\n    command: bin/c", `"a" is defined twice (also on line 7); Convox reads both entries under one name`, Ignored},
				{"bin/c", `timer a runs "bin/c" directly`, Baton},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(mustParse(t, tt.in))
			matched := make([]bool, len(got))
			for _, w := range tt.want {
				line := lineOf(t, tt.in, w.at)
				found := false
				for i, p := range got {
					if !matched[i] && p.Line == line && strings.Contains(p.Message, w.msg) && p.Rule == w.rule {
						matched[i], found = true, true
						break
					}
				}
				if !found {
					t.Errorf("no problem on line %d (%q) saying %q, rule %v", line, strings.TrimSpace(w.at), w.msg, w.rule)
				}
			}
			for i, p := range got {
				if !matched[i] {
					t.Errorf("unexpected problem: line %d: %s", p.Line, p.Message)
				}
			}
		})
	}
}

// lineOf returns the number of the first line of src that holds at.
func lineOf(t *testing.T, src, at string) int {
	t.Helper()
	i := strings.Index(src, at)
	if i < 0 {
		t.Fatalf("%q is not in the manifest", at)
	}
	return strings.Count(src[:i], "\n") + 1
}

const threeMembers = `environment:
  - BATON_ETCD_ENDPOINTS=http://etcd-0:2379,http://etcd-1:2379,http://etcd-2:2379
services:
  web:
    build: .
    command: baton crontab crontab
  etcd-0:
    command: baton etcd --name etcd-0 --listen-client-urls http://0.0.0.0:2379 --listen-peer-urls http://0.0.0.0:2380 --initial-cluster etcd-0=http://etcd-0:2380,etcd-1=http://etcd-1:2380,etcd-2=http://etcd-2:2380
    internal: true
    singleton: true
    ports: [2379, 2380] # etcd-0
  etcd-1:
    command: baton etcd --name etcd-1 --listen-client-urls http://0.0.0.0:2379 --listen-peer-urls http://0.0.0.0:2380 --initial-cluster etcd-0=http://etcd-0:2380,etcd-1=http://etcd-1:2380,etcd-2=http://etcd-2:2380
    internal: true
    singleton: true
    ports: [2379, 2380] # etcd-1
  etcd-2:
    command: baton etcd --name etcd-2 --listen-client-urls http://0.0.0.0:2379 --listen-peer-urls http://0.0.0.0:2380 --initial-cluster etcd-0=http://etcd-0:2380,etcd-1=http://etcd-1:2380,etcd-2=http://etcd-2:2380
    internal: true
    singleton: true
    ports: [2379, 2380] # etcd-2
`
