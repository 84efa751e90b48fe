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
	// Ignored is Convox's parser dropping a setting without a word: a key it
	// does not know, a key given twice, a merge key inside a service, an
	// environment entry it skips.
	Ignored
)

// Checked says, in a sentence for `baton convox check`, what Check checks.
const Checked = "baton's rules (BATON_ETCD_ENDPOINTS and the etcd it names: internal, singleton, one " +
	"process, not an agent, its ports, probes and data volume; timers through `baton run --once`; " +
	"BATON_* variables) and what Convox's parser drops without a word (unknown and repeated keys, " +
	"merge keys inside services, timers and resources, environment entries that are not strings)"

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

// ignored reports what Convox's parser drops without a word.
func (c *checker) ignored(at *yaml.Node, format string, a ...any) { c.add(Ignored, at, format, a...) }

// app is a manifest as Convox reads it, as far as baton's rules need.
type app struct {
	env      []envEntry // the app-level environment
	services []*service
	byName   map[string]*service
	timers   []*timer
}

// service is what the rules need to know of one service.
type service struct {
	name       string
	key, value *yaml.Node // the name and its value as written, maybe an alias
	fields     []pair     // as Convox reads it
	command    string
	cmdNode    *yaml.Node
	env        []envEntry
}

func (s *service) get(key string) *yaml.Node {
	for _, p := range s.fields {
		if p.key.Value == key {
			return p.value
		}
	}
	return nil
}

// at is the node a problem about key, or about the service, points at.
func (s *service) at(key string) *yaml.Node {
	for _, p := range s.fields {
		if p.key.Value == key {
			return p.key
		}
	}
	return s.key
}

type timer struct {
	name, command, service string
	cmdNode                *yaml.Node
}

// etcdMember is how Init names etcd services, and how the rules know them.
var etcdMember = regexp.MustCompile(`^etcd(-[0-9]+)?$`)

// Check returns the problems in a manifest, ordered by line: with baton's
// rules, and what Convox's parser would drop without a word. Convox checks
// the rest of its rules itself at deploy.
func Check(d *Document) []Problem {
	a, c := read(d)
	if a == nil {
		return nil
	}
	c.duplicates(d.top())
	c.baton(a)
	sort.SliceStable(c.problems, func(i, j int) bool { return c.problems[i].Line < c.problems[j].Line })
	return c.problems
}

// read reads a manifest as Convox does, noting in the checker what
// Convox's parser drops. It returns nil for an empty manifest.
func read(d *Document) (*app, *checker) {
	c := &checker{}
	top := d.top()
	if top == nil {
		return nil, c
	}
	a := &app{byName: map[string]*service{}}
	section := map[string]*yaml.Node{}
	for _, p := range topFields(top) {
		blocks := []*yaml.Node{p.value}
		if b := repeatedBlocks(top, p.key.Value); b != nil {
			blocks = b
		}
		switch k := p.key.Value; {
		case k == "environment":
			for _, b := range blocks {
				a.env = append(a.env, c.environment("environment", b)...)
			}
		case k == "services" || k == "timers" || k == "resources" || k == "balancers":
			section[k] = concatenated(blocks)
			for _, b := range blocks {
				c.merges(k, b)
			}
		case !topKeys[k] && resolve(p.value).Anchor == "" && !strings.HasPrefix(k, "x-"):
			c.unknown("", p.key, topKeys)
		}
	}
	for _, p := range entries(section["services"]) {
		s := &service{name: p.key.Value, key: p.key, value: p.value, fields: fields(p.value)}
		where := "service " + s.name
		for _, f := range s.fields {
			switch k := f.key.Value; {
			case !serviceKeys[k]:
				c.unknown(where, f.key, serviceKeys)
			case k == "environment":
				s.env = c.environment(where+": environment", f.value)
			case k == "health":
				c.unknownIn(where+": health", f.value, healthKeys)
			case k == "liveness":
				c.unknownIn(where+": liveness", f.value, livenessKeys)
			}
		}
		if cmd := s.get("command"); cmd != nil {
			s.command, _ = str(cmd)
			s.cmdNode = cmd
		}
		a.services = append(a.services, s)
		if a.byName[s.name] == nil {
			a.byName[s.name] = s
		}
	}
	for _, p := range entries(section["timers"]) {
		t := &timer{name: p.key.Value}
		c.unknownIn("timer "+t.name, p.value, timerKeys)
		if cmd := valueOf(p.value, "command"); cmd != nil {
			t.command, _ = str(cmd)
			t.cmdNode = cmd
		}
		t.service, _ = str(valueOf(p.value, "service"))
		a.timers = append(a.timers, t)
	}
	for _, p := range entries(section["resources"]) {
		c.unknownIn("resource "+p.key.Value, p.value, resourceKeys)
	}
	return a, c
}

