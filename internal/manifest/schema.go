package manifest

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// What Convox accepts in a v3 convox.yml, from its manifest reference
// (docs.convox.com: convox.yml, Service, Timer, Resource, Volumes) and its
// parser, which reads the file with YAML 1.1 rules into structs and ignores
// keys it does not know.

// validName is what Convox requires of service, timer and resource names.
var validName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// validEnvName is what Kubernetes accepts as an environment variable name.
var validEnvName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

var topKeys = keys("appSettings", "balancers", "budget", "configs", "environment", "labels", "params", "resources", "services", "timers")

var timerKeys = keys("command", "concurrencyPolicy", "schedule", "service")

// check checks a value; where names it in messages ("service web: port").
type check func(c *checker, where string, v *yaml.Node)

var serviceKeys = map[string]check{
	"accessControl":      isMapping,
	"agent":              checkAgent,
	"annotations":        isList,
	"build":              checkBuild,
	"certificate":        isMapping,
	"command":            isScalar,
	"configMounts":       isList,
	"deployment":         checkDeployment,
	"disableHostUsers":   isBool,
	"dnsConfig":          isMapping,
	"domain":             checkDomain,
	"drain":              isInt,
	"environment":        func(c *checker, where string, v *yaml.Node) { c.environment(where, v) },
	"grpcHealthEnabled":  isBool,
	"health":             checkHealth,
	"image":              isScalar,
	"imagePullSecrets":   isList,
	"ingressAnnotations": isList,
	"init":               isBool,
	"initContainer":      isMapping,
	"internal":           isBool,
	"internalRouter":     isBool,
	"labels":             isMapping,
	"lifecycle":          isMapping,
	"liveness":           isMapping,
	"nodeAffinityLabels": isList,
	"nodeSelectorLabels": isMapping,
	"port":               checkPort,
	"ports":              checkPorts,
	"privileged":         isBool,
	"resources":          isList, // that each names a resource is checked with the resources at hand
	"scale":              checkScale,
	"securityContext":    isMapping,
	"singleton":          isBool,
	"startupProbe":       isMapping,
	"sticky":             isBool,
	"termination":        checkTermination,
	"test":               isScalar,
	"timeout":            isInt,
	"tls":                isMapping,
	"volumeOptions":      checkVolumeOptions,
	"volumes":            isList,
	"whitelist":          isScalar,
}

