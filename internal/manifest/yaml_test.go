package manifest

import (
	"strings"
	"testing"
)

// TestReadsServicesAsConvox: a service's keys are what Convox's parser
// gives it (convox/convox pkg/manifest/yaml.go, unmarshalMapSlice and
// remarshal, on gopkg.in/yaml.v2 v2.4.0, its go.mod's): a merge key inside
// services is dropped, a quoted "<<" merged in place (testdata/full.yml's
// service inherit, whose image, port and health manifest_test.go expects
// from proxy), a later key winning over an earlier one and the first of a
// list of merged mappings over the next (yaml.v2's decode.go, merge), and a
// merge key at the top level merged (the Manifest struct).
func TestReadsServicesAsConvox(t *testing.T) {
	src := `x-base: &base
  environment:
    - LOG=info
<<: *base
services:
  proxy: &proxy
    command: bash
    image: ubuntu:16.04
    health: /auth
    port: https:2000
  inherit:
    "<<": *proxy
    command: inherit
  override:
    command: mine
    "<<": *proxy
  first:
    "<<": [{image: a, port: 1}, {image: b, command: b}]
  dropped:
    <<: *proxy
    command: dropped
  alias: *proxy
`
	a, _ := read(mustParse(t, src))
	want := map[string]string{
		"proxy":    "command=bash health=/auth image=ubuntu:16.04 port=https:2000",
		"inherit":  "command=inherit health=/auth image=ubuntu:16.04 port=https:2000",
		"override": "command=bash health=/auth image=ubuntu:16.04 port=https:2000",
		"first":    "command=b image=a port=1",
		"dropped":  "command=dropped",
		"alias":    "command=bash health=/auth image=ubuntu:16.04 port=https:2000",
	}
	for _, s := range a.services {
		var got []string
		for _, k := range []string{"command", "health", "image", "port"} {
			if v, ok := str(s.get(k)); ok {
				got = append(got, k+"="+v)
			}
		}
		if g := strings.Join(got, " "); g != want[s.name] {
			t.Errorf("service %s reads as %q, want %q", s.name, g, want[s.name])
		}
	}
	if len(a.env) != 1 || a.env[0].name != "LOG" {
		t.Errorf("the top level's merge key gives environment %v, want LOG=info", a.env)
	}
}

// TestBooleansAsConvox: Convox's YAML 1.1 parser reads yes, on, Off and
// their kin as booleans, and a quoted one as a string
// (testdata/convox/singleton-string.yml is Convox refusing "yes").
func TestBooleansAsConvox(t *testing.T) {
	for _, tc := range []struct {
		in        string
		value, ok bool
	}{{"yes", true, true}, {"On", true, true}, {"Y", true, true}, {"OFF", false, true}, {"no", false, true},
		{"true", true, true}, {"False", false, true}, {`"yes"`, false, false}, {"yEs", false, false}, {"1", false, false}} {
		d := mustParse(t, "services:\n  etcd:\n    singleton: "+tc.in+"\n")
		a, _ := read(d)
		if v, ok := boolean(a.services[0].get("singleton")); v != tc.value || ok != tc.ok {
			t.Errorf("singleton: %s reads as %v, %v; want %v, %v", tc.in, v, ok, tc.value, tc.ok)
		}
	}
}
