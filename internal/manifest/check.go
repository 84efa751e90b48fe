package manifest

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Rule says whose rule a problem is about.
type Rule int

const (
	// Baton is one of baton's own rules: the manifest would make baton run
	// a tick twice, or not at all.
	Baton Rule = iota
	// Rejected is one of Convox's rules: Convox refuses the manifest.
	Rejected
	// Ignored is Convox's parser dropping a setting without a word: a key it
	// does not know, a key given twice, an environment entry it skips.
	Ignored
)

// Problem is one thing wrong with a manifest.
type Problem struct {
	Line    int // 1-based
	Message string
	Rule    Rule
}

type checker struct{ problems []Problem }

func (c *checker) add(rule Rule, at *yaml.Node, format string, a ...any) {
	line := 0
	if at != nil {
		line = at.Line
	}
	c.problems = append(c.problems, Problem{Line: line, Message: fmt.Sprintf(format, a...), Rule: rule})
}

// addf reports a problem with one of baton's rules.
func (c *checker) addf(at *yaml.Node, format string, a ...any) { c.add(Baton, at, format, a...) }

// rejectf reports what Convox's parser or its Validate refuses.
func (c *checker) rejectf(at *yaml.Node, format string, a ...any) { c.add(Rejected, at, format, a...) }

// ignored reports what Convox's parser drops without a word.
func (c *checker) ignored(at *yaml.Node, format string, a ...any) { c.add(Ignored, at, format, a...) }

// service is what the checks need to know of one service.
type service struct {
	name     string
	key, raw *yaml.Node // the key and its value as written, maybe an alias
	body     *yaml.Node // the mapping, or nil for `web:` with nothing
	command  string
	cmdNode  *yaml.Node
	env      []envEntry
}

func (s *service) value(key string) *yaml.Node {
	_, v := get(s.body, key)
	return v
}

// at is the node a problem about the service as a whole points at.
func (s *service) at(key string) *yaml.Node {
	if k, _ := get(s.body, key); k != nil {
		return k
	}
	return s.key
}

type timer struct {
	name             string
	key              *yaml.Node
	command, service string
	cmdNode          *yaml.Node
}

// etcdMember is how Init names etcd services, and how Check knows them.
var etcdMember = regexp.MustCompile(`^etcd(-[0-9]+)?$`)

// Check returns the problems in a manifest, ordered by line: with baton's
// rules, and with those of Convox's rules it checks (see the package
// documentation). A manifest with no problems may still break a rule
// Convox checks at deploy: LeftToConvox names those parts of it.
func Check(d *Document) []Problem {
	c := &checker{}
	top := d.top()
	if top == nil {
		return nil
	}
	c.duplicates(d.root, map[*yaml.Node]bool{})

	var appEnv []envEntry
	resources := map[string]bool{}
	var services []*service
	var timers []*timer
	for _, p := range pairs(top) {
		k, v := p.key, p.value
		switch k.Value {
		case "environment":
			appEnv = c.environment("environment", v)
		case "resources":
			c.resources(v, resources)
		}
		if !topKeys[k.Value] && resolve(v).Anchor == "" && !strings.HasPrefix(k.Value, "x-") {
			c.unknownKey("", k, topKeys)
		}
	}
	if _, v := get(top, "services"); v != nil {
		services = c.services(v, resources)
	}
	if _, v := get(top, "timers"); v != nil {
		timers = c.timers(v, services)
	}
	c.baton(appEnv, services, timers)

	sort.SliceStable(c.problems, func(i, j int) bool { return c.problems[i].Line < c.problems[j].Line })
	return dedupe(c.problems)
}

