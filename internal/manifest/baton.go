package manifest

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// endpoint is one URL of BATON_ETCD_ENDPOINTS that names a service of the
// app.
type endpoint struct {
	raw, service, port string
	// elsewhere: the host may name a service of another app
	// (etcd.other.convox.local).
	elsewhere bool
}

// appEndpoints reads BATON_ETCD_ENDPOINTS. It returns only the endpoints
// that name a service of this app: a bare name ("etcd") or a cluster-local
// one ("etcd.myapp.convox.local"); other hosts are outside the app and not
// Check's to know.
func appEndpoints(value string) []endpoint {
	if strings.Contains(value, "${") {
		return nil // interpolated at deploy time
	}
	var out []endpoint
	for _, raw := range strings.Split(value, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		host, port := raw, ""
		if strings.Contains(raw, "://") {
			u, err := url.Parse(raw)
			if err != nil {
				continue
			}
			host, port = u.Hostname(), u.Port()
		} else if h, p, err := net.SplitHostPort(raw); err == nil {
			host, port = h, p
		}
		if host == "" || net.ParseIP(host) != nil || host == "localhost" {
			continue
		}
		label, rest, dotted := strings.Cut(host, ".")
		if dotted && !strings.HasSuffix(rest, ".local") && rest != "local" {
			continue
		}
		out = append(out, endpoint{raw: raw, service: label, port: port, elsewhere: strings.Count(host, ".") >= 3})
	}
	return out
}

// exposes reports whether a service exposes port inside the app, through
// port: or ports:. A service with neither has no address at all.
func (s *service) exposes(port string) bool {
	for _, p := range s.ports() {
		if strconv.Itoa(p) == port {
			return true
		}
	}
	return false
}

