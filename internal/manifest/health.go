package manifest

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// HTTPPort is the port Init has `baton crontab` and `baton run` serve
// /healthz, /readyz, /metrics and the status page on (BATON_HTTP), in a
// service with no web server of its own.
const HTTPPort = 9090

// HealthPath is the path Convox's readiness check asks.
const HealthPath = "/healthz"

// wireHealth gives each service that runs `baton crontab` or `baton run`
// and has no port of its own, and so no web server and no health check,
// baton's: BATON_HTTP=:HTTPPort in its environment, port: HTTPPort,
// health: HealthPath, and internal: true, which keeps the port, and so the
// status page and the metrics, off the internet (other apps of the rack
// reach it at SERVICE.APP.convox.local:HTTPPort). Convox checks readiness
// only on a service's port:, and replaces a process that fails three
// checks in a row; /healthz does not depend on etcd, so an etcd outage
// does not replace every process. An agent (one process per node, on the
// node's network) and a service that sets BATON_HTTP, health or a port
// are left as they are.
func wireHealth(e *editor, all []*service, appEnv *yaml.Node) ([]string, error) {
	if hasEntry(appEnv, "BATON_HTTP") {
		return nil, nil
	}
	var changes []string
	for _, s := range all {
		_, crontab := batonCommand(s.command, "crontab")
		_, run := batonCommand(s.command, "run")
		if s.body == nil || !(crontab || run) {
			continue
		}
		has := func(k string) bool { return s.value(k) != nil }
		if has("port") || has("ports") || has("health") || has("agent") {
			continue
		}
		envKey, env := get(s.body, "environment")
		if hasEntry(env, "BATON_HTTP") {
			continue
		}
		if env != nil && !isNull(env) && env.Kind != yaml.SequenceNode {
			continue // an alias or a mistake: Check reports it
		}
		if s.raw.Kind == yaml.AliasNode {
			return nil, fmt.Errorf("manifest: line %d: service %s is an alias (*%s); give it port: %d, health: %s and BATON_HTTP=:%d where the anchor is defined",
				s.raw.Line, s.name, s.raw.Value, HTTPPort, HealthPath, HTTPPort)
		}
		item := scalar("BATON_HTTP=:" + strconv.Itoa(HTTPPort))
		var add []*yaml.Node
		if envKey == nil {
			add = append(add, kv("environment", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{item}})...)
		} else {
			e.appendItems(envKey, env, item)
		}
		add = append(add, kv("port", number(HTTPPort))...)
		add = append(add, kv("health", scalar(HealthPath))...)
		keys := fmt.Sprintf("BATON_HTTP=:%d, port: %d, health: %s", HTTPPort, HTTPPort, HealthPath)
		if !has("internal") {
			add = append(add, kv("internal", boolean11(true))...)
			keys += ", internal: true"
		}
		e.appendEntries(s.key, s.raw, add...)
		changes = append(changes, fmt.Sprintf("service %s: added %s (it runs baton and has no web server: Convox checks baton's /healthz)", s.name, keys))
	}
	return changes, nil
}
