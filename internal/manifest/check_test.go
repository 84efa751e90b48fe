package manifest

import (
	"strings"
	"testing"
)

// problem is an expected problem: on the line that holds at, with msg in
// its message.
type problem struct{ at, msg string }

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
		{name: "endpoints set with convox env set", in: "environment:\n  - BATON_ETCD_ENDPOINTS\nservices:\n  web:\n    command: baton crontab crontab\n"},
		{name: "a cluster-local name", in: "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd.myapp.convox.local:2379\nservices:\n" + etcdOK},
		{name: "forms Convox accepts", in: `x-defaults: &defaults
  build: .
anchored: &also {}
environment:
  - A
  - B=two=2
  - "*"
  - [C=3, D]
services:
  web:
    <<: *defaults
    port: https:3000
    ports:
      - 5000
      - 5001/udp
      - port: 5002
        protocol: tcp
    scale:
      count: 1-3
      cpu: 256
      memory: 512
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
    termination:
      grace: 45
    domain: a.example.com,b.example.com
    volumeOptions:
      - emptyDir:
          id: scratch
          mountPath: /scratch
          medium: Memory
  api:
    image: example/api:1
    port:
      port: 8080
      scheme: http
    scale: "2"
  grpc:
    port: grpc:5551
    scale:
      count:
        min: 1
        max: 4
` + etcdOK + `timers:
  nightly:
    schedule: "0 3 * * *"
    command: baton run --once nightly --ttl 1h -- bin/nightly
    service: web
    concurrencyPolicy: Forbid
`},
		{name: "three members", in: threeMembers},

		// baton finds no etcd.
		{name: "baton, no variable, no etcd service",
			in:   "services:\n  web:\n    command: sh -c 'baton crontab crontab & exec node server.js'\n",
			want: []problem{{"command:", "service web runs baton, but no etcd is reachable: BATON_ETCD_ENDPOINTS is not set and there is no service etcd"}}},
		{name: "a timer through baton, no etcd",
			in:   "services:\n  web:\n    build: .\ntimers:\n  report:\n    schedule: '*/5 * * * *'\n    command: baton run --once report --ttl 4m -- node report.js\n    service: web\n",
			want: []problem{{"command: baton run", "timer report runs baton, but no etcd is reachable"}}},
		{name: "the variable names a service that is not there",
			in:   "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd2:2379\nservices:\n  web:\n    command: baton crontab crontab\n" + etcdOK,
			want: []problem{{"etcd2", "environment: BATON_ETCD_ENDPOINTS: http://etcd2:2379 names service etcd2, but there is no service etcd2"}}},
		{name: "the variable names a proxy, which need not be etcd",
			in: "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd-proxy:2379\nservices:\n  web:\n    command: baton crontab crontab\n  etcd-proxy:\n    image: envoyproxy/envoy:v1.31\n    command: envoy -c /etc/envoy.yaml\n    port: 2379\n    internal: true\n    scale: 2\n"},
		{name: "the variable names an etcd image with defaults",
			in: "environment:\n  - BATON_ETCD_ENDPOINTS=http://coord:2379\nservices:\n  coord:\n    image: bitnami/etcd:3\n    port: 2379\n",
			want: []problem{
				{"  coord:", "service coord runs etcd but is not singleton: true"},
				{"  coord:", "service coord runs etcd but is not internal: true"},
			}},
		{name: "a service's own variable names a service that is not there",
			in:   "services:\n  web:\n    command: baton crontab crontab\n    environment:\n      - BATON_ETCD_ENDPOINTS=http://coordinator:2379\n" + etcdOK,
			want: []problem{{"coordinator", "service web: environment: BATON_ETCD_ENDPOINTS: http://coordinator:2379 names service coordinator"}}},
		{name: "the variable names a service with no port",
			in:   "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd:2379\nservices:\n  etcd:\n    command: baton etcd --listen-client-urls http://0.0.0.0:2379\n    internal: true\n    singleton: true\n",
			want: []problem{{"BATON_ETCD", "names service etcd, which has no port: or ports:, so Convox gives it no address"}}},
		{name: "the variable names a port the service does not expose",
			in:   "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd:12379\nservices:\n" + etcdOK,
			want: []problem{{"BATON_ETCD", "http://etcd:12379: service etcd does not expose port 12379 (it has 2379)"}}},
		{name: "a service's bare variable cancels the app's default",
			in:   "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd:2379\nservices:\n  web:\n    environment:\n      - BATON_ETCD_ENDPOINTS\n" + etcdOK,
			want: []problem{{"      - BATON_ETCD_ENDPOINTS", "service web: environment lists BATON_ETCD_ENDPOINTS without a value, which overrides the app-level default"}}},

		// etcd services that would split or never start.
		{name: "etcd neither singleton nor internal, scaled",
			in: "services:\n  etcd:\n    command: baton etcd --listen-client-urls http://0.0.0.0:2379\n    port: 2379\n    health: /health\n    singleton: false\n    scale: 2\n",
			want: []problem{
				{"singleton: false", "service etcd runs etcd but is not singleton: true"},
				{"  etcd:", "service etcd runs etcd but is not internal: true"},
				{"scale: 2", "service etcd runs etcd at scale 2: each process would be a separate one-member cluster"},
			}},
		{name: "etcd autoscaled, or an agent",
			in: "services:\n  etcd:\n    image: gcr.io/etcd-development/etcd:v3.7.3\n    command: etcd --listen-client-urls=http://0.0.0.0:2379\n    internal: true\n    singleton: true\n    agent: true\n    scale:\n      count: 1-3\n    ports: [2379]\n",
			want: []problem{
				{"agent: true", "service etcd runs etcd as an agent"},
				{"scale:", "service etcd runs etcd at scale 3"},
			}},
		{name: "etcd on Convox's default health path",
			in:   "services:\n  etcd:\n    command: baton etcd --listen-client-urls http://0.0.0.0:2379\n    internal: true\n    singleton: true\n    port: 2379\n",
			want: []problem{{"  etcd:", "service etcd: port 2379 gets Convox's readiness check on /, which etcd answers with 404"}}},
		{name: "etcd listening on loopback only",
			in:   "services:\n  etcd:\n    command: baton etcd --name etcd\n    internal: true\n    singleton: true\n    port: 2379\n    health: /health\n",
			want: []problem{{"command:", "service etcd: etcd serves clients on 127.0.0.1 only"}}},
		{name: "the etcd image with no command",
			in:   "services:\n  etcd:\n    image: gcr.io/etcd-development/etcd:v3.7.3\n    internal: true\n    singleton: true\n    port: 2379\n",
			want: []problem{{"image:", "service etcd runs etcd's image without a command: etcd then serves 127.0.0.1 only"}}},
		{name: "a member of three with port:",
			in:   strings.Replace(threeMembers, "    ports: [2379, 2380] # etcd-0\n", "    port: 2379\n    health: /health\n    ports: [2380]\n", 1),
			want: []problem{{"    port: 2379", "service etcd-0 is one of 3 etcd members and has port:, so Convox checks its readiness"}}},
		{name: "a member whose peer port is not exposed",
			in:   strings.Replace(threeMembers, "    ports: [2379, 2380] # etcd-1\n", "    ports: [2379] # etcd-1\n", 1),
			want: []problem{{"--name etcd-0", "member etcd-1 at http://etcd-1:2380, but service etcd-1 does not expose port 2380"}, {"--name etcd-1", "service etcd-1 does not expose port 2380"}, {"--name etcd-2", "service etcd-1 does not expose port 2380"}}},
		{name: "a member that is not a service",
			in:   strings.Replace(threeMembers, "etcd-2=http://etcd-2:2380", "etcd-3=http://etcd-3:2380", -1),
			want: []problem{{"--name etcd-0", "names member etcd-3 at http://etcd-3:2380, but there is no service etcd-3"}, {"--name etcd-1", "no service etcd-3"}, {"--name etcd-2", "no service etcd-3"}}},

		// Timers.
		{name: "a timer that runs its command directly",
			in:   "services:\n  web:\n    build: .\ntimers:\n  cleanup:\n    schedule: '0 3 * * *'\n    command: bin/cleanup\n    service: web\n",
			want: []problem{{"bin/cleanup", `timer cleanup runs "bin/cleanup" directly: a Convox timer is a Kubernetes CronJob, which may start one schedule twice`}}},
		{name: "timers Convox rejects",
			in: `services:
  web:
    build: .
` + etcdOK + `timers:
  Nightly:
    schedule: "0 3 * * ?"
    command: baton run --once n --ttl 1h -- bin/n
    service: worker
  hourly:
    schedule: "0 * *"
    command: baton run --once h --ttl 1m -- bin/h
    service: web
    concurrency: Forbid
    concurrencyPolicy: Never
  weekly:
    command: baton run --once w --ttl 1h -- bin/w
`,
			want: []problem{
				{"Nightly:", `timer name "Nightly": Convox allows only lowercase letters`},
				{`"0 3 * * ?"`, "Convox rejects ? in a schedule"},
				{"service: worker", `timer Nightly: service "worker" does not exist`},
				{`"0 * *"`, "has 3 fields; want 5"},
				{"concurrency:", `timer hourly: unknown key "concurrency" (did you mean concurrencyPolicy?)`},
				{"Never", "concurrencyPolicy is \"Never\"; want Allow, Forbid or Replace"},
				{"weekly:", "timer weekly has no schedule"},
				{"weekly:", "timer weekly has no service"},
			}},

		// What Convox rejects or ignores.
		{name: "names", in: "services:\n  Web:\n    build: .\n  web_2:\n    build: .\nresources:\n  main_db:\n    type: postgres\n",
			want: []problem{
				{"Web:", `service name "Web": Convox allows only lowercase letters, digits and dashes`},
				{"web_2:", `service name "web_2"`},
				{"main_db:", `resource name "main_db"`},
			}},
		{name: "unknown keys", in: "servics:\n  web:\n    build: .\nservices:\n  web:\n    singelton: true\n    helth: /\n    x-mine: 1\nx-notes: free\n",
			want: []problem{
				{"servics:", `unknown key "servics" (did you mean services?); Convox ignores keys it does not know`},
				{"singelton:", `service web: unknown key "singelton" (did you mean singleton?)`},
				{"helth:", `(did you mean health?)`},
				{"x-mine:", `service web: unknown key "x-mine"; Convox ignores`},
			}},
		{name: "ports", in: `services:
  a:
    port: http
  b:
    port: tcp:3000
  c:
    port: 70000
  d:
    port:
      scheme: https
  e:
    port: [3000]
  f:
    ports:
      - 2380/sctp
      - two
      - {port: 0}
  g:
    ports: 2379
`,
			want: []problem{
				{"port: http", `service a: port is "http"; want a port number, "scheme:port" or {port: N, scheme: S}`},
				{"tcp:3000", `scheme "tcp"; Convox knows http, https and grpc`},
				{"70000", "service c: port is 70000; want a port from 1 to 65535"},
				{"scheme: https", "service d: port has no port"},
				{"[3000]", "service e: port is a list"},
				{"2380/sctp", `protocol "sctp"; want tcp or udp`},
				{"- two", `service f: ports entry is "two"`},
				{"{port: 0}", "service f: ports entry.port is 0; want a port from 1 to 65535"},
				{"ports: 2379", "service g: ports is the number 2379; want a list of ports"},
			}},
		{name: "scale and deployment", in: `services:
  a:
    scale: lots
  b:
    scale: 3-1
  c:
    scale:
      count: many
      cpus: 2
  d:
    deployment:
      minimum: 150
      maximum: 50
  e:
    deployment:
      minimum: fifty
`,
			want: []problem{
				{"lots", `service a: scale is "lots"; want a number of processes, a range such as "1-5"`},
				{"3-1", "service b: scale: the maximum 1 is below the minimum 3"},
				{"many", `service c: scale.count is "many"`},
				{"cpus:", `service c: scale: unknown key "cpus" (did you mean cpu?)`},
				{"minimum: 150", "service d: deployment.minimum is 150; Convox wants a percentage from 0 to 100"},
				{"maximum: 50", "service d: deployment.maximum is 50; Convox wants a percentage from 100 to 200"},
				{"fifty", `service e: deployment.minimum is "fifty"; want a whole number`},
			}},
		{name: "environment entries", in: `environment:
  - PORT: 3000
  - 3000
  - bad name=1
services:
  web:
    environment:
      LOG: info
`,
			want: []problem{
				{"PORT: 3000", "environment entry PORT: PORT is a mapping, which Convox drops without a word; write - PORT=3000"},
				{"- 3000", "environment entry is the number 3000, which Convox drops without a word"},
				{"bad name", `environment entry "bad name=1": "bad name" is not a valid variable name`},
				{"LOG: info", "service web: environment is a mapping; Convox wants a list of NAME or NAME=value"},
			}},
		{name: "values of the wrong kind", in: `services:
  web:
    singleton: "true"
    internal: 1
    command: [node, server.js]
    timeout: "60"
    internal: true
    internalRouter: true
    health:
      path: /
      every: 5
    resources:
      - database
      - cache:REDIS_URL
      - queue
    volumeOptions:
      - emptyDir:
          id: tmp
          medium: Disk
      - hostPath: /tmp
resources:
  database:
    type: postgres
  cache:
    options: {}
`,
			want: []problem{
				{`singleton: "true"`, `service web: singleton is "true"; want true or false`},
				{"internal: 1", "service web: internal is the number 1; want true or false"},
				{"[node, server.js]", "service web: command is a list; want a string"},
				{`timeout: "60"`, `service web: timeout is "60"; want a whole number`},
				{"internal: true", `key "internal" is given twice (also on line 4); Convox keeps only this one`},
				{"internalRouter: true", "service web: internal and internalRouter are both true; Convox allows one"},
				{"every: 5", `service web: health: unknown key "every"`},
				{"cache:\n", "resource cache has no type; Convox requires one"},
				{"- queue", `service web: resource "queue" is not defined under resources; Convox rejects the manifest`},
				{"      - emptyDir:", "service web: volumeOptions.emptyDir has no mountPath; Convox requires it"},
				{"medium: Disk", `service web: volumeOptions.emptyDir.medium is "Disk"; Convox allows only "Memory"`},
				{"hostPath", `service web: volumeOptions entry: unknown key "hostPath"`},
				{"hostPath", "want exactly one of emptyDir or awsEfs"},
			}},
		{name: "sections of the wrong kind", in: "services: [web]\ntimers: nightly\nresources:\n  db: postgres\n",
			want: []problem{
				{"services:", "services is a list; want a mapping of service names to definitions"},
				{"timers:", `timers is "nightly"; want a mapping`},
				{"db:", `resource db is "postgres"; want a mapping with a type`},
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
					if !matched[i] && p.Line == line && strings.Contains(p.Message, w.msg) {
						matched[i], found = true, true
						break
					}
				}
				if !found {
					t.Errorf("no problem on line %d (%q) saying %q", line, strings.TrimSpace(w.at), w.msg)
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
