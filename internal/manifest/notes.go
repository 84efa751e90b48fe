package manifest

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Notes says, for each etcd service of the manifest, what Convox does to it
// that no manifest can change, and what to do about it. A note is no
// problem: Check passes a manifest with notes.
//
//   - Inside an app, every promoted release of the app restarts it (the
//     release id is in every pod's labels, service.yml.tmpl) and, unless its
//     data is on awsEfs, empties it. An app of etcd services only, an etcd
//     app, gets no such note: its releases are its own.
//   - Nothing keeps it at one process: singleton only sets the deployment
//     to stop the old process before it starts the new (minimum 0, maximum
//     100 percent, pkg/manifest/manifest.go), so `convox scale` can start a
//     second etcd beside it; and a node drain does not wait on it, whatever
//     its PodDisruptionBudget, while members of three may share a node
//     (disruption).
//   - An etcd that is not `baton etcd` has no auth that baton set up.
func Notes(d *Document) []Problem {
	a, _ := read(d)
	if a == nil {
		return nil
	}
	etcds := etcdServices(a)
	var notes []Problem
	note := func(s *service, format string, args ...any) {
		notes = append(notes, Problem{Line: s.key.Line, Message: "note: service " + s.name + fmt.Sprintf(format, args...)})
	}
	for _, name := range etcds {
		s := a.byName[name]
		if len(etcds) < len(a.services) {
			what := fmt.Sprintf("its data is not on an awsEfs volume, so it also comes back empty, and baton forgets %s", Lost)
			if onEFS(s) {
				what = "its data, on an awsEfs volume, is kept"
			}
			note(s, " runs etcd inside the app, so every promoted release of the app (a deploy; `convox env set` only with --promote) restarts it: leaders lose their sessions and ticks due meanwhile are missed; %s. "+
				"To keep etcd apart from the app's releases, run `baton convox init --etcd-app NAME`", what)
		}
		note(s, ": nothing keeps it at one process: `convox scale %s --count 2` is not refused (singleton: true only makes a deploy stop the old process before it starts the new), "+
			"and a second process would be a second, empty etcd behind the same name, where a tick could be claimed again; never scale it past 1. %s", s.name, disruption(s, len(etcds) > 1))
		if _, ok := batonCommand(s.command, "etcd"); !ok {
			what := s.command
			if what == "" {
				what, _ = str(s.get("image"))
			}
			note(s, " runs etcd's own server (%s), not `baton etcd`, so it has no auth that baton set up: any process that reaches it can read and change every key, "+
				"and clients that send BATON_ETCD_USERNAME and BATON_ETCD_PASSWORD to it get in all the same (an etcd client takes \"authentication is not enabled\" for success); "+
				"run `baton etcd` instead, or turn etcd's auth on yourself", what)
		}
	}
	for _, s := range a.services {
		if wire, blocked := a.probeless(s); wire && blocked != "" {
			note(s, " runs baton with no port, so Convox probes nothing and a stuck process stays; init gives it none, as %s and init writes into no anchor: give it %s and internal: true yourself", blocked, probeKeys)
		}
	}
	return notes
}

// disruption says what a node drain does to an etcd service. Its
// Deployment's PodDisruptionBudget (provider/k8s/controller_deployment.go)
// is 1 of 1 process, which an eviction cannot take, but Convox's node
// controller (provider/k8s/controller_node.go) restarts elsewhere every
// Deployment on a cordoned node more than 5 minutes old whose budget allows
// no disruption, by changing its pod template: a drain does not wait on
// it. And Convox gives a service's pods no anti-affinity
// (provider/k8s/template/app/service.yml.tmpl), so members of three may
// share a node and restart together.
func disruption(s *service, cluster bool) string {
	moves := "Convox's node controller restarts it on another node when its node is cordoned (a rack update that replaces nodes, a node replaced or scaled in): its PodDisruptionBudget of minAvailable 50% (the rack's pdb_default_min_available_percentage), 1 of its 1 process, does not make a drain wait on it, since Convox restarts elsewhere every Deployment on a cordoned node more than 5 minutes old whose budget allows no disruption"
	for _, a := range annotations(s) {
		if k, v, _ := strings.Cut(a, "="); k == "convox.com/pdb-disabled" && v == "true" || k == "convox.com/pdb-minavailable" && (v == "0" || v == "0%") {
			moves = "Its annotation " + a + " lets a node drain (a rack update that replaces nodes, a node replaced or scaled in) evict it at once"
		}
	}
	if !cluster {
		return moves + ": etcd is down while it starts on another node (no job runs meanwhile, and baton says so), and on an emptyDir it comes back empty."
	}
	return moves + ": the member is down while it starts on another node. Convox gives the members no anti-affinity, so two of them may share a node and restart together, and the cluster then has no quorum (no job runs) until one is back. " +
		"To keep a quorum through a drain, keep the members on distinct nodes: give each member nodeAffinityLabels for a zone of its own ([{label: topology.kubernetes.io/zone, value: ZONE, weight: 100}], a preference) " +
		"or nodeSelectorLabels for a node group of its own ({convox.io/label: NAME}, a rule that leaves the member unscheduled while its group has no node)."
}

// annotations returns a service's annotations as KEY=VALUE, from Convox's
// two forms: a list of strings, or of one-key mappings (yaml.go).
func annotations(s *service) []string {
	var out []string
	if list := resolve(s.get("annotations")); list != nil && list.Kind == yaml.SequenceNode {
		for _, item := range list.Content {
			if v, ok := str(item); ok {
				out = append(out, v)
			}
			for _, p := range fields(item) {
				v, _ := str(p.value)
				out = append(out, p.key.Value+"="+v)
			}
		}
	}
	return out
}

// onEFS reports whether a service has an awsEfs volume.
func onEFS(s *service) bool {
	if list := resolve(s.get("volumeOptions")); list != nil && list.Kind == yaml.SequenceNode {
		for _, item := range list.Content {
			if valueOf(item, "awsEfs") != nil {
				return true
			}
		}
	}
	return false
}

// SetsUpAuth reports whether the etcd the manifest points at takes its
// users from BATON_ETCD_USERNAME and BATON_ETCD_PASSWORD: every etcd
// service of the app runs `baton etcd`, or, with none, the app names
// BATON_ETCD_PASSWORD for an etcd outside it, such as an etcd app's.
func SetsUpAuth(d *Document) bool {
	a, _ := read(d)
	if a == nil {
		return false
	}
	etcds := etcdServices(a)
	for _, name := range etcds {
		if _, ok := batonCommand(a.byName[name].command, "etcd"); !ok {
			return false
		}
	}
	return len(etcds) > 0 || a.hasEnv("BATON_ETCD_PASSWORD")
}

// EnvValue returns the value the app-level environment of d gives name;
// ok is false when it lists no value for it.
func EnvValue(d *Document, name string) (value string, ok bool) {
	a, _ := read(d)
	if a == nil {
		return "", false
	}
	return envValue(a.env, name)
}
