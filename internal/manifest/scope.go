package manifest

import (
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Checked says, in a sentence for `baton convox check`, what Check checks.
const Checked = "baton's rules (the etcd service: internal, singleton, one process, not an agent, " +
	"its ports, readiness and data volume; BATON_ETCD_ENDPOINTS and the other BATON_* variables; " +
	"timers through `baton run --once`) and these of Convox's: names; the services, timers and " +
	"resources they name; resource types; internal with internalRouter; deployment percentages; " +
	"timer schedules' ?; unknown and repeated keys at the top level and in services, timers and " +
	"resources; the form of agent, command, environment, health, image, internal, internalRouter, " +
	"port, ports, scale's count and singleton"

// Unchecked is a part of a manifest whose rules Check does not check:
// Convox checks it itself at deploy.
type Unchecked struct {
	Line int    // 1-based: where the part first appears
	Part string // "budget", or "services: build, scale.autoscale"
}

// The parts of a service or a timer whose values Check reads in full; every
// other key's value is Convox's to check. A service's volumeOptions is
// baton's only on an etcd service.
var (
	serviceRead = keys("agent", "command", "deployment", "environment", "image", "internal", "internalRouter",
		"port", "ports", "resources", "singleton")
	healthRead = keys("path", "disable")
	scaleRead  = keys("count", "min", "max")
	timerRead  = keys("command", "schedule", "service")
)

// LeftToConvox returns the parts of a manifest Check does not check, in
// line order: the top-level sections other than environment, resources,
// services and timers (budget, balancers, configs, ...); the keys of
// services and timers whose values it does not read (build, domain,
// scale.autoscale, ...); and variables without a value, which Convox wants
// set with `convox env set` before it deploys.
func LeftToConvox(d *Document) []Unchecked {
	top := d.top()
	if top == nil {
		return nil
	}
	var out []Unchecked
	for _, p := range pairs(top) {
		switch k := p.key.Value; {
		case !topKeys[k]:
		case k == "services":
			out = append(out, sectionKeys("services", p.value, serviceParts)...)
		case k == "timers":
			out = append(out, sectionKeys("timers", p.value, timerParts)...)
		case k == "resources":
			out = append(out, sectionKeys("resources", p.value, func(m *yaml.Node) []pair {
				return withKey(pairs(m), "options")
			})...)
		case k == "environment":
		default:
			out = append(out, Unchecked{Line: p.key.Line, Part: k})
		}
	}
	if u, ok := bareVariables(top); ok {
		out = append(out, u)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// sectionKeys gathers, over the entries of a section, the keys parts
// returns, each named once, at its first line.
func sectionKeys(section string, v *yaml.Node, parts func(*yaml.Node) []pair) []Unchecked {
	line := 0
	seen := map[string]bool{}
	var names []string
	for _, entry := range pairs(v) {
		body := resolve(entry.value)
		if body == nil || body.Kind != yaml.MappingNode {
			continue
		}
		for _, p := range parts(body) {
			if !seen[p.key.Value] {
				seen[p.key.Value] = true
				names = append(names, p.key.Value)
				if line == 0 {
					line = p.key.Line
				}
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	return []Unchecked{{Line: line, Part: section + ": " + strings.Join(names, ", ")}}
}

// serviceParts returns the keys of a service whose values Check does not
// read in full, with nested ones named key.sub.
func serviceParts(body *yaml.Node) []pair {
	var out []pair
	isEtcd := false
	if _, cmd := get(body, "command"); cmd != nil {
		s, _ := str(cmd)
		isEtcd = runsEtcd(s)
	}
	for _, p := range pairs(body) {
		k := p.key.Value
		switch {
		case !serviceKeys[k] || serviceRead[k] || (k == "volumeOptions" && isEtcd):
		case k == "health" || k == "scale":
			read := healthRead
			if k == "scale" {
				read = scaleRead
			}
			if m := resolve(p.value); m != nil && m.Kind == yaml.MappingNode {
				for _, q := range pairs(m) {
					if !read[q.key.Value] {
						out = append(out, pair{&yaml.Node{Value: k + "." + q.key.Value, Line: q.key.Line}, q.value})
					}
				}
			}
		default:
			out = append(out, p)
		}
	}
	return out
}

func timerParts(body *yaml.Node) []pair {
	var out []pair
	for _, p := range pairs(body) {
		if timerKeys[p.key.Value] && !timerRead[p.key.Value] {
			out = append(out, p)
		}
	}
	return out
}

func withKey(ps []pair, key string) []pair {
	var out []pair
	for _, p := range ps {
		if p.key.Value == key {
			out = append(out, p)
		}
	}
	return out
}

// bareVariables names the variables listed without a value: Convox refuses
// to deploy until each is set with `convox env set` (ServiceEnvironment in
// its manifest.go), which Check cannot see.
func bareVariables(top *yaml.Node) (Unchecked, bool) {
	c := &checker{}
	var lists []*yaml.Node
	if _, v := get(top, "environment"); v != nil {
		lists = append(lists, v)
	}
	if _, svcs := get(top, "services"); svcs != nil {
		for _, s := range pairs(svcs) {
			if _, v := get(s.value, "environment"); v != nil {
				lists = append(lists, v)
			}
		}
	}
	line := 0
	seen := map[string]bool{}
	var names []string
	for _, l := range lists {
		for _, e := range c.environment("", l) {
			if !e.hasValue && !seen[e.name] {
				seen[e.name] = true
				names = append(names, e.name)
				if line == 0 || e.node.Line < line {
					line = e.node.Line
				}
			}
		}
	}
	if len(names) == 0 {
		return Unchecked{}, false
	}
	return Unchecked{Line: line, Part: "environment: " + strings.Join(names, ", ") + " (set with `convox env set`)"}, true
}
