package manifest

import (
	"fmt"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"
)

// HTTPPort is the port Init has `baton crontab` and `baton run` serve
// /healthz, /readyz, /metrics and the status page on (BATON_HTTP), in a
// service with no web server of its own.
const HTTPPort = 9090

// HealthPath is the path Init gives Convox's readiness and liveness checks
// of such a service.
const HealthPath = "/healthz"

// wireHealth gives each service that runs `baton crontab` or `baton run`
// and has no port of its own, and so no probe at all, baton's:
// BATON_HTTP=:HTTPPort in its environment, port: HTTPPort, health:
// HealthPath, liveness: {path: HealthPath}, and internal: true, which keeps
// the port, and so the status page and the metrics, off the internet.
// Convox probes only a service's port: (service.yml.tmpl): health is a
// readiness probe, which takes a failing process out of the Service and
// leaves it running; liveness is the probe on which Kubernetes restarts it.
// /healthz fails when the command's own loop stops answering, a wedged
// process that should be replaced, and never asks etcd, so an etcd outage
// neither restarts every process nor holds up a deploy. An agent (one
// process per node, on the node's network) and a service that sets
// BATON_HTTP, health, liveness or a port are left as they are; so is one
// whose environment is shared through an anchor, and the change says so.
func (e *edit) wireHealth() {
	for _, s := range e.app.services {
		if wire, blocked := e.app.probeless(s); !wire || blocked != "" {
			continue
		}
		var add []*yaml.Node
		item := scalar("BATON_HTTP=:" + strconv.Itoa(HTTPPort))
		if envKey, env := own(s.value, "environment"); envKey == nil {
			add = kv("environment", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{item}})
		} else {
			appendTo(envKey, env, yaml.SequenceNode, item)
		}
		add = append(add, kv("port", integer(HTTPPort))...)
		add = append(add, kv("health", scalar(HealthPath))...)
		add = append(add, kv("liveness", &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: kv("path", scalar(HealthPath))})...)
		keys := probeKeys
		if s.get("internal") == nil {
			add = append(add, kv("internal", flag(true))...)
			keys += ", internal: true"
		}
		appendTo(s.key, s.value, yaml.MappingNode, add...)
		e.changef("service %s: added %s (it runs baton and has no web server: Convox probes baton's %s)", s.name, keys, HealthPath)
	}
}

var probeKeys = fmt.Sprintf("BATON_HTTP=:%d, port: %d, health: %s, liveness: {path: %s}", HTTPPort, HTTPPort, HealthPath, HealthPath)

// probeless reports whether service s runs `baton crontab` or `baton run`
// with nothing that says where its HTTP is or how to probe it, so that init
// wires its health; blocked says why init cannot, when the parts it would
// write are shared through an anchor.
func (a *app) probeless(s *service) (wire bool, blocked string) {
	_, crontab := batonCommand(s.command, "crontab")
	_, run := batonCommand(s.command, "run")
	if !(crontab || run) || s.value.Kind == yaml.ScalarNode || a.hasEnv("BATON_HTTP") {
		return false, ""
	}
	for _, k := range []string{"port", "ports", "health", "liveness", "agent"} {
		if s.get(k) != nil {
			return false, ""
		}
	}
	if slices.ContainsFunc(s.env, func(e envEntry) bool { return e.name == "BATON_HTTP" }) {
		return false, ""
	}
	_, env := own(resolve(s.value), "environment")
	switch {
	case s.value.Kind == yaml.AliasNode || s.value.Anchor != "":
		return true, "it is shared through an anchor (" + anchorText(s.value) + ")"
	case env == nil && s.get("environment") != nil:
		return true, "its environment comes from a merge key"
	case env != nil && (env.Kind == yaml.AliasNode || env.Anchor != ""):
		return true, "its environment is shared through an anchor (" + anchorText(env) + ")"
	case env != nil && !isNull(env) && env.Kind != yaml.SequenceNode:
		return false, "" // not a list: Convox refuses it itself
	}
	return true, ""
}
