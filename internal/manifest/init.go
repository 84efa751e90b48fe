package manifest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// EtcdImage is the etcd image Init uses with Options.Image: etcd's official
// image, of the release the baton command embeds.
const EtcdImage = "gcr.io/etcd-development/etcd:v3.7.3"

const (
	clientPort = 2379
	peerPort   = 2380
	dataDir    = "/var/lib/etcd"
	// clusterToken is `baton etcd`'s default --initial-cluster-token.
	clusterToken = "baton-etcd"
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
// already there instead of adding another, and never changes a value the
// manifest gives. It returns one line per change, none when the manifest
// was already set up; d then holds the new bytes.
func Init(d *Document, opts Options) ([]string, error) {
	if opts.Members != 0 && opts.Members != 1 && opts.Members != 3 {
		return nil, fmt.Errorf("manifest: %d etcd members: want 1 or 3", opts.Members)
	}
	top := d.top()
	servicesKey, services := get(top, "services")
	if services != nil {
		if services.Kind == yaml.AliasNode {
			return nil, fmt.Errorf("manifest: line %d: services is an alias (*%s); add the etcd service where the anchor is defined", services.Line, services.Value)
		}
		if !isNull(services) && services.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("manifest: line %d: services is %s; want a mapping of service names to definitions", services.Line, kindName(services))
		}
	}
	envKey, env := get(top, "environment")
	if env != nil {
		if env.Kind == yaml.AliasNode {
			return nil, fmt.Errorf("manifest: line %d: environment is an alias (*%s); add BATON_ETCD_ENDPOINTS where the anchor is defined", env.Line, env.Value)
		}
		if !isNull(env) && env.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("manifest: line %d: environment is %s; Convox wants a list of NAME or NAME=value", env.Line, kindName(env))
		}
	}

	all := serviceList(services)
	names, err := plan(all, opts.Members)
	if err != nil {
		return nil, err
	}
	if opts.EtcdApp != "" {
		if existing := etcdServices(all); len(existing) > 0 {
			return nil, fmt.Errorf("%w: the manifest has etcd service %s, and the app would use the etcd of app %s instead; remove it first",
				ErrConflict, strings.Join(existing, ", "), opts.EtcdApp)
		}
		names = nil
	}
	if opts.EtcdApp == "" && opts.Members == 0 && len(etcdServices(all)) == 0 && etcdElsewhere(env, byNameOf(all)) {
		names = nil // BATON_ETCD_ENDPOINTS names an etcd outside the app
	}
	byName := byNameOf(all)

	e := newEditor(d)
	var changes []string

	// The environment first, so that a new one lands above services.
	var items []*yaml.Node
	if !hasEntry(env, "BATON_ETCD_ENDPOINTS") {
		endpoints := endpointList(names, byName)
		if opts.EtcdApp != "" {
			endpoints = EtcdAppEndpoint(opts.EtcdApp)
		}
		items = append(items, scalar("BATON_ETCD_ENDPOINTS="+endpoints))
		changes = append(changes, fmt.Sprintf("added BATON_ETCD_ENDPOINTS=%s to the app's environment, which Convox gives every service", endpoints))
	}
	if opts.EtcdApp != "" || bootstrapsAuth(names, byName, opts) {
		// Names only: the values are set with `convox env set`, never in
		// the manifest.
		for _, name := range []string{"BATON_ETCD_USERNAME", "BATON_ETCD_PASSWORD"} {
			if !hasEntry(env, name) {
				items = append(items, scalar(name))
				changes = append(changes, fmt.Sprintf("added %s (a name, no value) to the app's environment", name))
			}
		}
	}
	if len(items) > 0 {
		if envKey == nil {
			e.addTopKey(servicesKey, "environment", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items})
		} else {
			e.appendItems(envKey, env, items...)
		}
	}

	// Before the services are added: an insertion at the end of the last
	// service must come before the new services that follow it.
	health, err := wireHealth(e, all, env)
	if err != nil {
		return nil, err
	}

	src := buildSource(all)
	var added []*yaml.Node
	for i, name := range names {
		if s := byName[name]; s != nil {
			keys, err := complete(e, s, name, names, opts)
			if err != nil {
				return nil, err
			}
			if len(keys) > 0 {
				changes = append(changes, fmt.Sprintf("service %s: added %s", name, strings.Join(keys, ", ")))
			}
			continue
		}
		k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}
		if i == 0 {
			k.HeadComment = headComment(len(names), opts.Storage)
		}
		body := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		body.Content = append(body.Content, image(src, opts)...)
		body.Content = append(body.Content, etcdService(name, names, opts)...)
		added = append(added, k, body)
		changes = append(changes, fmt.Sprintf("added service %s (%s)", name, describe(src, opts)))
	}
	if len(added) > 0 {
		if servicesKey == nil {
			e.addTopKey(nil, "services", &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: added})
		} else {
			e.appendEntries(servicesKey, services, added...)
		}
	}
	changes = append(changes, health...)
	if len(changes) == 0 {
		return nil, nil
	}

	out, err := e.result()
	if err != nil {
		return nil, err
	}
	nd, err := Parse(out)
	if err != nil {
		return nil, fmt.Errorf("manifest: the edited manifest does not parse (%v); the file is left as it was", err)
	}
	*d = *nd
	return changes, nil
}

