package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Options say what Init adds.
type Options struct {
	// Members is the number of etcd members: 1 (a service etcd) or 3
	// (services etcd-0, etcd-1 and etcd-2). 0 completes the etcd services
	// the manifest has, or adds one member if it has none.
	Members int
	// Image runs etcd from EtcdImage rather than `baton etcd` from the
	// app's own image, which must then contain the baton command.
	Image bool
	// Storage is where a new etcd service keeps its data.
	Storage Storage
	// EtcdApp, when set, points the app at the etcd of the Convox app of
	// that name (see EtcdAppManifest) and adds no etcd service.
	EtcdApp string
}

// ErrConflict is returned by Init when the manifest has etcd services that
// do not match Options.Members: adding the requested ones would make a
// second cluster beside them.
var ErrConflict = errors.New("manifest: the etcd services there do not match --members")

// Init adds to d what baton needs on Convox: the bundled etcd service (or
// three) and BATON_ETCD_ENDPOINTS in the app-level environment, which
// Convox gives to every service. It completes an etcd service that is
// already there instead of adding another, never changes a value the
// manifest gives, and writes into no anchor and no merge key: a part it
// would have to change there is an error, or, for a service's health, left
// as it is and said. It returns one line per change, none when the manifest
// was already set up; d then holds the new bytes.
func Init(d *Document, opts Options) ([]string, error) {
	if opts.Members != 0 && opts.Members != 1 && opts.Members != 3 {
		return nil, fmt.Errorf("manifest: %d etcd members: want 1 or 3", opts.Members)
	}
	crlf := bytes.Contains(d.src, []byte("\r\n"))
	src := bytes.ReplaceAll(d.src, []byte("\r\n"), []byte("\n"))
	w, err := Parse(src) // edited in place; d stays as it is on failure
	if err != nil {
		return nil, err
	}
	if len(w.root.Content) == 0 {
		w.root.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
	}
	e := &edit{top: w.root.Content[0], lines: strings.Split(string(src), "\n")}
	if e.top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("manifest: line %d: the top level is an alias (*%s); init writes into no anchor", e.top.Line, e.top.Value)
	}
	e.app, _ = read(w)
	if e.app == nil {
		e.app = &app{byName: map[string]*service{}}
	}
	if err := e.run(opts); err != nil || len(e.changes) == 0 {
		return nil, err
	}
	out, err := encode(w.root, src)
	if err != nil {
		return nil, fmt.Errorf("manifest: encode the manifest: %w", err)
	}
	if len(d.root.Content) == 0 && len(bytes.TrimSpace(src)) > 0 {
		// A file of comments only has no node to keep them on.
		out = append([]byte(strings.TrimRight(string(src), "\n")+"\n"), out...)
	}
	if crlf {
		out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
	}
	nd, err := Parse(out)
	if err != nil {
		return nil, fmt.Errorf("manifest: the edited manifest does not parse (%v); the file is left as it was", err)
	}
	*d = *nd
	return e.changes, nil
}

// edit is one run of Init on a node tree.
type edit struct {
	lines   []string // the source's
	top     *yaml.Node
	app     *app
	changes []string
}

func (e *edit) changef(format string, a ...any) {
	e.changes = append(e.changes, fmt.Sprintf(format, a...))
}

func (e *edit) run(opts Options) error {
	servicesKey, services, err := e.section("services", yaml.MappingNode, "add the etcd service")
	if err != nil {
		return err
	}
	envKey, env, err := e.section("environment", yaml.SequenceNode, "add BATON_ETCD_ENDPOINTS")
	if err != nil {
		return err
	}
	all := e.app.services
	names, err := plan(all, opts.Members)
	if err != nil {
		return err
	}
	existing := etcdServices(e.app)
	if opts.EtcdApp != "" {
		if len(existing) > 0 {
			return fmt.Errorf("%w: the manifest has etcd service %s, and the app would use the etcd of app %s instead; remove it first",
				ErrConflict, strings.Join(existing, ", "), opts.EtcdApp)
		}
		names = nil
	}
	if v, ok := envValue(e.app.env, "BATON_ETCD_ENDPOINTS"); ok && opts.Members == 0 && len(existing) == 0 && v != "" && len(appEndpoints(v)) == 0 {
		names = nil // BATON_ETCD_ENDPOINTS names an etcd outside the app
	}

	var items []*yaml.Node
	etcdApp := len(all) > 0 && len(existing) == len(all) // etcd services only: nothing here is a client
	if !etcdApp && !e.app.hasEnv("BATON_ETCD_ENDPOINTS") {
		endpoints := endpointList(names, e.app.byName)
		if opts.EtcdApp != "" {
			endpoints = EtcdAppEndpoint(opts.EtcdApp)
		}
		items = append(items, scalar("BATON_ETCD_ENDPOINTS="+endpoints))
		e.changef("added BATON_ETCD_ENDPOINTS=%s to the app's environment, which Convox gives every service", endpoints)
	}
	if opts.EtcdApp != "" || bootstrapsAuth(names, e.app.byName, opts) {
		// Names only: the values are set with `convox env set`.
		for _, name := range []string{"BATON_ETCD_USERNAME", "BATON_ETCD_PASSWORD"} {
			if !e.app.hasEnv(name) {
				items = append(items, scalar(name))
				e.changef("added %s (a name, no value) to the app's environment", name)
			}
		}
	}
	if len(items) > 0 {
		if envKey == nil {
			e.addTop(servicesKey, "environment", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items})
		} else {
			appendTo(envKey, env, yaml.SequenceNode, items...)
		}
	}

	src := buildSource(all)
	var added []*yaml.Node
	for i, name := range names {
		if s := e.app.byName[name]; s != nil {
			if err := e.complete(s, names, opts); err != nil {
				return err
			}
			continue
		}
		k := scalar(name)
		if i == 0 {
			k.HeadComment = headComment(len(names), opts.Storage)
		}
		body := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		body.Content = append(image(src, opts), etcdService(name, names, opts)...)
		added = append(added, k, body)
		e.changef("added service %s (%s)", name, describe(src, opts))
	}
	if len(added) > 0 {
		if servicesKey == nil {
			e.addTop(nil, "services", &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: added})
		} else {
			if e.separated(services) {
				added[0].HeadComment = blankLine + "\n" + added[0].HeadComment
			}
			appendTo(servicesKey, services, yaml.MappingNode, added...)
		}
	}
	e.wireHealth()
	return nil
}