// ports are the port numbers a service exposes inside the app.
func (s *service) ports() []int {
	var out []int
	if p := s.mainPort(); p > 0 {
		out = append(out, p)
	}
	if ps := resolve(s.value("ports")); ps != nil && ps.Kind == yaml.SequenceNode {
		for _, item := range ps.Content {
			ri := resolve(item)
			if ri.Kind == yaml.MappingNode {
				_, item = get(ri, "port")
			} else if sv, ok := str(ri); ok && isString(ri) {
				num, _, _ := strings.Cut(sv, "/")
				if n, err := strconv.Atoi(num); err == nil {
					out = append(out, n)
				}
				continue
			}
			if n, ok := portNumber(item); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// mainPort is the number of a service's port:, 0 without one.
func (s *service) mainPort() int {
	v := resolve(s.value("port"))
	if v == nil {
		return 0
	}
	if v.Kind == yaml.MappingNode {
		_, v = get(v, "port")
	}
	if n, ok := portNumber(v); ok {
		return n
	}
	if sv, ok := str(v); ok {
		_, num, _ := strings.Cut(sv, ":")
		n, _ := strconv.Atoi(num)
		return n
	}
	return 0
}

func (s *service) isTrue(key string) bool {
	b, _ := boolean(s.value(key))
	return b
}

// endpointsFor returns the BATON_ETCD_ENDPOINTS entry a service gets: its
// own if it lists one, else the app's (Convox gives app-level variables to
// every service, and a service's own entry comes after them).
func endpointsFor(app []envEntry, s *service) (envEntry, bool) {
	var found envEntry
	ok := false
	for _, list := range [][]envEntry{app, s.env} {
		for _, e := range list {
			if e.name == "BATON_ETCD_ENDPOINTS" {
				found, ok = e, true
			}
		}
	}
	return found, ok
}

// baton checks that every baton process can reach an etcd, that every etcd
// is one cluster that stays one, and that timers run once.
func (c *checker) baton(app []envEntry, services []*service, timers []*timer) {
	byName := map[string]*service{}
	for _, s := range services {
		byName[s.name] = s
	}

	// Where BATON_ETCD_ENDPOINTS points, it must find an etcd.
	named := map[string]bool{}
	checkEntry := func(where string, e envEntry) {
		if e.name != "BATON_ETCD_ENDPOINTS" || !e.hasValue {
			return
		}
		for _, ep := range appEndpoints(e.value) {
			s := byName[ep.service]
			switch {
			case s == nil && ep.elsewhere:
				// Another app's service, such as an etcd app's.
			case s == nil:
				c.addf(e.node, "%sBATON_ETCD_ENDPOINTS: %s names service %s, but there is no service %s; baton could reach no etcd", prefix(where), ep.raw, ep.service, ep.service)
			case len(s.ports()) == 0:
				named[s.name] = true
				c.addf(e.node, "%sBATON_ETCD_ENDPOINTS: %s names service %s, which has no port: or ports:, so Convox gives it no address", prefix(where), ep.raw, ep.service)
			default:
				named[s.name] = true
				if ep.port != "" && !s.exposes(ep.port) {
					c.addf(e.node, "%sBATON_ETCD_ENDPOINTS: %s: service %s does not expose port %s (it has %s)", prefix(where), ep.raw, ep.service, ep.port, portList(s.ports()))
				}
			}
		}
	}
	for _, e := range app {
		checkEntry("environment", e)
	}
	for _, s := range services {
		for _, e := range s.env {
			checkEntry("service "+s.name+": environment", e)
		}
		if len(s.env) > 0 && len(app) > 0 {
			c.bareOverride(app, s)
		}
	}

	// A baton client with no BATON_ETCD_ENDPOINTS at all uses
	// http://etcd:2379, the default under Convox.
	noEtcd := func(at *yaml.Node, what string) {
		c.addf(at, "%s runs baton, but no etcd is reachable: BATON_ETCD_ENDPOINTS is not set and there is no service etcd (baton's default under Convox is http://etcd:2379); run `baton convox init`", what)
	}
	for _, s := range services {
		if !runsBaton(s.command) || runsEtcd(s.command) {
			continue
		}
		if _, ok := endpointsFor(app, s); !ok && byName["etcd"] == nil {
			noEtcd(s.cmdNode, "service "+s.name)
		}
	}
	for _, t := range timers {
		s := byName[t.service]
		if s == nil || !runsBaton(t.command) {
			continue
		}
		if _, ok := endpointsFor(app, s); !ok && byName["etcd"] == nil {
			noEtcd(t.cmdNode, "timer "+t.name)
		}
	}

	for _, s := range services {
		if etcdMember.MatchString(s.name) || runsEtcd(s.command) || (named[s.name] && s.command == "" && imageIsEtcd(s)) {
			c.etcd(s, byName)
		}
	}

	for _, t := range timers {
		if t.command == "" || runsOnce(t.command) {
			continue
		}
		c.addf(t.cmdNode, "timer %s runs %q directly: a Convox timer is a Kubernetes CronJob, which may start one schedule twice (a missed start caught up, a job retried after its pod was lost); "+
			"run it through baton so each tick runs once: baton run --once %s --ttl D -- %s, with D shorter than the schedule's period", t.name, t.command, t.name, t.command)
	}
}

func portList(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ", ")
}

// bareOverride reports a service that lists a BATON_* variable without a
// value when the app level gives it a default: the bare entry comes last
// and asks for a value set with `convox env set`, so the default no longer
// counts and the deploy fails without one.
func (c *checker) bareOverride(app []envEntry, s *service) {
	defaults := map[string]bool{}
	for _, e := range app {
		defaults[e.name] = e.hasValue
	}
	for _, e := range s.env {
		if !e.hasValue && defaults[e.name] && strings.HasPrefix(e.name, "BATON_") {
			c.addf(e.node, "service %s: environment lists %s without a value, which overrides the app-level default: Convox then requires `convox env set %s=...` and refuses to deploy without it; drop the entry to use the default", s.name, e.name, e.name)
		}
	}
}

// etcd checks a service that runs, or is named as, baton's etcd.
func (c *checker) etcd(s *service, byName map[string]*service) {
	where := "service " + s.name
	if !s.isTrue("singleton") {
		c.addf(s.at("singleton"), "%s runs etcd but is not singleton: true; a deploy would start the new etcd beside the old one, a second, empty cluster behind the same name, and a tick could be claimed in both", where)
	}
	if !s.isTrue("internal") {
		c.addf(s.at("internal"), "%s runs etcd but is not internal: true; a service with a port is public unless internal, and etcd would be open to anyone", where)
	}
	if _, hi := serviceScale(s.body); hi > 1 {
		c.addf(s.at("scale"), "%s runs etcd at scale %d: each process would be a separate one-member cluster behind one name, and a tick could be claimed in each; keep it at 1 (three members are three services, etcd-0, etcd-1 and etcd-2)", where, hi)
	}
	if s.isTrue("agent") {
		c.addf(s.at("agent"), "%s runs etcd as an agent: one process per node, each a separate cluster; etcd must not be an agent", where)
	}

	args, runs := etcdArgs(s.command)
	if !runs {
		if img, _ := str(s.value("image")); s.command == "" && (strings.Contains(img, "etcd-development/etcd") || strings.Contains(img, "coreos/etcd")) {
			c.addf(s.at("image"), "%s runs etcd's image without a command: etcd then serves 127.0.0.1 only, out of reach of every other service; give it --listen-client-urls http://0.0.0.0:2379 and --advertise-client-urls http://%s:2379", where, s.name)
		}
		return
	}
	c.storage(s, args)
	if urls, ok := flagValue(args, "listen-client-urls"); !ok || loopbackOnly(urls) {
		c.addf(s.cmdNode, "%s: etcd serves clients on 127.0.0.1 only (--listen-client-urls), out of reach of every other service; give it --listen-client-urls http://0.0.0.0:2379", where)
	}

	members := initialCluster(args)
	if s.mainPort() > 0 && !healthDisabled(s) {
		if path := healthPath(s); !isEtcdHealth(path) {
			c.addf(s.at("health"), "%s: port %d gets Convox's readiness check on %s, which etcd answers with 404, so no process ever becomes ready; set health: /health", where, s.mainPort(), path)
		} else if len(members) > 1 {
			c.addf(s.at("port"), "%s is one of %d etcd members and has port:, so Convox checks its readiness, and Kubernetes sends peers' traffic only to ready members while a member is ready only once the cluster has a leader: the members never meet; "+
				"expose its ports with ports: [2379, 2380] and no port:", where, len(members))
		}
	}
	if len(members) > 1 {
		if urls, ok := flagValue(args, "listen-peer-urls"); !ok || loopbackOnly(urls) {
			c.addf(s.cmdNode, "%s: etcd serves its peers on 127.0.0.1 only (--listen-peer-urls), so the other members cannot reach it; give it --listen-peer-urls http://0.0.0.0:2380", where)
		}
		for _, m := range members {
			for _, ep := range appEndpoints(m.url) {
				peer := byName[ep.service]
				switch {
				case peer == nil:
					c.addf(s.cmdNode, "%s: --initial-cluster names member %s at %s, but there is no service %s", where, m.name, m.url, ep.service)
				case ep.port != "" && !peer.exposes(ep.port):
					c.addf(s.cmdNode, "%s: --initial-cluster names member %s at %s, but service %s does not expose port %s; list it under ports:", where, m.name, m.url, ep.service, ep.port)
				}
			}
		}
	}
}

// imageIsEtcd reports whether a service runs an etcd image.
func imageIsEtcd(s *service) bool {
	img, _ := str(s.value("image"))
	return strings.Contains(img, "etcd")
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

func healthDisabled(s *service) bool {
	h := resolve(s.value("health"))
	if h == nil || h.Kind != yaml.MappingNode {
		return false
	}
	_, d := get(h, "disable")
	b, _ := boolean(d)
	return b
}

// healthPath is the path of a service's readiness check; Convox's default
// is /.
func healthPath(s *service) string {
	h := resolve(s.value("health"))
	if h != nil && h.Kind == yaml.MappingNode {
		_, h = get(h, "path")
	}
	if p, ok := str(h); ok && p != "" {
		return p
	}
	return "/"
}

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
	var at *yaml.Node
	if list := resolve(s.value("volumeOptions")); list != nil && list.Kind == yaml.SequenceNode {
		for _, item := range list.Content {
			for _, kind := range []string{"emptyDir", "awsEfs"} {
				if _, vol := get(item, kind); vol != nil {
					if m, ok := str(valueOf(vol, "mountPath")); ok && m != "" {
						mounts = append(mounts, strings.TrimSuffix(m, "/"))
						at = s.at("volumeOptions")
					}
				}
			}
		}
	}
	if len(mounts) == 0 {
		return
	}
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

// valueOf returns the value of key in mapping m, or nil.
func valueOf(m *yaml.Node, key string) *yaml.Node {
	_, v := get(m, key)
	return v
}
