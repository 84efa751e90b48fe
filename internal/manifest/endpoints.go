package manifest

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// etcdServices are the names of the services that run etcd.
func etcdServices(all []*service) []string {
	var out []string
	for _, s := range all {
		if etcdMember.MatchString(s.name) || runsEtcd(s.command) {
			out = append(out, s.name)
		}
	}
	return out
}

// etcdElsewhere reports whether the app's BATON_ETCD_ENDPOINTS has a value
// that names no service of this app: an etcd app's, or one outside Convox.
func etcdElsewhere(env *yaml.Node, byName map[string]*service) bool {
	if isNull(env) {
		return false
	}
	for _, item := range resolve(env).Content {
		s, _ := str(item)
		name, value, ok := strings.Cut(s, "=")
		if name != "BATON_ETCD_ENDPOINTS" || !ok || strings.TrimSpace(value) == "" {
			continue
		}
		for _, ep := range appEndpoints(value) {
			if !ep.elsewhere || byName[ep.service] != nil {
				return false
			}
		}
		return true
	}
	return false
}

func hasEntry(env *yaml.Node, name string) bool {
	if isNull(env) {
		return false
	}
	for _, item := range resolve(env).Content {
		if s, ok := str(item); ok {
			if n, _, _ := strings.Cut(s, "="); n == name {
				return true
			}
		}
	}
	return false
}

// endpointList is BATON_ETCD_ENDPOINTS for the etcd services names.
func endpointList(names []string, byName map[string]*service) string {
	urls := make([]string, len(names))
	for i, n := range names {
		port := clientPort
		if s := byName[n]; s != nil && !s.exposes(strconv.Itoa(clientPort)) {
			if ps := s.ports(); len(ps) > 0 {
				port = ps[0]
			}
		}
		urls[i] = fmt.Sprintf("http://%s:%d", n, port)
	}
	return strings.Join(urls, ",")
}

func byNameOf(all []*service) map[string]*service {
	m := map[string]*service{}
	for _, s := range all {
		m[s.name] = s
	}
	return m
}

// EnvValue returns the value the app-level environment of d gives name;
// ok is false when it lists no value for it.
func EnvValue(d *Document, name string) (value string, ok bool) {
	top := d.top()
	if top == nil {
		return "", false
	}
	_, env := get(top, "environment")
	if isNull(env) || resolve(env).Kind != yaml.SequenceNode {
		return "", false
	}
	for _, item := range resolve(env).Content {
		s, _ := str(item)
		if n, v, has := strings.Cut(s, "="); n == name && has {
			value, ok = v, true
		}
	}
	return value, ok
}
