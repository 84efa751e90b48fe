package manifest

import (
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The forms of the service keys baton's rules read, as Convox's parser
// reads them (convox/convox pkg/manifest/yaml.go and the field types of
// service.go). A value Convox cannot read fails its Load, so the manifest
// is rejected, and baton's rules could not be checked on it either. Values
// Convox reads but Kubernetes may refuse at deploy (a port above 65535, an
// unknown scheme or protocol) are Convox's to check.

// check checks a value; where names it in messages ("service web: port").
type check func(c *checker, where string, v *yaml.Node)

// serviceForms are the service keys whose form Check checks.
var serviceForms = map[string]check{
	"agent":          checkAgent,
	"command":        isScalar,
	"deployment":     checkDeployment,
	"health":         checkHealth,
	"image":          isScalar,
	"internal":       isBool,
	"internalRouter": isBool,
	"port":           checkPort,
	"ports":          checkPorts,
	"scale":          checkScale,
	"singleton":      isBool,
}

func isScalar(c *checker, where string, v *yaml.Node) {
	if _, ok := str(v); !ok && !isNull(v) {
		c.rejectf(v, "%s is %s; Convox reads a string", where, kindName(v))
	}
}

func isBool(c *checker, where string, v *yaml.Node) {
	if _, ok := boolean(v); !ok && !isNull(v) {
		c.rejectf(v, "%s is %s; Convox reads true or false", where, kindName(v))
	}
}

func checkAgent(c *checker, where string, v *yaml.Node) {
	if resolve(v).Kind == yaml.MappingNode {
		c.rejectf(v, "%s is a mapping; Convox reads true or false (agent ports are given at the service level)", where)
		return
	}
	isBool(c, where, v)
}

// checkDeployment: Convox's Validate wants a minimum from 0 to 100 and a
// maximum from 100 to 200 percent (validate.go).
func checkDeployment(c *checker, where string, v *yaml.Node) {
	if isNull(v) {
		return
	}
	if resolve(v).Kind != yaml.MappingNode {
		c.rejectf(v, "%s is %s; Convox reads a mapping of minimum and maximum", where, kindName(v))
		return
	}
	for _, f := range []struct {
		key    string
		lo, hi int
	}{{"minimum", 0, 100}, {"maximum", 100, 200}} {
		_, n := get(v, f.key)
		if n == nil || isNull(n) {
			continue
		}
		i, ok := integer(n)
		switch {
		case !ok:
			c.rejectf(n, "%s.%s is %s; Convox reads a whole number", where, f.key, kindName(n))
		case i < f.lo || i > f.hi:
			c.rejectf(n, "%s.%s is %d; Convox rejects a %s outside %d to %d percent", where, f.key, i, f.key, f.lo, f.hi)
		}
	}
}

// checkHealth: a path, or a mapping (whose keys Convox reads as it can).
func checkHealth(c *checker, where string, v *yaml.Node) {
	if rv := resolve(v); rv.Kind != yaml.MappingNode && !isString(rv) && !isNull(rv) {
		c.rejectf(v, "%s is %s; Convox reads a path or a mapping", where, kindName(v))
	}
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

// schemePort reads "3000" or "https:3000" as Convox does: the part after the
// first colon, if any, must be a number.
func schemePort(s string) (int, bool) {
	parts := strings.Split(s, ":")
	num := parts[0]
	if len(parts) > 1 {
		num = parts[1]
	}
	n, err := strconv.Atoi(num)
	return n, err == nil
}

// checkPort checks a service's main port: 3000, "https:3000", or
// {port: 3000, scheme: https}.
func checkPort(c *checker, where string, v *yaml.Node) {
	const want = `Convox reads a port number, "scheme:port" or {port: N, scheme: S}`
	rv := resolve(v)
	switch {
	case isNull(rv):
	case rv.Kind == yaml.MappingNode:
		_, pv := get(rv, "port")
		n, ok := 0, false
		switch {
		case pv == nil || isNull(pv):
		case isString(pv):
			n, ok = schemePort(resolve(pv).Value)
		default:
			n, ok = integer(pv)
		}
		if !ok || n == 0 {
			c.rejectf(v, "%s has no port number; %s", where, want)
		}
		if _, s := get(rv, "scheme"); s != nil && !isString(s) && !isNull(s) {
			c.rejectf(s, "%s.scheme is %s; Convox reads a string", where, kindName(s))
		}
	case rv.Tag == "!!int":
	case isString(rv):
		if _, ok := schemePort(rv.Value); !ok {
			c.rejectf(v, "%s is %q; %s", where, rv.Value, want)
		}
	default:
		c.rejectf(v, "%s is %s; %s", where, kindName(v), want)
	}
}

// checkPorts checks a service's extra ports: 5001 or "5002/udp".
func checkPorts(c *checker, where string, v *yaml.Node) {
	rv := resolve(v)
	if isNull(rv) {
		return
	}
	if rv.Kind != yaml.SequenceNode {
		c.rejectf(v, "%s is %s; Convox reads a list of ports", where, kindName(v))
		return
	}
	for _, item := range rv.Content {
		ri := resolve(item)
		switch {
		case ri.Tag == "!!int":
		case isString(ri):
			num, _, _ := strings.Cut(ri.Value, "/")
			if _, err := strconv.Atoi(num); err != nil {
				c.rejectf(item, "%s entry %q; Convox reads a port number or \"port/protocol\"", where, ri.Value)
			}
		default:
			c.rejectf(item, "%s entry is %s; Convox reads a port number or \"port/protocol\"", where, kindName(item))
		}
	}
}

// scaleCount reads a process count as Convox does: 3, "3", "1-5", or
// {min: 1, max: 5}. ok is false when Convox could not read it.
func scaleCount(v *yaml.Node) (lo, hi int, ok bool) {
	rv := resolve(v)
	switch {
	case rv.Tag == "!!int":
		i, ok := integer(rv)
		return i, i, ok
	case isString(rv):
		parts := strings.Split(rv.Value, "-")
		if len(parts) > 2 {
			return 0, 0, false
		}
		i, err := strconv.Atoi(parts[0])
		if err != nil {
			return 0, 0, false
		}
		if len(parts) == 1 {
			return i, i, true
		}
		j, err := strconv.Atoi(parts[1])
		return i, j, err == nil
	case rv.Kind == yaml.MappingNode:
		return minMax(rv)
	}
	return 0, 0, false
}

// minMax reads the min and max of a mapping, each a number or a string of
// one; a missing one is 0.
func minMax(m *yaml.Node) (lo, hi int, ok bool) {
	for _, f := range []struct {
		key string
		to  *int
	}{{"min", &lo}, {"max", &hi}} {
		if _, v := get(m, f.key); v != nil && !isNull(v) {
			n, isNum := portNumber(v)
			if !isNum {
				return 0, 0, false
			}
			*f.to = n
		}
	}
	return lo, hi, true
}

// serviceScale returns the range of a service's process count: 1 unless
// its scale says otherwise.
func serviceScale(svc *yaml.Node) (lo, hi int) {
	_, v := get(svc, "scale")
	if v == nil || isNull(v) {
		return 1, 1
	}
	if rv := resolve(v); rv.Kind == yaml.MappingNode {
		if _, cv := get(rv, "count"); cv != nil {
			v = cv
		} else if _, m := get(rv, "min"); m != nil {
			lo, hi, _ = minMax(rv)
			return lo, max(lo, hi)
		} else if _, m := get(rv, "max"); m != nil {
			lo, hi, _ = minMax(rv)
			return lo, max(lo, hi)
		} else {
			return 1, 1
		}
	}
	lo, hi, ok := scaleCount(v)
	if !ok {
		return 1, 1
	}
	return lo, hi
}

// checkScale checks the process count of a scale: Convox reads it as
// scaleCount does and rejects a negative one, or a maximum below the
// minimum (validateServiceScale in validate.go). Its other keys (cpu,
// memory, gpu, autoscale, ...) are Convox's to check.
func checkScale(c *checker, where string, v *yaml.Node) {
	rv := resolve(v)
	if isNull(rv) {
		return
	}
	at, count := v, v
	if rv.Kind == yaml.MappingNode {
		if k, cv := get(rv, "count"); cv != nil {
			at, count, where = k, cv, where+".count"
		} else if minMaxGiven(rv) {
			count = rv
		} else {
			return
		}
	} else if rv.Kind != yaml.ScalarNode {
		c.rejectf(v, `%s is %s; Convox reads a number of processes, a range such as "1-5", or a mapping`, where, kindName(v))
		return
	}
	lo, hi, ok := scaleCount(count)
	switch {
	case !ok:
		c.rejectf(at, `%s is %s; Convox reads a number of processes, a range such as "1-5", or {min: 1, max: 5}`, where, kindName(count))
	case lo < 0 || hi < 0:
		c.rejectf(at, "%s is negative; Convox rejects it", where)
	case hi < lo:
		c.rejectf(at, "%s: the maximum %d is below the minimum %d; Convox rejects it", where, hi, lo)
	}
}

func minMaxGiven(m *yaml.Node) bool {
	_, lo := get(m, "min")
	_, hi := get(m, "max")
	return lo != nil || hi != nil
}

// envEntry is one NAME or NAME=value of an environment list.
type envEntry struct {
	name, value string
	hasValue    bool
	node        *yaml.Node
}

// environment checks an environment list and returns its entries. Convox
// reads a list of strings, and lists of strings within it; it drops any
// other entry without a word, and rejects anything but a list (yaml.go).
func (c *checker) environment(where string, v *yaml.Node) []envEntry {
	if isNull(v) {
		return nil
	}
	rv := resolve(v)
	if rv.Kind != yaml.SequenceNode {
		c.rejectf(v, "%s is %s; Convox reads a list of NAME or NAME=value", where, kindName(v))
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
			if name == "*" && !hasValue {
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
