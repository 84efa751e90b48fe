package manifest

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Notes says what each release of the app does to the etcd services it
// runs: Convox restarts every service of an app at each release (a deploy,
// `convox env set`), and a singleton's old process stops before the new one
// starts, so the app's etcd is down for each release and, unless its data
// is on an awsEfs volume, comes back empty. A note is no problem: an etcd in
// the app is fine for a quick start, and Check passes it. An app of etcd
// services only, an etcd app, gets no note: its releases are its own.
func Notes(d *Document) []Problem {
	top := d.top()
	if top == nil {
		return nil
	}
	_, services := get(top, "services")
	all := serviceList(services)
	if len(etcdServices(all)) == len(all) {
		return nil
	}
	var notes []Problem
	for _, s := range all {
		if !etcdMember.MatchString(s.name) && !runsEtcd(s.command) {
			continue
		}
		what := fmt.Sprintf("its data is not on an awsEfs volume, so it also comes back empty, and baton forgets %s", Lost)
		if onEFS(s) {
			what = "its data, on an awsEfs volume, is kept"
		}
		notes = append(notes, Problem{Line: s.key.Line, Message: fmt.Sprintf(
			"note: service %s runs etcd inside the app, so every release of the app (a deploy, `convox env set`) restarts it: leaders lose their sessions and ticks due meanwhile are missed; %s. "+
				"To keep etcd apart from the app's releases, run `baton convox init --etcd-app NAME`", s.name, what)})
	}
	return notes
}

// onEFS reports whether a service has an awsEfs volume.
func onEFS(s *service) bool {
	list := resolve(s.value("volumeOptions"))
	if list == nil || list.Kind != yaml.SequenceNode {
		return false
	}
	for _, item := range list.Content {
		if item = resolve(item); item.Kind == yaml.MappingNode {
			if _, v := get(item, "awsEfs"); v != nil {
				return true
			}
		}
	}
	return false
}