// section returns a top-level key and its value as written in the
// top-level mapping, for Init to add to. It fails when the value is an
// alias, has an anchor or comes from a merge key, since init writes into no
// anchor, or when it is not of kind want; k is nil when the key is not there.
func (e *edit) section(key string, want yaml.Kind, what string) (k, v *yaml.Node, err error) {
	k, v = own(e.top, key)
	for _, p := range topFields(e.top) {
		if p.key.Value == key && p.key != k {
			return nil, nil, fmt.Errorf("manifest: line %d: %s comes from a merge key; init writes into no anchor: %s where it is defined", p.key.Line, key, what)
		}
	}
	switch {
	case v == nil:
	case v.Kind == yaml.AliasNode:
		return nil, nil, fmt.Errorf("manifest: line %d: %s is an alias (*%s); init writes into no anchor: %s where the anchor is defined", v.Line, key, v.Value, what)
	case v.Anchor != "":
		return nil, nil, fmt.Errorf("manifest: line %d: %s has the anchor &%s; init writes into no anchor: %s by hand", v.Line, key, v.Anchor, what)
	case !isNull(v) && v.Kind != want:
		return nil, nil, fmt.Errorf("manifest: line %d: %s is %s; want %s", v.Line, key, kindName(v), map[yaml.Kind]string{yaml.MappingNode: "a mapping of service names to definitions", yaml.SequenceNode: "a list of NAME or NAME=value"}[want])
	}
	return k, v, nil
}

// own returns the last key and value of key written in mapping m itself,
// not merged in.
func own(m *yaml.Node, key string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if !isMergeKey(m.Content[i]) && m.Content[i].Value == key {
			k, v = m.Content[i], m.Content[i+1]
		}
	}
	return k, v
}

// appendTo adds nodes at the end of the collection that is key's value,
// which is of kind, or empty: an empty value becomes one, a flow collection
// becomes a block one, with its comment moved to the key.
func appendTo(key, value *yaml.Node, kind yaml.Kind, nodes ...*yaml.Node) {
	if isNull(value) {
		*value = yaml.Node{Kind: kind, Tag: map[yaml.Kind]string{yaml.MappingNode: "!!map", yaml.SequenceNode: "!!seq"}[kind], Line: value.Line}
	}
	if value.Style&yaml.FlowStyle != 0 {
		value.Style &^= yaml.FlowStyle
		if key.LineComment == "" {
			key.LineComment, value.LineComment = value.LineComment, ""
		}
	}
	// A comment after the last entry is yaml.v3's foot comment of it, which
	// it would write after the new ones; it goes before them, where it was.
	if n := len(value.Content); n > 0 {
		for _, last := range value.Content[max(0, n-2):] {
			if last.FootComment != "" {
				nodes[0].HeadComment = strings.TrimSuffix(last.FootComment+"\n"+nodes[0].HeadComment, "\n")
				last.FootComment = ""
			}
		}
	}
	value.Content = append(value.Content, nodes...)
}

// addTop adds key: value to the top-level mapping, before the key before
// or at the end. A comment that opens the file stays at its top.
func (e *edit) addTop(before *yaml.Node, key string, value *yaml.Node) {
	k := scalar(key)
	if e.separated(e.top) {
		k.HeadComment = blankLine
	}
	i := len(e.top.Content)
	if before != nil {
		i = slices.Index(e.top.Content, before)
	}
	if i == 0 && before != nil {
		k.HeadComment, before.HeadComment = before.HeadComment, ""
		if e.separated(e.top) {
			before.HeadComment = blankLine
		}
	}
	e.top.Content = slices.Insert(e.top.Content, i, k, value)
}

// separated reports whether a mapping's entries are set apart by blank
// lines, so that an added one should be too.
func (e *edit) separated(m *yaml.Node) bool {
	for i := 2; i < len(m.Content); i += 2 {
		if blankAbove(e.lines, m.Content[i]) || strings.HasPrefix(m.Content[i].HeadComment, blankLine) {
			return true
		}
	}
	return false
}

// etcdServices are the names of the services that run etcd.
func etcdServices(a *app) []string {
	var out []string
	for _, s := range a.services {
		if a.isEtcd(s) {
			out = append(out, s.name)
		}
	}
	return out
}

func (a *app) hasEnv(name string) bool {
	for _, e := range a.env {
		if e.name == name {
			return true
		}
	}
	return false
}

// envValue returns the value the last entry for name gives.
func envValue(env []envEntry, name string) (value string, ok bool) {
	for _, e := range env {
		if e.name == name && e.hasValue {
			value, ok = e.value, true
		}
	}
	return value, ok
}

func anchorText(n *yaml.Node) string {
	if n.Kind == yaml.AliasNode {
		return "*" + n.Value
	}
	return "&" + n.Anchor
}

func kv(key string, value *yaml.Node) []*yaml.Node { return []*yaml.Node{scalar(key), value} }

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func integer(i int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(i)}
}

func flag(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}
