package manifest

import (
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// endpoint is one URL of BATON_ETCD_ENDPOINTS that names a service of the
// app by its bare name, as every process of the app reaches it.
type endpoint struct{ raw, service, port string }

// appEndpoints returns the endpoints of BATON_ETCD_ENDPOINTS that name a
// service of this app. A dotted name (etcd.shop-etcd, the etcd app's; any
// DNS name) or an address is outside the app and not Check's to know.
func appEndpoints(value string) []endpoint {
	if strings.Contains(value, "${") {
		return nil // interpolated at deploy time
	}
	var out []endpoint
	for _, raw := range strings.Split(value, ",") {
		raw = strings.TrimSpace(raw)
		host, port := raw, ""
		if u, err := url.Parse(raw); err == nil && strings.Contains(raw, "://") {
			host, port = u.Hostname(), u.Port()
		} else if h, p, err := net.SplitHostPort(raw); err == nil {
			host, port = h, p
		}
		if host != "" && !strings.Contains(host, ".") && !strings.Contains(host, ":") && host != "localhost" {
			out = append(out, endpoint{raw: raw, service: host, port: port})
		}
	}
	return out
}

// ports are the port numbers a service exposes inside the app, read as
// Convox reads port: (3000, "https:3000", {port: 3000}) and ports: (5000,
// "5001/udp").
func (s *service) ports() []int {
	var out []int
	if p := s.mainPort(); p > 0 {
		out = append(out, p)
	}
	if ps := resolve(s.get("ports")); ps != nil && ps.Kind == yaml.SequenceNode {
		for _, item := range ps.Content {
			v, _ := str(item)
			if n, err := strconv.Atoi(strings.Split(v, "/")[0]); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// mainPort is the number of a service's port:, 0 without one.
func (s *service) mainPort() int {
	v := resolve(s.get("port"))
	if v != nil && v.Kind == yaml.MappingNode {
		v = valueOf(v, "port")
	}
	p, _ := str(v)
	n, _ := strconv.Atoi(p[strings.LastIndex(p, ":")+1:])
	return n
}

func (s *service) exposes(port string) bool {
	for _, p := range s.ports() {
		if strconv.Itoa(p) == port {
			return true
		}
	}
	return false
}

func (s *service) isTrue(key string) bool {
	b, _ := boolean(s.get(key))
	return b
}

// maxCount is the most processes a service's scale lets Convox run: a
// count (3, "1-5", {min: 1, max: 5}), or min and max, 10 with an autoscale
// and no max (ApplyDefaults in pkg/manifest/manifest.go).
func (s *service) maxCount() int {
	v := resolve(s.get("scale"))
	if v != nil && v.Kind == yaml.MappingNode && valueOf(v, "count") != nil {
		v = resolve(valueOf(v, "count"))
	} else if v != nil && v.Kind == yaml.MappingNode && valueOf(v, "autoscale") != nil && valueOf(v, "max") == nil {
		return 10
	}
	hi := 1
	if v != nil && v.Kind == yaml.MappingNode {
		for _, k := range []string{"min", "max"} {
			if n, ok := number(valueOf(v, k)); ok {
				hi = max(hi, n)
			}
		}
		return hi
	}
	c, _ := str(v)
	for _, part := range strings.Split(c, "-") {
		if n, err := strconv.Atoi(part); err == nil {
			hi = max(hi, n)
		}
	}
	return hi
}

// probePath is the path of a service's health: (Convox's default is /) or
// liveness:, "" when it has none or it is disabled.
func (s *service) probePath(key string) string {
	h := resolve(s.get(key))
	if h != nil && h.Kind == yaml.MappingNode {
		if off, _ := boolean(valueOf(h, "disable")); off {
			return ""
		}
		h = valueOf(h, "path")
	}
	if p, _ := str(h); p != "" || key == "liveness" {
		return p
	}
	return "/"
}

// hasEndpoints reports whether a service gets BATON_ETCD_ENDPOINTS: its
// own, or the app's, which Convox gives every service.
func (a *app) hasEndpoints(s *service) bool {
	return a.hasEnv("BATON_ETCD_ENDPOINTS") || slices.ContainsFunc(s.env, func(e envEntry) bool { return e.name == "BATON_ETCD_ENDPOINTS" })
}

// isEtcd reports whether a service runs baton's etcd: by its name, its
// command, or, named by BATON_ETCD_ENDPOINTS, an etcd image.
func (a *app) isEtcd(s *service) bool {
	if etcdMember.MatchString(s.name) || runsEtcd(s.command) {
		return true
	}
	img, _ := str(s.get("image"))
	return s.command == "" && strings.Contains(img, "etcd") && a.named(s.name)
}

// named reports whether a BATON_ETCD_ENDPOINTS of the app names service.
func (a *app) named(name string) bool {
	lists := [][]envEntry{a.env}
	for _, s := range a.services {
		lists = append(lists, s.env)
	}
	for _, list := range lists {
		for _, e := range list {
			for _, ep := range appEndpoints(e.value) {
				if e.name == "BATON_ETCD_ENDPOINTS" && ep.service == name {
					return true
				}
			}
		}
	}
	return false
}

// baton checks that every baton process can reach an etcd, that every etcd
// is one cluster that stays one, and that timers run once.
func (c *checker) baton(a *app) {
	check := func(where string, e envEntry) {
		if e.name != "BATON_ETCD_ENDPOINTS" || !e.hasValue {
			return
		}
		for _, ep := range appEndpoints(e.value) {
			switch s := a.byName[ep.service]; {
			case s == nil:
				c.addf(e.node, "%sBATON_ETCD_ENDPOINTS: %s names service %s, but there is no service %s; baton could reach no etcd", prefix(where), ep.raw, ep.service, ep.service)
			case len(s.ports()) == 0:
				c.addf(e.node, "%sBATON_ETCD_ENDPOINTS: %s names service %s, which has no port: or ports:, so Convox gives it no address", prefix(where), ep.raw, ep.service)
			case ep.port != "" && !s.exposes(ep.port):
				c.addf(e.node, "%sBATON_ETCD_ENDPOINTS: %s: service %s does not expose port %s (it has %s)", prefix(where), ep.raw, ep.service, ep.port, portList(s.ports()))
			}
		}
	}
	defaults := map[string]bool{}
	for _, e := range a.env {
		check("environment", e)
		defaults[e.name] = e.hasValue
	}
	noEtcd := func(at *yaml.Node, what string) {
		c.addf(at, "%s runs baton, but no etcd is reachable: BATON_ETCD_ENDPOINTS is not set and there is no service etcd (baton's default under Convox is http://etcd:2379); run `baton convox init`", what)
	}
	for _, s := range a.services {
		for _, e := range s.env {
			check("service "+s.name+": environment", e)
			if !e.hasValue && defaults[e.name] && strings.HasPrefix(e.name, "BATON_") {
				c.addf(e.node, "service %s: environment lists %s without a value, which overrides the app-level default: Convox then requires `convox env set %s=...` and refuses to deploy without it; drop the entry to use the default", s.name, e.name, e.name)
			}
		}
		if !a.hasEndpoints(s) && a.byName["etcd"] == nil && runsBaton(s.command) && !runsEtcd(s.command) {
			noEtcd(s.cmdNode, "service "+s.name)
		}
		if a.isEtcd(s) {
			c.etcd(a, s)
		}
	}
	for _, t := range a.timers {
		if s := a.byName[t.service]; s != nil && runsBaton(t.command) {
			if !a.hasEndpoints(s) && a.byName["etcd"] == nil {
				noEtcd(t.cmdNode, "timer "+t.name)
			}
		}
		if t.command != "" && !runsOnce(t.command) {
			c.addf(t.cmdNode, "timer %s runs %q directly: a Convox timer is a Kubernetes CronJob, which may start one schedule twice (a missed start caught up, a job retried after its pod was lost); "+
				"run it through baton so each tick runs once: baton run --once %s --ttl D -- %s, with D shorter than the schedule's period", t.name, t.command, t.name, t.command)
		}
	}
}

func portList(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ", ")
}

// etcd checks a service that runs, or is named as, baton's etcd.
func (c *checker) etcd(a *app, s *service) {
	where := "service " + s.name
	if !s.isTrue("singleton") {
		c.addf(s.at("singleton"), "%s runs etcd but is not singleton: true; a deploy would start the new etcd beside the old one, a second, empty cluster behind the same name, and a tick could be claimed in both", where)
	}
	if !s.isTrue("internal") {
		c.addf(s.at("internal"), "%s runs etcd but is not internal: true; a service with a port is public unless internal, and etcd would be open to anyone", where)
	}
	if hi := s.maxCount(); hi > 1 {
		c.addf(s.at("scale"), "%s runs etcd at scale %d: each process would be a separate one-member cluster behind one name, and a tick could be claimed in each; keep it at 1 (three members are three services, etcd-0, etcd-1 and etcd-2)", where, hi)
	}
	if s.isTrue("agent") {
		c.addf(s.at("agent"), "%s runs etcd as an agent: one process per node, each a separate cluster; etcd must not be an agent", where)
	}
	args, runs := etcdArgs(s.command)
	if !runs {
		if img, _ := str(s.get("image")); s.command == "" && (strings.Contains(img, "etcd-development/etcd") || strings.Contains(img, "coreos/etcd")) {
			c.addf(s.at("image"), "%s runs etcd's image without a command: etcd then serves 127.0.0.1 only, out of reach of every other service; give it --listen-client-urls http://0.0.0.0:2379 and --advertise-client-urls http://%s:2379", where, s.name)
		}
		return
	}
	c.storage(s, args)
	if urls, ok := flagValue(args, "listen-client-urls"); !ok || loopbackOnly(urls) {
		c.addf(s.cmdNode, "%s: etcd serves clients on 127.0.0.1 only (--listen-client-urls), out of reach of every other service; give it --listen-client-urls http://0.0.0.0:2379", where)
	}
	members := initialCluster(args)
	if s.mainPort() > 0 {
		for _, probe := range []struct{ key, kind, does string }{
			{"health", "readiness", "so no process ever becomes ready; set health: /health"},
			{"liveness", "liveness", "so Kubernetes restarts it again and again; use path: /livez"},
		} {
			if path := s.probePath(probe.key); path != "" && !isEtcdHealth(path) {
				c.addf(s.at(probe.key), "%s: port %d gets Convox's %s check on %s, which etcd answers with 404, %s", where, s.mainPort(), probe.kind, path, probe.does)
			}
		}
		if len(members) > 1 && s.probePath("health") != "" {
			c.addf(s.at("port"), "%s is one of %d etcd members and has port:, so Convox checks its readiness, and Kubernetes sends peers' traffic only to ready members while a member is ready only once the cluster has a leader: the members never meet; "+
				"expose its ports with ports: [2379, 2380] and no port:", where, len(members))
		}
	}
	if len(members) < 2 {
		return
	}
	if urls, ok := flagValue(args, "listen-peer-urls"); !ok || loopbackOnly(urls) {
		c.addf(s.cmdNode, "%s: etcd serves its peers on 127.0.0.1 only (--listen-peer-urls), so the other members cannot reach it; give it --listen-peer-urls http://0.0.0.0:2380", where)
	}
	for _, m := range members {
		for _, ep := range appEndpoints(m.url) {
			switch peer := a.byName[ep.service]; {
			case peer == nil:
				c.addf(s.cmdNode, "%s: --initial-cluster names member %s at %s, but there is no service %s", where, m.name, m.url, ep.service)
			case ep.port != "" && !peer.exposes(ep.port):
				c.addf(s.cmdNode, "%s: --initial-cluster names member %s at %s, but service %s does not expose port %s; list it under ports:", where, m.name, m.url, ep.service, ep.port)
			}
		}
	}
}

type member struct{ name, url string }

func initialCluster(args []string) []member {
	v, ok := flagValue(args, "initial-cluster")
	if !ok {
		return nil
	}
	var out []member
	for _, part := range strings.Split(v, ",") {
		name, u, _ := strings.Cut(strings.TrimSpace(part), "=")
		out = append(out, member{name, u})
	}
	return out
}

func loopbackOnly(urls string) bool {
	for _, raw := range strings.Split(urls, ",") {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			return false
		}
		h := u.Hostname()
		if ip := net.ParseIP(h); (ip == nil || !ip.IsLoopback()) && h != "localhost" {
			return false
		}
	}
	return true
}

// isEtcdHealth reports whether etcd answers path: /health, and /livez and
// /readyz (etcdserver/api/etcdhttp/health.go).
func isEtcdHealth(path string) bool {
	p, _, _ := strings.Cut(path, "?")
	return p == "/health" || p == "/readyz" || p == "/livez"
}

// storage checks that an etcd service with volumes keeps its data on one:
// etcd writes to --data-dir (by default NAME.etcd in its working
// directory), and a volume mounted elsewhere holds nothing, so the data
// would be lost at each restart all the same.
func (c *checker) storage(s *service, args []string) {
	var mounts []string
	if list := resolve(s.get("volumeOptions")); list != nil && list.Kind == yaml.SequenceNode {
		for _, item := range list.Content {
			for _, kind := range []string{"emptyDir", "awsEfs"} {
				if m, _ := str(valueOf(valueOf(item, kind), "mountPath")); m != "" {
					mounts = append(mounts, strings.TrimSuffix(m, "/"))
				}
			}
		}
	}
	if len(mounts) == 0 {
		return
	}
	at := s.at("volumeOptions")
	dir, ok := flagValue(args, "data-dir")
	if !ok {
		c.addf(at, "service %s mounts a volume on %s, but etcd keeps its data in its working directory (no --data-dir): give it --data-dir %s", s.name, strings.Join(mounts, ", "), mounts[0])
		return
	}
	for _, m := range mounts {
		if dir == m || strings.HasPrefix(dir, m+"/") {
			return
		}
	}
	c.addf(at, "service %s keeps etcd's data in %s, but its volume is mounted on %s, so the data is not on it: mount the volume on %s or give etcd --data-dir %s", s.name, dir, strings.Join(mounts, ", "), dir, mounts[0])
}