// serviceList reads the services for Init, which needs their names,
// commands and bodies only.
func serviceList(services *yaml.Node) []*service {
	var out []*service
	for _, p := range pairs(services) {
		s := &service{name: p.key.Value, key: p.key, raw: p.value}
		if b := resolve(p.value); b != nil && b.Kind == yaml.MappingNode {
			s.body = b
		}
		if cmd := s.value("command"); cmd != nil {
			s.command, _ = str(cmd)
		}
		out = append(out, s)
	}
	return out
}

// plan returns the names of the etcd services the manifest should have.
func plan(all []*service, members int) ([]string, error) {
	existing := etcdServices(all)
	want := []string{"etcd"}
	if members == 3 {
		want = []string{"etcd-0", "etcd-1", "etcd-2"}
	}
	switch {
	case len(existing) == 0:
		return want, nil
	case members == 0:
		return existing, nil
	}
	for _, n := range existing {
		if !slices.Contains(want, n) {
			return nil, fmt.Errorf("%w: the manifest has etcd service %s, and %d member(s) would be %s beside it; remove it first, or leave the member count out to complete what is there",
				ErrConflict, strings.Join(existing, ", "), members, strings.Join(want, ", "))
		}
	}
	return want, nil
}

// buildSource is the service whose image the etcd services run `baton
// etcd` from: the first that runs baton, else the first that is built.
func buildSource(all []*service) *service {
	for _, s := range all {
		if runsBaton(s.command) && !runsEtcd(s.command) && !etcdMember.MatchString(s.name) {
			return s
		}
	}
	for _, s := range all {
		if s.value("build") != nil && !runsEtcd(s.command) && !etcdMember.MatchString(s.name) {
			return s
		}
	}
	return nil
}

// image returns the build: or image: of a new etcd service.
func image(src *service, opts Options) []*yaml.Node {
	if opts.Image {
		return kv("image", scalar(EtcdImage))
	}
	if src != nil {
		if b := src.value("build"); b != nil {
			return kv("build", deepCopy(b))
		}
		if i := src.value("image"); i != nil {
			return kv("image", deepCopy(i))
		}
	}
	return kv("build", scalar("."))
}

func describe(src *service, opts Options) string {
	switch {
	case opts.Image:
		return "etcd from " + EtcdImage
	case src != nil:
		return "baton etcd, from the image of service " + src.name
	}
	return "baton etcd, built from ."
}

func headComment(members int, st Storage) string {
	if members == 1 {
		return wrap("etcd for baton (baton convox init): one member, part of this app, so every "+
			"release of the app (a deploy, `convox env set`) restarts it. "+st.comment(), 76)
	}
	return wrap(fmt.Sprintf("etcd for baton (baton convox init): %d members, one service each, formed from "+
		"a static --initial-cluster. No port:, so Convox adds no readiness check, which "+
		"would keep the members from reaching each other while they form. Every release "+
		"of the app restarts all of them. %s", members, st.comment()), 76)
}

