package manifest

import (
	"strings"
	"testing"
)

// wiredKeys is what Init adds to a service that runs baton with no web
// server of its own, indented as a service's keys.
const wiredKeys = `    environment:
      - BATON_HTTP=:9090
    port: 9090
    health: /healthz
    liveness:
      path: /healthz
    internal: true
`

// TestInitWiresHealthOfBatonServices: a service that runs baton crontab or
// baton run and has no port gets baton's /healthz as its readiness check and
// as its liveness check, on an internal port: Convox probes only port:, and
// only liveness: makes Kubernetes replace a process that stopped answering
// (provider/k8s/template/app/service.yml.tmpl). A service with a web server
// of its own, an agent, and one that chose BATON_HTTP are left alone; a
// second Init changes nothing, and Check finds nothing wrong with the
// result.
func TestInitWiresHealthOfBatonServices(t *testing.T) {
	in := `environment:
  - BATON_ETCD_ENDPOINTS=http://etcd.baton-etcd:2379
services:
  web:
    build: .
    command: sh -c "baton crontab crontab & exec node server.js"
    port: 3000
  cron:
    build: .
    command: baton crontab crontab
  worker:
    build: .
    command: baton run --leader worker -- node worker.js
    environment:
      - QUEUE=jobs
  agent:
    build: .
    command: baton crontab node.crontab
    agent: true
  chosen:
    build: .
    command: baton crontab other.crontab
    environment:
      - BATON_HTTP=127.0.0.1:7000
`
	d := mustParse(t, in)
	changes, err := Init(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(in, "    command: baton crontab crontab\n", "    command: baton crontab crontab\n"+wiredKeys, 1)
	want = strings.Replace(want, "      - QUEUE=jobs\n", "      - QUEUE=jobs\n      - BATON_HTTP=:9090\n    port: 9090\n    health: /healthz\n    liveness:\n      path: /healthz\n    internal: true\n", 1)
	if got := string(d.Bytes()); got != want {
		t.Errorf("Init wrote:\n%s\nwant:\n%s", got, want)
	}
	if len(changes) != 2 || !strings.HasPrefix(changes[0], "service cron: added BATON_HTTP=:9090, port: 9090, health: /healthz, liveness: {path: /healthz}, internal: true") ||
		!strings.HasPrefix(changes[1], "service worker: added BATON_HTTP=:9090") {
		t.Errorf("changes %q", changes)
	}
	if again, err := Init(d, Options{}); err != nil || len(again) != 0 {
		t.Errorf("a second Init: %q, %v; want no change", again, err)
	}
	for _, p := range Check(d) {
		if strings.Contains(p.Message, "cron") || strings.Contains(p.Message, "worker") {
			t.Errorf("Check on the result: line %d: %s", p.Line, p.Message)
		}
	}
}

// TestInitLeavesHealthToAnAppLevelBatonHTTP: BATON_HTTP in the app's
// environment is the user's choice of where baton serves.
func TestInitLeavesHealthToAnAppLevelBatonHTTP(t *testing.T) {
	in := "environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd.baton-etcd:2379\n  - BATON_HTTP=:8000\nservices:\n  cron:\n    build: .\n    command: baton crontab crontab\n"
	d := mustParse(t, in)
	changes, err := Init(d, Options{})
	if err != nil || len(changes) != 0 || string(d.Bytes()) != in {
		t.Errorf("Init: %q, %v:\n%s", changes, err, d.Bytes())
	}
}