// concatenatedKeys are the top-level keys whose blocks Convox reads one
// after the other when a manifest gives one twice: its Manifest type
// decodes them with yaml.v2 into a struct field, which calls the field's
// UnmarshalYAML (pkg/manifest/yaml.go: Environment appends, Services,
// Timers and Resources append through unmarshalMapSlice) on the same
// value for each occurrence.
var concatenatedKeys = map[string]bool{"environment": true, "services": true, "timers": true, "resources": true}

// repeatedBlocks returns the values of a concatenated key that the
// top-level mapping itself gives more than once, in order; nil when it
// gives it once or not at all.
func repeatedBlocks(top *yaml.Node, key string) []*yaml.Node {
	if !concatenatedKeys[key] {
		return nil
	}
	var blocks []*yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		if k := top.Content[i]; !isMergeKey(k) && k.Value == key {
			blocks = append(blocks, top.Content[i+1])
		}
	}
	if len(blocks) < 2 {
		return nil
	}
	return blocks
}

// concatenated is one block, or the entries of several, one after the
// other, as a single node of the first one's kind.
func concatenated(blocks []*yaml.Node) *yaml.Node {
	if len(blocks) == 1 {
		return blocks[0]
	}
	var kind yaml.Kind
	var content []*yaml.Node
	for _, b := range blocks {
		r := resolve(b)
		if r == nil || (r.Kind != yaml.MappingNode && r.Kind != yaml.SequenceNode) {
			continue
		}
		if kind == 0 {
			kind = r.Kind
		}
		if r.Kind == kind {
			content = append(content, r.Content...)
		}
	}
	if kind == 0 {
		return blocks[len(blocks)-1]
	}
	return &yaml.Node{Kind: kind, Content: content}
}

// entries returns the entries of a section (services, timers, resources)
// as Convox's unmarshalMapSlice reads them: each in order, a name given
// twice included, merge keys dropped.
func entries(section *yaml.Node) []pair {
	m := resolve(section)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	var out []pair
	for i := 0; i+1 < len(m.Content); i += 2 {
		if !isMergeKey(m.Content[i]) {
			out = append(out, pair{m.Content[i], m.Content[i+1]})
		}
	}
	return out
}

// merges reports every merge key inside a section: Convox drops it, and
// all it holds, without a word (see yaml.go).
func (c *checker) merges(section string, v *yaml.Node) {
	kind := strings.TrimSuffix(section, "s")
	seen := map[*yaml.Node]bool{}
	var walk func(where string, n *yaml.Node)
	walk = func(where string, n *yaml.Node) {
		if n = resolve(n); n == nil || seen[n] {
			return
		}
		seen[n] = true
		if n.Kind == yaml.SequenceNode {
			for _, x := range n.Content {
				walk(where, x)
			}
		}
		for i := 0; i+1 < len(n.Content) && n.Kind == yaml.MappingNode; i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			switch {
			case isMergeKey(k):
				var brings []string
				for _, f := range topFields(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{k, val}}) {
					brings = append(brings, f.key.Value)
				}
				c.ignored(k, "%s: Convox drops this merge key and all it brings (%s): it reads %s entry by entry with yaml.v2, which loses a merge key there (pkg/manifest/yaml.go)%s; "+
					"write those keys out, or quote the key (\"<<\": %s), which Convox merges", where, strings.Join(brings, ", "), section, skippedDefaults(brings), aliasText(val))
			case where == section:
				walk(kind+" "+k.Value, val)
			default:
				walk(where+": "+k.Value, val)
			}
		}
	}
	walk(section, v)
}

// skippedDefaults says which of Convox's defaults a dropped merge key
// costs a service: ApplyDefaults (pkg/manifest/manifest.go) skips a default
// when yamlAttributes, which reads the file with the merge applied, finds
// the key, so the value stays 0.
func skippedDefaults(brings []string) string {
	var lost []string
	for _, k := range brings {
		switch k {
		case "scale":
			lost = append(lost, "no process at all (scale 0)")
		case "termination":
			lost = append(lost, "a termination grace of 0 s")
		case "deployment":
			lost = append(lost, "deployment percentages of 0 (those it brings)")
		}
	}
	if len(lost) == 0 {
		return ""
	}
	return ", and since Convox's defaults see those keys in the merged file, the service gets " + strings.Join(lost, ", ")
}

