package manifest

import (
	"reflect"
	"testing"
)

// TestLeftToConvox: the parts of a manifest Check does not check are named,
// once each, at the line they first appear; those it checks are not.
func TestLeftToConvox(t *testing.T) {
	// The sections and keys come from convox/convox
	// pkg/manifest/testdata/full.yml, auto-shutdown-full.yml and
	// autoscale-combined.yml, and Convox's timer reference.
	src := `balancers:
  main:
    service: web
    ports:
      3000: 3001
environment:
  - COMPANY=Convox
  - DOCS_URL
resources:
  database:
    type: postgres
    options:
      size: db.t2.large
services:
  web:
    build: .
    port: 3000
    health:
      path: /check
      interval: 10
    scale:
      count: 1-5
      autoscale:
        cpu:
          threshold: 70
    environment:
      - SECRET
  api:
    build: .
    domain: api.example.com
  etcd:
    command: baton etcd --data-dir /var/lib/etcd --listen-client-urls http://0.0.0.0:2379
    volumeOptions:
      - emptyDir:
          id: etcd-data
          mountPath: /var/lib/etcd
timers:
  nightly:
    command: bin/nightly
    schedule: "0 3 * * *"
    service: web
    concurrency: Forbid
budget:
  monthlyCapUsd: 100
`
	d := mustParse(t, src)
	want := []Unchecked{
		{lineOf(t, src, "balancers:"), "balancers"},
		{lineOf(t, src, "- DOCS_URL"), "environment: DOCS_URL, SECRET (set with `convox env set`)"},
		{lineOf(t, src, "options:"), "resources: options"},
		{lineOf(t, src, "build: ."), "services: build, health.interval, scale.autoscale, domain"},
		{lineOf(t, src, "concurrency:"), "timers: concurrency"},
		{lineOf(t, src, "budget:"), "budget"},
	}
	if got := LeftToConvox(d); !reflect.DeepEqual(got, want) {
		t.Errorf("LeftToConvox:\n got %v\nwant %v", got, want)
	}
}
