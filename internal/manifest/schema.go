package manifest

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// The general rules Check keeps in line with Convox's own manifest code,
// convox/convox pkg/manifest: Load reads convox.yml with a YAML 1.1 parser
// into structs (manifest.go, service.go, timer.go, resource.go, with the
// custom readers of yaml.go), which ignores keys it does not know and keeps
// the last of a key given twice; Validate then applies validate.go. Check
// follows only a few of those rules, each with a test whose case comes from
// Convox's code, fixtures or reference; LeftToConvox names what else the
// manifest holds, which Convox checks itself at deploy.

// validName is Convox's NameValidator (validate.go), for service, timer and
// resource names.
var validName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// The keys Convox reads at each level Check looks for unknown keys in, from
// its structs and its convox.yml reference (docs/reference/primitives/app).
// A key Convox added after these lists is reported as unknown: that is the
// upkeep this check costs.
var (
	topKeys      = keys("appSettings", "balancers", "budget", "configs", "environment", "labels", "params", "resources", "services", "timers")
	timerKeys    = keys("annotations", "command", "concurrency", "parallelCount", "schedule", "service")
	resourceKeys = keys("options", "type")
	serviceKeys  = keys("accessControl", "agent", "annotations", "build", "certificate", "command", "configMounts",
		"deployment", "disableHostUsers", "dnsConfig", "domain", "drain", "environment", "grpcHealthEnabled", "health",
		"image", "imagePullSecrets", "ingressAnnotations", "init", "initContainer", "internal", "internalRouter",
		"labels", "lifecycle", "liveness", "nodeAffinityLabels", "nodeSelectorLabels", "port", "ports", "privileged",
		"resources", "scale", "securityContext", "singleton", "startupProbe", "sticky", "termination", "test",
		"timeout", "tls", "volumeOptions", "volumes", "whitelist")
)

func keys(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// unknownKey reports key k, which is not in known: Convox's parser drops it
// without a word, so a misspelt `enviroment:` is simply lost.
func (c *checker) unknownKey(where string, k *yaml.Node, known map[string]bool) {
	msg := fmt.Sprintf("%sunknown key %q; Convox ignores keys it does not know, so this setting would be lost", prefix(where), k.Value)
	if s := suggest(k.Value, sortedKeys(known)); s != "" {
		msg = fmt.Sprintf("%sunknown key %q (did you mean %s?); Convox ignores keys it does not know, so this setting would be lost", prefix(where), k.Value, s)
	}
	c.ignored(k, "%s", msg)
}

// unknownKeys reports the keys of mapping m that are not in known.
func (c *checker) unknownKeys(where string, m *yaml.Node, known map[string]bool) {
	for _, p := range pairs(m) {
		if !known[p.key.Value] {
			c.unknownKey(where, p.key, known)
		}
	}
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
		if len(s) >= 5 && strings.HasPrefix(strings.ToLower(k), strings.ToLower(s)) {
			return s // concurrencyPolicy, Convox's older name of concurrency
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