func dedupe(ps []Problem) []Problem {
	var out []Problem
	seen := map[Problem]bool{}
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// duplicates reports keys given twice in one mapping: Convox's parser keeps
// the last, so the first is silently lost. The sections it reads entry by
// entry in order (unmarshalMapSlice in convox/convox pkg/manifest/yaml.go:
// services, timers, resources, and balancers with their ports) keep both,
// so a name given twice there is reported as such, and balancers are
// Convox's to check.
func (c *checker) duplicates(n *yaml.Node, seen map[*yaml.Node]bool) {
	top := resolve(n)
	if top != nil && top.Kind == yaml.DocumentNode && len(top.Content) > 0 {
		top = resolve(top.Content[0])
	}
	sections := map[*yaml.Node]bool{}
	skip := map[*yaml.Node]bool{}
	for _, p := range pairs(top) {
		switch p.key.Value {
		case "services", "timers", "resources":
			sections[resolve(p.value)] = true
		case "balancers":
			skip[resolve(p.value)] = true
		}
	}
	c.duplicatesIn(n, seen, sections, skip)
}

func (c *checker) duplicatesIn(n *yaml.Node, seen, sections, skip map[*yaml.Node]bool) {
	if n == nil || n.Kind == yaml.AliasNode || seen[n] || skip[n] {
		return
	}
	seen[n] = true
	if n.Kind == yaml.MappingNode {
		first := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if isMergeKey(k) {
				continue
			}
			f, ok := first[k.Value]
			switch {
			case !ok:
				first[k.Value] = k
			case sections[n]:
				c.ignored(k, "%q is defined twice (also on line %d); Convox reads both under one name, and one overwrites the other at deploy", k.Value, f.Line)
			default:
				c.ignored(k, "key %q is given twice (also on line %d); Convox keeps only this one", k.Value, f.Line)
			}
		}
	}
	for _, x := range n.Content {
		c.duplicatesIn(x, seen, sections, skip)
	}
}

// badName reports a name Convox's NameValidator refuses (validate.go).
func (c *checker) badName(what string, k *yaml.Node) {
	if !validName.MatchString(k.Value) {
		c.rejectf(k, "%s name %q: Convox allows only lowercase letters, digits and dashes, starting with a letter", what, k.Value)
	}
}

func (c *checker) resources(v *yaml.Node, names map[string]bool) {
	if isNull(v) {
		return
	}
	if resolve(v).Kind != yaml.MappingNode {
		c.rejectf(v, "resources is %s; Convox reads a mapping of resource names to definitions", kindName(v))
		return
	}
	for _, p := range pairs(v) {
		name := p.key.Value
		names[name] = true
		c.badName("resource", p.key)
		where := "resource " + name
		if resolve(p.value).Kind != yaml.MappingNode {
			c.rejectf(p.value, "%s is %s; Convox reads a mapping with a type", where, kindName(p.value))
			continue
		}
		c.unknownKeys(where, p.value, resourceKeys)
		if _, t := get(p.value, "type"); t == nil || strings.TrimSpace(t.Value) == "" {
			c.rejectf(p.key, "%s has no type; Convox requires one (postgres, redis, ...)", where)
		}
	}
}

func (c *checker) services(v *yaml.Node, resources map[string]bool) []*service {
	if isNull(v) {
		return nil
	}
	if resolve(v).Kind != yaml.MappingNode {
		c.rejectf(v, "services is %s; Convox reads a mapping of service names to definitions", kindName(v))
		return nil
	}
	var out []*service
	for _, p := range pairs(v) {
		s := &service{name: p.key.Value, key: p.key, raw: p.value}
		out = append(out, s)
		where := "service " + s.name
		c.badName("service", p.key)
		if isNull(p.value) {
			continue
		}
		if resolve(p.value).Kind != yaml.MappingNode {
			c.rejectf(p.value, "%s is %s; Convox reads a mapping", where, kindName(p.value))
			continue
		}
		s.body = resolve(p.value)
		for _, f := range pairs(s.body) {
			switch name := f.key.Value; {
			case !serviceKeys[name]:
				c.unknownKey(where, f.key, serviceKeys)
			case name == "environment":
				s.env = c.environment(where+": environment", f.value)
			case serviceForms[name] != nil:
				serviceForms[name](c, where+": "+name, f.value)
			}
		}
		if cmd := s.value("command"); cmd != nil {
			s.command, _ = str(cmd)
			s.cmdNode = cmd
		}
		if b, i := s.value("internal"), s.value("internalRouter"); b != nil && i != nil {
			bv, _ := boolean(b)
			iv, _ := boolean(i)
			if bv && iv {
				c.rejectf(i, "%s: internal and internalRouter are both true; Convox allows one", where)
			}
		}
		c.serviceResources(where, s.value("resources"), resources)
	}
	return out
}