func keys(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// unknownKey reports key k, which is not in known.
func (c *checker) unknownKey(where string, k *yaml.Node, known []string) {
	msg := fmt.Sprintf("%sunknown key %q; Convox ignores keys it does not know, so this setting would be lost", prefix(where), k.Value)
	if s := suggest(k.Value, known); s != "" {
		msg = fmt.Sprintf("%sunknown key %q (did you mean %s?); Convox ignores keys it does not know, so this setting would be lost", prefix(where), k.Value, s)
	}
	c.addf(k, "%s", msg)
}

func prefix(where string) string {
	if where == "" {
		return ""
	}
	return where + ": "
}

// suggest returns the known key nearest to k, if one is near.
func suggest(k string, known []string) string {
	best, bestDist := "", 3
	for _, s := range known {
		if strings.EqualFold(s, k) {
			return s
		}
		if len(k) >= 4 && strings.HasPrefix(strings.ToLower(s), strings.ToLower(k)) {
			return s
		}
		if d := distance(strings.ToLower(k), strings.ToLower(s)); d < bestDist {
			best, bestDist = s, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func isMapping(c *checker, where string, v *yaml.Node) {
	if !isNull(v) && resolve(v).Kind != yaml.MappingNode {
		c.addf(v, "%s is %s; want a mapping", where, kindName(v))
	}
}

func isList(c *checker, where string, v *yaml.Node) {
	if !isNull(v) && resolve(v).Kind != yaml.SequenceNode {
		c.addf(v, "%s is %s; want a list", where, kindName(v))
	}
}

func isScalar(c *checker, where string, v *yaml.Node) {
	if _, ok := str(v); !ok && !isNull(v) {
		c.addf(v, "%s is %s; want a string", where, kindName(v))
	}
}

func isBool(c *checker, where string, v *yaml.Node) {
	if _, ok := boolean(v); !ok {
		c.addf(v, "%s is %s; want true or false", where, kindName(v))
	}
}

func isInt(c *checker, where string, v *yaml.Node) {
	if _, ok := integer(v); !ok {
		c.addf(v, "%s is %s; want a whole number", where, kindName(v))
	}
}

// isIntIn checks an integer in [lo, hi].
func isIntIn(c *checker, where string, v *yaml.Node, lo, hi int, why string) {
	i, ok := integer(v)
	switch {
	case !ok:
		c.addf(v, "%s is %s; want a whole number", where, kindName(v))
	case i < lo || i > hi:
		c.addf(v, "%s is %d; %s", where, i, why)
	}
}

// mappingOf checks that v is a mapping with only the given keys, each
// checked; it returns the pairs.
func (c *checker) mappingOf(where string, v *yaml.Node, fields map[string]check) []pair {
	if isNull(v) {
		return nil
	}
	if resolve(v).Kind != yaml.MappingNode {
		c.addf(v, "%s is %s; want a mapping", where, kindName(v))
		return nil
	}
	ps := pairs(v)
	for _, p := range ps {
		f, ok := fields[p.key.Value]
		if !ok {
			c.unknownKey(where, p.key, sortedKeys(fields))
			continue
		}
		if f != nil {
			f(c, where+"."+p.key.Value, p.value)
		}
	}
	return ps
}

func checkAgent(c *checker, where string, v *yaml.Node) {
	if resolve(v).Kind == yaml.MappingNode {
		c.addf(v, "%s is a mapping; Convox wants true or false, and ports given at the service level", where)
		return
	}
	isBool(c, where, v)
}

func checkBuild(c *checker, where string, v *yaml.Node) {
	if resolve(v).Kind == yaml.MappingNode {
		c.mappingOf(where, v, map[string]check{"path": isScalar, "manifest": isScalar, "args": isList})
		return
	}
	isScalar(c, where, v)
}

func checkDomain(c *checker, where string, v *yaml.Node) {
	if resolve(v).Kind == yaml.SequenceNode {
		for _, d := range resolve(v).Content {
			isScalar(c, where+" entry", d)
		}
		return
	}
	isScalar(c, where, v)
}

func checkDeployment(c *checker, where string, v *yaml.Node) {
	c.mappingOf(where, v, map[string]check{
		"minimum": func(c *checker, where string, v *yaml.Node) {
			isIntIn(c, where, v, 0, 100, "Convox wants a percentage from 0 to 100: how many processes stay up during a deploy")
		},
		"maximum": func(c *checker, where string, v *yaml.Node) {
			isIntIn(c, where, v, 100, 200, "Convox wants a percentage from 100 to 200: how many processes may run during a deploy")
		},
	})
}

func checkHealth(c *checker, where string, v *yaml.Node) {
	if resolve(v).Kind == yaml.MappingNode {
		c.mappingOf(where, v, map[string]check{
			"disable": isBool, "grace": isInt, "interval": isInt, "path": isScalar, "timeout": isInt, "port": checkPort,
		})
		return
	}
	isScalar(c, where, v)
}

func checkTermination(c *checker, where string, v *yaml.Node) {
	c.mappingOf(where, v, map[string]check{"grace": func(c *checker, where string, v *yaml.Node) {
		isIntIn(c, where, v, 0, 1<<31-1, "want seconds, 0 or more")
	}})
}

// portNumber reads a port as Convox does: a number, or a string of one.
func portNumber(v *yaml.Node) (int, bool) {
	if i, ok := integer(v); ok {
		return i, true
	}
	if s, ok := str(v); ok && isString(v) {
		i, err := strconv.Atoi(s)
		return i, err == nil
	}
	return 0, false
}

func validPort(c *checker, where string, node *yaml.Node, p int) {
	if p < 1 || p > 65535 {
		c.addf(node, "%s is %d; want a port from 1 to 65535", where, p)
	}
}

// checkPort checks a service's main port: 3000, "https:3000", "grpc:5551"
// or {port: 3000, scheme: https}.
func checkPort(c *checker, where string, v *yaml.Node) {
	const want = `want a port number, "scheme:port" or {port: N, scheme: S}`
	rv := resolve(v)
	switch {
	case rv.Kind == yaml.MappingNode:
		ps := c.mappingOf(where, v, map[string]check{"port": nil, "scheme": isScalar})
		_, pv := get(rv, "port")
		if pv == nil {
			c.addf(v, "%s has no port; %s", where, want)
			return
		}
		for _, p := range ps {
			if p.key.Value == "scheme" {
				checkScheme(c, where+".scheme", p.value)
			}
		}
		checkPort(c, where+".port", pv)
	case rv.Kind == yaml.ScalarNode && rv.Tag == "!!int":
		p, _ := integer(rv)
		validPort(c, where, v, p)
	case isString(rv):
		scheme, num, hasScheme := strings.Cut(rv.Value, ":")
		if !hasScheme {
			num = scheme
		}
		p, err := strconv.Atoi(num)
		if err != nil {
			c.addf(v, "%s is %q; %s", where, rv.Value, want)
			return
		}
		if hasScheme {
			checkSchemeValue(c, where, v, scheme)
		}
		validPort(c, where, v, p)
	default:
		c.addf(v, "%s is %s; %s", where, kindName(v), want)
	}
}

func checkScheme(c *checker, where string, v *yaml.Node) {
	if s, ok := str(v); ok {
		checkSchemeValue(c, where, v, s)
	}
}

func checkSchemeValue(c *checker, where string, v *yaml.Node, s string) {
	switch strings.ToLower(s) {
	case "http", "https", "grpc":
	default:
		c.addf(v, "%s: scheme %q; Convox knows http, https and grpc", where, s)
	}
}

// checkPorts checks a service's extra ports: 5001, "5002/udp" or
// {port: 5002, protocol: udp}.
func checkPorts(c *checker, where string, v *yaml.Node) {
	if isNull(v) {
		return
	}
	rv := resolve(v)
	if rv.Kind != yaml.SequenceNode {
		c.addf(v, "%s is %s; want a list of ports", where, kindName(v))
		return
	}
	for _, item := range rv.Content {
		checkPortEntry(c, where+" entry", item)
	}
}

func checkPortEntry(c *checker, where string, v *yaml.Node) {
	const want = `want a port number, "port/protocol" or {port: N, protocol: tcp|udp}`
	rv := resolve(v)
	switch {
	case rv.Kind == yaml.MappingNode:
		c.mappingOf(where, v, map[string]check{"port": nil, "protocol": checkProtocol})
		_, pv := get(rv, "port")
		if pv == nil {
			c.addf(v, "%s has no port; %s", where, want)
			return
		}
		if p, ok := portNumber(pv); ok {
			validPort(c, where+".port", pv, p)
		} else {
			c.addf(pv, "%s.port is %s; want a port number", where, kindName(pv))
		}
	case rv.Kind == yaml.ScalarNode && rv.Tag == "!!int":
		p, _ := integer(rv)
		validPort(c, where, v, p)
	case isString(rv):
		num, proto, hasProto := strings.Cut(rv.Value, "/")
		p, err := strconv.Atoi(num)
		if err != nil {
			c.addf(v, "%s is %q; %s", where, rv.Value, want)
			return
		}
		if hasProto {
			checkProtocolValue(c, where, v, proto)
		}
		validPort(c, where, v, p)
	default:
		c.addf(v, "%s is %s; %s", where, kindName(v), want)
	}
}

func checkProtocol(c *checker, where string, v *yaml.Node) {
	if s, ok := str(v); ok {
		checkProtocolValue(c, where, v, s)
	} else {
		c.addf(v, "%s is %s; want tcp or udp", where, kindName(v))
	}
}

func checkProtocolValue(c *checker, where string, v *yaml.Node, proto string) {
	switch strings.ToLower(proto) {
	case "tcp", "udp":
	default:
		c.addf(v, "%s: protocol %q; want tcp or udp", where, proto)
	}
}

// scaleCount reads a service's process count as Convox does: 3, "3",
// "1-5", or {min: 1, max: 5}. ok is false when it does not parse.
func scaleCount(v *yaml.Node) (lo, hi int, ok bool) {
	rv := resolve(v)
	if i, isInt := integer(rv); isInt {
		return i, i, true
	}
	if isString(rv) {
		a, b, isRange := strings.Cut(rv.Value, "-")
		i, err := strconv.Atoi(a)
		if err != nil {
			return 0, 0, false
		}
		if !isRange {
			return i, i, true
		}
		j, err := strconv.Atoi(b)
		return i, j, err == nil
	}
	if rv.Kind == yaml.MappingNode {
		_, minV := get(rv, "min")
		_, maxV := get(rv, "max")
		if minV != nil {
			if lo, ok = portNumber(minV); !ok {
				return 0, 0, false
			}
		}
		if maxV != nil {
			if hi, ok = portNumber(maxV); !ok {
				return 0, 0, false
			}
		}
		return lo, hi, true
	}
	return 0, 0, false
}

// serviceScale returns the range of a service's process count: 1 unless
// its scale says otherwise.
func serviceScale(svc *yaml.Node) (lo, hi int) {
	_, v := get(svc, "scale")
	if v == nil {
		return 1, 1
	}
	if resolve(v).Kind == yaml.MappingNode {
		if _, cv := get(v, "count"); cv != nil {
			v = cv
		} else {
			lo, hi = 1, 1
			if _, m := get(v, "min"); m != nil {
				lo, _ = portNumber(m)
			}
			if _, m := get(v, "max"); m != nil {
				hi, _ = portNumber(m)
			}
			return lo, max(lo, hi)
		}
	}
	lo, hi, ok := scaleCount(v)
	if !ok {
		return 1, 1
	}
	return lo, hi
}

func checkCount(c *checker, where string, v *yaml.Node) {
	lo, hi, ok := scaleCount(v)
	switch {
	case !ok:
		c.addf(v, `%s is %s; want a number of processes, a range such as "1-5", or {min: 1, max: 5}`, where, kindName(v))
	case lo < 0 || hi < 0:
		c.addf(v, "%s is negative", where)
	case hi < lo:
		c.addf(v, "%s: the maximum %d is below the minimum %d", where, hi, lo)
	}
}

func checkScale(c *checker, where string, v *yaml.Node) {
	if resolve(v).Kind != yaml.MappingNode {
		checkCount(c, where, v)
		return
	}
	c.mappingOf(where, v, map[string]check{
		"autoscale": isMapping,
		"count":     checkCount,
		"cpu":       isInt,
		"gpu":       nil,
		"keda":      isMapping,
		"limit":     isMapping,
		"max":       isInt,
		"memory":    isInt,
		"min":       isInt,
		"targets":   isMapping,
		"vpa":       isMapping,
	})
}

func checkVolumeOptions(c *checker, where string, v *yaml.Node) {
	if isNull(v) {
		return
	}
	rv := resolve(v)
	if rv.Kind != yaml.SequenceNode {
		c.addf(v, "%s is %s; want a list of {emptyDir: ...} or {awsEfs: ...}", where, kindName(v))
		return
	}
	required := func(where string, at, m *yaml.Node, names ...string) {
		for _, n := range names {
			if _, x := get(m, n); x == nil || isNull(x) {
				c.addf(at, "%s has no %s; Convox requires it", where, n)
			}
		}
	}
	for _, item := range rv.Content {
		ps := c.mappingOf(where+" entry", item, map[string]check{"emptyDir": nil, "awsEfs": nil})
		kinds := 0
		for _, p := range ps {
			if p.key.Value == "emptyDir" || p.key.Value == "awsEfs" {
				kinds++
			}
		}
		if kinds != 1 && resolve(item).Kind == yaml.MappingNode {
			c.addf(item, "%s entry: want exactly one of emptyDir or awsEfs", where)
		}
		for _, p := range ps {
			w := where + "." + p.key.Value
			switch p.key.Value {
			case "emptyDir":
				c.mappingOf(w, p.value, map[string]check{"id": isScalar, "mountPath": isScalar, "sizeLimit": isScalar,
					"medium": func(c *checker, where string, v *yaml.Node) {
						if s, _ := str(v); s != "" && s != "Memory" {
							c.addf(v, `%s is %q; Convox allows only "Memory" (or nothing, for disk)`, where, s)
						}
					}})
				if resolve(p.value).Kind == yaml.MappingNode {
					required(w, p.key, resolve(p.value), "id", "mountPath")
				}
			case "awsEfs":
				c.mappingOf(w, p.value, map[string]check{"id": isScalar, "mountPath": isScalar, "storageClass": isScalar, "volumeHandle": isScalar,
					"accessMode": func(c *checker, where string, v *yaml.Node) {
						switch s, _ := str(v); s {
						case "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany":
						default:
							c.addf(v, "%s is %s; want ReadWriteOnce, ReadOnlyMany or ReadWriteMany", where, kindName(v))
						}
					}})
				if resolve(p.value).Kind == yaml.MappingNode {
					required(w, p.key, resolve(p.value), "id", "mountPath", "accessMode")
				}
			}
		}
	}
}

// envEntry is one NAME or NAME=value of an environment list.
type envEntry struct {
	name, value string
	hasValue    bool
	node        *yaml.Node
}

// environment checks an environment list and returns its entries. Convox
// takes strings, and lists of strings within it; anything else it drops
// without a word, and a mapping instead of the list is an error.
func (c *checker) environment(where string, v *yaml.Node) []envEntry {
	if isNull(v) {
		return nil
	}
	rv := resolve(v)
	if rv.Kind != yaml.SequenceNode {
		c.addf(v, "%s is %s; Convox wants a list of NAME or NAME=value", where, kindName(v))
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
			c.addf(item, "%s entry %s: %s is a mapping, which Convox drops without a word; write - %s=%s", where, k, k, k, val)
		case !isString(ri):
			c.addf(item, "%s entry is %s, which Convox drops without a word; want NAME or NAME=value", where, kindName(ri))
		default:
			name, value, hasValue := strings.Cut(ri.Value, "=")
			if name == "*" && !hasValue {
				return
			}
			if !validEnvName.MatchString(name) {
				c.addf(item, "%s entry %q: %q is not a valid variable name", where, ri.Value, name)
				return
			}
			out = append(out, envEntry{name: name, value: value, hasValue: hasValue, node: item})
		}
	}
	for _, item := range rv.Content {
		add(item, false)
	}
	return out
}