// aliasText is a merge key's value as written, when it is an alias or a
// list of them.
func aliasText(v *yaml.Node) string {
	if v.Kind == yaml.AliasNode {
		return "*" + v.Value
	}
	var out []string
	for _, n := range v.Content {
		if n.Kind == yaml.AliasNode {
			out = append(out, "*"+n.Value)
		}
	}
	if len(out) == 0 {
		return "..."
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// unknown reports key k, which Convox's parser drops without a word.
func (c *checker) unknown(where string, k *yaml.Node, known map[string]bool) {
	hint := ""
	if s := suggest(k.Value, known); s != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", s)
	}
	c.ignored(k, "%sunknown key %q%s; Convox ignores keys it does not know, so this setting would be lost", prefix(where), k.Value, hint)
}

// unknownIn reports the keys of mapping m that are not in known.
func (c *checker) unknownIn(where string, m *yaml.Node, known map[string]bool) {
	for _, p := range fields(m) {
		if !known[p.key.Value] {
			c.unknown(where, p.key, known)
		}
	}
}

func prefix(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}

// duplicates reports keys given twice in one mapping. In a section Convox
// keeps both entries under one name, and of a concatenated top-level key
// it reads both blocks; anywhere else yaml.v2 keeps the last.
// Balancers, whose ports are read entry by entry too, are Convox's to check.
func (c *checker) duplicates(top *yaml.Node) {
	sections := map[*yaml.Node]bool{}
	seen := map[*yaml.Node]bool{}
	for _, p := range topFields(top) {
		blocks := []*yaml.Node{p.value}
		if b := repeatedBlocks(top, p.key.Value); b != nil {
			blocks = b
		}
		for _, b := range blocks {
			switch p.key.Value {
			case "services", "timers", "resources":
				sections[resolve(b)] = true
			case "balancers":
				seen[resolve(b)] = true
			}
		}
		if len(blocks) > 1 && p.key.Value != "environment" {
			c.acrossBlocks(blocks)
		}
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n == nil || n.Kind == yaml.AliasNode || seen[n] {
			return
		}
		seen[n] = true
		first := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content) && n.Kind == yaml.MappingNode; i += 2 {
			k := n.Content[i]
			f, ok := first[k.Value]
			switch {
			case isMergeKey(k):
			case !ok:
				first[k.Value] = k
			case sections[n]:
				c.ignored(k, "%q is defined twice (also on line %d); Convox reads both entries under one name", k.Value, f.Line)
			case n == resolve(top) && concatenatedKeys[k.Value]:
				c.ignored(k, "key %q is given twice (also on line %d); Convox reads both, the entries of this one after those of the first: write them as one", k.Value, f.Line)
			default:
				c.ignored(k, "key %q is given twice (also on line %d); Convox keeps only this one", k.Value, f.Line)
			}
		}
		for _, x := range n.Content {
			walk(x)
		}
	}
	walk(top)
}

// acrossBlocks reports a name defined in two blocks of one section given
// twice, which Convox reads as two entries under one name.
func (c *checker) acrossBlocks(blocks []*yaml.Node) {
	first := map[string]*yaml.Node{}
	for _, b := range blocks {
		here := map[string]bool{}
		for _, p := range entries(b) {
			if f, ok := first[p.key.Value]; ok && !here[p.key.Value] {
				c.ignored(p.key, "%q is defined twice (also on line %d); Convox reads both entries under one name", p.key.Value, f.Line)
			}
			if _, ok := first[p.key.Value]; !ok {
				first[p.key.Value] = p.key
			}
			here[p.key.Value] = true
		}
	}
}

// envEntry is one NAME or NAME=value of an environment list.
type envEntry struct {
	name, value string
	hasValue    bool
	node        *yaml.Node
}

// environment returns the entries of an environment list as Convox reads
// them (Environment in pkg/manifest/yaml.go): strings, and strings in lists
// within it; it drops any other entry without a word, which is reported.
// An environment that is not a list Convox refuses itself.
func (c *checker) environment(where string, v *yaml.Node) []envEntry {
	rv := resolve(v)
	if rv == nil || rv.Kind != yaml.SequenceNode {
		return nil
	}
	var out []envEntry
	var add func(item *yaml.Node, nested bool)
	add = func(item *yaml.Node, nested bool) {
		ri := resolve(item)
		switch {
		case ri.Kind == yaml.SequenceNode && !nested:
			for _, x := range ri.Content {
				add(x, true)
			}
		case ri.Kind == yaml.MappingNode && len(ri.Content) == 2:
			k, _ := str(ri.Content[0])
			val, _ := str(ri.Content[1])
			c.ignored(item, "%s entry %s: %s is a mapping, which Convox drops without a word; write - %s=%s", where, k, k, k, val)
		case !isString(ri):
			c.ignored(item, "%s entry is %s, which Convox drops without a word; want NAME or NAME=value", where, kindName(ri))
		default:
			name, value, hasValue := strings.Cut(ri.Value, "=")
			if name != "*" || hasValue {
				out = append(out, envEntry{name: name, value: value, hasValue: hasValue, node: item})
			}
		}
	}
	for _, item := range rv.Content {
		add(item, false)
	}
	return out
}