// serviceResources checks that each resource a service names is defined:
// Convox rejects the manifest otherwise (validate.go). An entry is NAME or
// NAME:ENV_VAR.
func (c *checker) serviceResources(where string, v *yaml.Node, resources map[string]bool) {
	rs := resolve(v)
	if isNull(rs) {
		return
	}
	if rs.Kind != yaml.SequenceNode {
		c.rejectf(v, "%s: resources is %s; Convox reads a list of resource names", where, kindName(v))
		return
	}
	for _, r := range rs.Content {
		name, ok := str(r)
		if !ok {
			c.rejectf(r, "%s: resources entry is %s; Convox reads a resource name", where, kindName(r))
			continue
		}
		name, _, _ = strings.Cut(name, ":")
		if !resources[name] {
			c.rejectf(r, "%s: resource %q is not defined under resources; Convox rejects the manifest", where, name)
		}
	}
}

func (c *checker) timers(v *yaml.Node, services []*service) []*timer {
	if isNull(v) {
		return nil
	}
	if resolve(v).Kind != yaml.MappingNode {
		c.rejectf(v, "timers is %s; Convox reads a mapping of timer names to definitions", kindName(v))
		return nil
	}
	known := map[string]bool{}
	for _, s := range services {
		known[s.name] = true
	}
	var out []*timer
	for _, p := range pairs(v) {
		t := &timer{name: p.key.Value, key: p.key}
		where := "timer " + t.name
		c.badName("timer", p.key)
		if resolve(p.value).Kind != yaml.MappingNode {
			c.rejectf(p.value, "%s is %s; Convox reads a mapping with command, schedule and service", where, kindName(p.value))
			continue
		}
		c.unknownKeys(where, p.value, timerKeys)
		for _, key := range []string{"command", "schedule", "service"} {
			if _, x := get(p.value, key); x != nil {
				isScalar(c, where+": "+key, x)
			}
		}
		if _, sch := get(p.value, "schedule"); sch != nil {
			c.schedule(where, sch)
		}
		if _, cmd := get(p.value, "command"); cmd != nil {
			t.command, _ = str(cmd)
			t.cmdNode = cmd
		}
		_, sv := get(p.value, "service")
		t.service, _ = str(sv)
		switch {
		case t.service == "":
			c.rejectf(p.key, "%s names no service; Convox rejects a timer whose service does not exist", where)
		case !known[t.service]:
			c.rejectf(sv, "%s: service %q does not exist; Convox rejects the manifest", where, t.service)
		}
		out = append(out, t)
	}
	return out
}

// schedule checks a timer's schedule as Convox does: it keeps the first
// five fields, reads a field that is just "?" as "*" (manifest.go,
// ApplyCompatibility), and then rejects any "?" left (validate.go).
func (c *checker) schedule(where string, v *yaml.Node) {
	s, ok := str(v)
	if !ok {
		return
	}
	fields := strings.Fields(s)
	if len(fields) > 5 {
		fields = fields[:5]
	}
	for _, f := range fields {
		if f != "?" && strings.Contains(f, "?") {
			c.rejectf(v, "%s: schedule %q: Convox rejects ? within a field; use *", where, s)
			return
		}
	}
}
