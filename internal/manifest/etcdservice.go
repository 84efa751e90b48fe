package manifest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The etcd services Init writes or completes.

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

// endpointList is BATON_ETCD_ENDPOINTS for the etcd services names.
func endpointList(names []string, byName map[string]*service) string {
	urls := make([]string, len(names))
	for i, n := range names {
		port := clientPort
		if s := byName[n]; s != nil && !s.exposes(strconv.Itoa(clientPort)) && len(s.ports()) > 0 {
			port = s.ports()[0]
		}
		urls[i] = fmt.Sprintf("http://%s:%d", n, port)
	}
	return strings.Join(urls, ",")
}

// plan returns the names of the etcd services the manifest should have.
func plan(all []*service, members int) ([]string, error) {
	var existing []string
	for _, s := range all {
		if etcdMember.MatchString(s.name) || runsEtcd(s.command) {
			existing = append(existing, s.name)
		}
	}
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
	for _, pass := range []func(*service) bool{
		func(s *service) bool { return runsBaton(s.command) },
		func(s *service) bool { return s.get("build") != nil },
	} {
		for _, s := range all {
			if pass(s) && !runsEtcd(s.command) && !etcdMember.MatchString(s.name) {
				return s
			}
		}
	}
	return nil
}

// image returns the build: or image: of a new etcd service.
func image(src *service, opts Options) []*yaml.Node {
	switch {
	case opts.Image:
		return kv("image", scalar(EtcdImage))
	case src != nil && src.get("build") != nil:
		return kv("build", deepCopy(src.get("build")))
	case src != nil && src.get("image") != nil:
		return kv("image", deepCopy(src.get("image")))
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
			"promoted release of the app (a deploy) restarts it. "+st.comment(), 76)
	}
	return wrap(fmt.Sprintf("etcd for baton (baton convox init): %d members, one service each, formed from "+
		"a static --initial-cluster. No port:, so Convox adds no readiness check, which "+
		"would keep the members from reaching each other while they form. Every promoted "+
		"release of the app restarts all of them. %s", members, st.comment()), 76)
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
	out := kv("command", scalar(etcdCommand(name, names, opts)))
	out = append(out, kv("internal", flag(true))...)
	out = append(out, kv("singleton", flag(true))...)
	out = append(out, probes(len(names))...)
	return append(out, volume(opts.Storage)...)
}

// probes: one member serves clients on port:, where Convox checks it is
// ready on /health and, with liveness:, has Kubernetes restart it when it
// stops answering /livez (etcdserver/api/etcdhttp/health.go: a local read,
// which needs no peer), 30 s after it starts. Members of a cluster list
// their ports under ports:, with no probe at all: Convox probes only port:,
// whose readiness check would keep the members apart (see headComment), and
// while a member waits for its peers etcd serves no client request
// (embed/serve.go waits for ReadyNotify), so no probe could tell a member
// that waits from one that is stuck.
func probes(members int) []*yaml.Node {
	if members > 1 {
		return kv("ports", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{integer(clientPort), integer(peerPort)}})
	}
	out := kv("port", integer(clientPort))
	out = append(out, kv("health", scalar("/health"))...)
	return append(out, kv("liveness", etcdLiveness())...)
}

func etcdLiveness() *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: append(kv("path", scalar("/livez")), kv("grace", integer(30))...)}
}

// complete adds to an existing etcd service what it lacks. Values already
// there stay, right or wrong: Check says what is wrong with them.
func (e *edit) complete(s *service, names []string, opts Options) error {
	var add []*yaml.Node
	has := func(k string) bool { return s.get(k) != nil }
	img, _ := str(s.get("image"))
	// Liveness on /livez only where the etcd is one this baton knows serves
	// it: its own, or EtcdImage.
	_, known := batonCommand(s.command, "etcd")
	known = known || img == EtcdImage
	if !has("command") {
		switch {
		case !has("build") && !has("image"):
			add = append(add, image(nil, opts)...)
			add = append(add, kv("command", scalar(etcdCommand(s.name, names, opts)))...)
			known = true
		case strings.Contains(img, "etcd"):
			add = append(add, kv("command", scalar(etcdCommand(s.name, names, Options{Image: true})))...)
		}
	}
	addedCommand := len(add) > 0
	if !has("internal") {
		add = append(add, kv("internal", flag(true))...)
	}
	if !has("singleton") {
		add = append(add, kv("singleton", flag(true))...)
	}
	switch {
	case !has("port") && !has("ports") && len(names) > 1:
		add = append(add, probes(len(names))...)
	case !has("ports") && len(names) == 1:
		if !has("port") {
			add = append(add, kv("port", integer(clientPort))...)
		}
		if !has("health") {
			add = append(add, kv("health", scalar("/health"))...)
		}
		if !has("liveness") && known {
			add = append(add, kv("liveness", etcdLiveness())...)
		}
	}
	if addedCommand && !has("volumeOptions") && !has("volumes") {
		add = append(add, volume(opts.Storage)...)
	}
	if len(add) == 0 {
		return nil
	}
	if s.value.Kind == yaml.AliasNode || s.value.Anchor != "" {
		return fmt.Errorf("manifest: line %d: service %s is shared through an anchor (%s) and lacks %s; init writes into no anchor: complete it by hand", s.key.Line, s.name, anchorText(s.value), add[0].Value)
	}
	appendTo(s.key, s.value, yaml.MappingNode, add...)
	var keys []string
	for i := 0; i < len(add); i += 2 {
		k := add[i].Value
		if v := add[i+1]; v.Kind == yaml.ScalarNode && k != "command" {
			k += ": " + v.Value
		}
		keys = append(keys, k)
	}
	e.changef("service %s: added %s", s.name, strings.Join(keys, ", "))
	return nil
}

// bootstrapsAuth reports whether the app's etcd services, as Init leaves
// them, run `baton etcd`, which sets up auth from BATON_ETCD_USERNAME and
// BATON_ETCD_PASSWORD; etcd's own image does not.
func bootstrapsAuth(names []string, byName map[string]*service, opts Options) bool {
	for _, n := range names {
		s := byName[n]
		switch {
		case s == nil:
			if !opts.Image {
				return true
			}
		case strings.HasPrefix(s.command, "baton etcd"), s.command == "" && s.get("image") == nil && s.get("build") == nil && !opts.Image:
			return true
		default:
			if _, ok := batonCommand(s.command, "etcd"); ok {
				return true
			}
		}
	}
	return false
}
