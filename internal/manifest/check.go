package manifest

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Problem is one thing wrong with a manifest.
type Problem struct {
	Line    int // 1-based
	Message string
}

type checker struct{ problems []Problem }

func (c *checker) addf(at *yaml.Node, format string, a ...any) {
	line := 0
	if at != nil {
		line = at.Line
	}
	c.problems = append(c.problems, Problem{Line: line, Message: fmt.Sprintf(format, a...)})
}

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

// Check returns the problems in a manifest, ordered by line. See the
// package documentation for what it checks.
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
			c.unknownKey("", k, sortedKeys(topKeys))
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

// duplicates reports keys given twice in one mapping: Convox keeps the
// last, so the first is silently lost.
func (c *checker) duplicates(n *yaml.Node, seen map[*yaml.Node]bool) {
	if n == nil || n.Kind == yaml.AliasNode || seen[n] {
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
			if f, ok := first[k.Value]; ok {
				c.addf(k, "key %q is given twice (also on line %d); Convox keeps only this one", k.Value, f.Line)
			} else {
				first[k.Value] = k
			}
		}
	}
	for _, x := range n.Content {
		c.duplicates(x, seen)
	}
}

func (c *checker) resources(v *yaml.Node, names map[string]bool) {
	if isNull(v) {
		return
	}
	if resolve(v).Kind != yaml.MappingNode {
		c.addf(v, "resources is %s; want a mapping of resource names to definitions", kindName(v))
		return
	}
	for _, p := range pairs(v) {
		name := p.key.Value
		names[name] = true
		if !validName.MatchString(name) {
			c.addf(p.key, "resource name %q: Convox allows only lowercase letters, digits and dashes, starting with a letter", name)
		}
		where := "resource " + name
		if resolve(p.value).Kind != yaml.MappingNode {
			c.addf(p.value, "%s is %s; want a mapping with a type", where, kindName(p.value))
			continue
		}
		if _, t := get(p.value, "type"); t == nil || strings.TrimSpace(t.Value) == "" {
			c.addf(p.key, "%s has no type; Convox requires one (postgres, redis, ...)", where)
		}
	}
}

func (c *checker) services(v *yaml.Node, resources map[string]bool) []*service {
	if isNull(v) {
		return nil
	}
	if resolve(v).Kind != yaml.MappingNode {
		c.addf(v, "services is %s; want a mapping of service names to definitions", kindName(v))
		return nil
	}
	var out []*service
	for _, p := range pairs(v) {
		s := &service{name: p.key.Value, key: p.key, raw: p.value}
		out = append(out, s)
		where := "service " + s.name
		if !validName.MatchString(s.name) {
			c.addf(p.key, "service name %q: Convox allows only lowercase letters, digits and dashes, starting with a letter", s.name)
		}
		if isNull(p.value) {
			continue
		}
		if resolve(p.value).Kind != yaml.MappingNode {
			c.addf(p.value, "%s is %s; want a mapping", where, kindName(p.value))
			continue
		}
		s.body = resolve(p.value)
		for _, f := range pairs(s.body) {
			check, ok := serviceKeys[f.key.Value]
			if !ok {
				c.unknownKey(where, f.key, sortedKeys(serviceKeys))
				continue
			}
			if f.key.Value == "environment" {
				s.env = c.environment(where+": environment", f.value)
				continue
			}
			check(c, where+": "+f.key.Value, f.value)
		}
		if cmd := s.value("command"); cmd != nil {
			s.command, _ = str(cmd)
			s.cmdNode = cmd
		}
		if b, i := s.value("internal"), s.value("internalRouter"); b != nil && i != nil {
			bv, _ := boolean(b)
			iv, _ := boolean(i)
			if bv && iv {
				c.addf(i, "%s: internal and internalRouter are both true; Convox allows one", where)
			}
		}
		if rs := resolve(s.value("resources")); rs != nil && rs.Kind == yaml.SequenceNode {
			for _, r := range rs.Content {
				name, ok := str(r)
				if !ok {
					c.addf(r, "%s: resources entry is %s; want a resource name", where, kindName(r))
					continue
				}
				name, _, _ = strings.Cut(name, ":")
				if !resources[name] {
					c.addf(r, "%s: resource %q is not defined under resources; Convox rejects the manifest", where, name)
				}
			}
		}
	}
	return out
}

func (c *checker) timers(v *yaml.Node, services []*service) []*timer {
	if isNull(v) {
		return nil
	}
	if resolve(v).Kind != yaml.MappingNode {
		c.addf(v, "timers is %s; want a mapping of timer names to definitions", kindName(v))
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
		if !validName.MatchString(t.name) {
			c.addf(p.key, "timer name %q: Convox allows only lowercase letters, digits and dashes, starting with a letter", t.name)
		}
		if resolve(p.value).Kind != yaml.MappingNode {
			c.addf(p.value, "%s is %s; want a mapping with command, schedule and service", where, kindName(p.value))
			continue
		}
		for _, f := range pairs(p.value) {
			w := where + ": " + f.key.Value
			switch f.key.Value {
			case "command", "service":
				isScalar(c, w, f.value)
			case "schedule":
				s, ok := str(f.value)
				switch {
				case !ok:
					c.addf(f.value, "%s is %s; want a cron schedule such as \"0 3 * * *\"", w, kindName(f.value))
				case strings.Contains(s, "?"):
					c.addf(f.value, "%s %q: Convox rejects ? in a schedule; use *", w, s)
				case len(strings.Fields(s)) < 5:
					c.addf(f.value, "%s %q has %d fields; want 5: minute hour day-of-month month day-of-week (UTC)", w, s, len(strings.Fields(s)))
				}
			case "concurrencyPolicy":
				switch s, _ := str(f.value); s {
				case "Allow", "Forbid", "Replace":
				default:
					c.addf(f.value, "%s is %s; want Allow, Forbid or Replace", w, kindName(f.value))
				}
			default:
				if !timerKeys[f.key.Value] {
					c.unknownKey(where, f.key, sortedKeys(timerKeys))
				}
			}
		}
		for _, req := range []string{"command", "schedule", "service"} {
			if _, x := get(p.value, req); x == nil || isNull(x) {
				c.addf(p.key, "%s has no %s; Convox requires command, schedule and service", where, req)
			}
		}
		if _, cmd := get(p.value, "command"); cmd != nil {
			t.command, _ = str(cmd)
			t.cmdNode = cmd
		}
		if _, sv := get(p.value, "service"); sv != nil {
			t.service, _ = str(sv)
			if t.service != "" && !known[t.service] {
				c.addf(sv, "%s: service %q does not exist; Convox rejects the manifest", where, t.service)
			}
		}
		out = append(out, t)
	}
	return out
}

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

// bareOverride reports a service that lists a variable without a value
// when the app level gives it a default: the bare entry comes last and
// asks for a value set with `convox env set`, so the default no longer
// counts and the deploy fails without one.
func (c *checker) bareOverride(app []envEntry, s *service) {
	defaults := map[string]bool{}
	for _, e := range app {
		defaults[e.name] = e.hasValue
	}
	for _, e := range s.env {
		if !e.hasValue && defaults[e.name] {
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