// etcdCommand is the command line of etcd member name of the cluster names.
func etcdCommand(name string, names []string, opts Options) string {
	args := []string{"baton", "etcd"}
	if opts.Image {
		args = []string{"/usr/local/bin/etcd"}
	}
	args = append(args,
		"--name", name,
		"--data-dir", dataDir,
		"--listen-client-urls", fmt.Sprintf("http://0.0.0.0:%d", clientPort),
		"--advertise-client-urls", fmt.Sprintf("http://%s:%d", name, clientPort))
	if len(names) > 1 {
		cluster := make([]string, len(names))
		for i, n := range names {
			cluster[i] = fmt.Sprintf("%s=http://%s:%d", n, n, peerPort)
		}
		args = append(args,
			"--listen-peer-urls", fmt.Sprintf("http://0.0.0.0:%d", peerPort),
			"--initial-advertise-peer-urls", fmt.Sprintf("http://%s:%d", name, peerPort),
			"--initial-cluster", strings.Join(cluster, ","),
			"--initial-cluster-state", "new",
			"--initial-cluster-token", clusterToken)
	}
	return strings.Join(args, " ")
}

// etcdService is a new etcd service's definition after its build: or
// image:.
func etcdService(name string, names []string, opts Options) []*yaml.Node {
	var out []*yaml.Node
	out = append(out, kv("command", scalar(etcdCommand(name, names, opts)))...)
	out = append(out, kv("internal", boolean11(true))...)
	out = append(out, kv("singleton", boolean11(true))...)
	out = append(out, ports(len(names))...)
	out = append(out, volume(opts.Storage)...)
	return out
}

// ports: one member serves clients on port:, and Convox checks it is ready
// on /health; members of a cluster list both ports under ports:, with no
// readiness check (see headComment).
func ports(members int) []*yaml.Node {
	if members == 1 {
		return append(kv("port", number(clientPort)), kv("health", scalar("/health"))...)
	}
	return kv("ports", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{number(clientPort), number(peerPort)}})
}

// complete adds to an existing etcd service what it lacks, and returns the
// keys it added. Values already there stay, right or wrong: Check says what
// is wrong with them.
func complete(e *editor, s *service, name string, names []string, opts Options) ([]string, error) {
	var add []*yaml.Node
	has := func(k string) bool { return s.value(k) != nil }
	if !has("command") {
		img, _ := str(s.value("image"))
		switch {
		case !has("build") && !has("image"):
			add = append(add, image(nil, opts)...)
			add = append(add, kv("command", scalar(etcdCommand(name, names, opts)))...)
		case strings.Contains(img, "etcd"):
			add = append(add, kv("command", scalar(etcdCommand(name, names, Options{Image: true})))...)
		}
	}
	addedCommand := len(add) > 0
	if !has("internal") {
		add = append(add, kv("internal", boolean11(true))...)
	}
	if !has("singleton") {
		add = append(add, kv("singleton", boolean11(true))...)
	}
	switch {
	case !has("port") && !has("ports"):
		add = append(add, ports(len(names))...)
	case has("port") && !has("health") && len(names) == 1:
		add = append(add, kv("health", scalar("/health"))...)
	}
	if addedCommand && !has("volumeOptions") && !has("volumes") {
		add = append(add, volume(opts.Storage)...)
	}
	if len(add) == 0 {
		return nil, nil
	}
	if s.raw.Kind == yaml.AliasNode {
		return nil, fmt.Errorf("manifest: line %d: service %s is an alias (*%s) and lacks %s; complete it where the anchor is defined", s.raw.Line, name, s.raw.Value, add[0].Value)
	}
	e.appendEntries(s.key, s.raw, add...)
	var keys []string
	for i := 0; i < len(add); i += 2 {
		k := add[i].Value
		if v := add[i+1]; v.Kind == yaml.ScalarNode && k != "command" {
			k += ": " + v.Value
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func kv(key string, value *yaml.Node) []*yaml.Node {
	return []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, value}
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func number(i int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(i)}
}

func boolean11(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

// bootstrapsAuth reports whether the app's etcd services, as Init leaves
// them, run `baton etcd`, which sets up auth from BATON_ETCD_USERNAME and
// BATON_ETCD_PASSWORD; etcd's own image does not.
func bootstrapsAuth(names []string, byName map[string]*service, opts Options) bool {
	for _, n := range names {
		s := byName[n]
		if s == nil && !opts.Image {
			return true
		}
		if s != nil {
			if _, ok := batonCommand(s.command, "etcd"); ok {
				return true
			}
		}
	}
	return false
}
