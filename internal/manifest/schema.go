package manifest

import (
	"sort"
	"strings"
)

// The keys Convox reads at each level where Check looks for keys it does
// not: the yaml tags of Manifest (pkg/manifest/manifest.go), Service
// (service.go), Timer (timer.go), Resource (resource.go) and
// ServiceLiveness (service.go), and the keys ServiceHealth's UnmarshalYAML
// reads (yaml.go). yaml.v2 drops any other key without a word, so a misspelt
// `enviroment:` is simply lost. A key Convox adds later is reported as
// unknown until it is added here: that is the upkeep this check costs.
var (
	topKeys      = keys("appSettings balancers budget configs environment labels params resources services timers")
	timerKeys    = keys("annotations command concurrency parallelCount schedule service")
	resourceKeys = keys("image options type")
	healthKeys   = keys("disable grace interval path port timeout")
	livenessKeys = keys("failureThreshold grace interval path port successThreshold timeout")
	serviceKeys  = keys("accessControl agent annotations build certificate command configMounts deployment " +
		"disableHostUsers dnsConfig domain drain environment grpcHealthEnabled health image imagePullSecrets " +
		"ingressAnnotations init initContainer internal internalRouter labels lifecycle liveness " +
		"nodeAffinityLabels nodeSelectorLabels port ports privileged resources scale securityContext singleton " +
		"startupProbe sticky termination test timeout tls volumeOptions volumes whitelist")
)

func keys(names string) map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(names) {
		m[n] = true
	}
	return m
}

// suggest returns the known key nearest to k, if one is near: the same but
// for case, one it begins or that begins it (concurrencyPolicy is Convox's
// older name of concurrency), or one within two edits.
func suggest(k string, known map[string]bool) string {
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	lk := strings.ToLower(k)
	best, bestDist := "", 3
	for _, s := range names {
		ls := strings.ToLower(s)
		if ls == lk || (len(k) >= 4 && strings.HasPrefix(ls, lk)) || (len(s) >= 5 && strings.HasPrefix(lk, ls)) {
			return s
		}
		if d := distance(lk, ls); d < bestDist {
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
