package manifest

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// An etcd inside an app shares the app's releases: a promoted release rolls
// every service of the app (the release id is in every pod's labels,
// service.yml.tmpl), and a singleton's old process stops before the new one
// starts, so each deploy takes that etcd down, and wipes it on an emptyDir.
// The recommended layout gives etcd a Convox app of its own, deployed once
// and left alone: EtcdAppManifest writes that app's manifest, and Init with
// Options.EtcdApp points the app at it.

// EtcdAppEndpoint is the client URL of the etcd service of the Convox app
// named etcdApp, as the processes of every app of the rack reach it,
// whatever the rack's name. Convox's resolver answers SERVICE.APP.RACK.local
// for an app's service (the Service's convox.com/alias annotation in
// convox/convox provider/k8s/template/app/service.yml.tmpl, read by
// pkg/resolver/service.go), and every pod it serves searches RACK.local (the
// dnsConfig of service.yml.tmpl and timer.yml.tmpl), so etcd.APP finds the
// etcd app on a rack of any name. That holds wherever the rack runs its
// resolver (provider/k8s/resolver.go), which is the default of every
// provider; a rack without it (AWS's disable_convox_resolver=true) has no
// .local names at all, and there BATON_ETCD_ENDPOINTS must name the
// Kubernetes Service, http://etcd.RACK-APP.svc.cluster.local:2379 (the
// namespace of provider/k8s/app.go, AppNamespace). The rack's feature gate
// external-dns-resolver removes the search domains (provider/k8s/release.go,
// DisableDnsSearches), and there only the full name resolves,
// http://etcd.APP.RACK.local:2379. No rack was at hand:
// this rests on Convox's code alone.
func EtcdAppEndpoint(etcdApp string) string {
	return fmt.Sprintf("http://etcd.%s:%d", etcdApp, clientPort)
}

// EtcdAppManifest returns the convox.yml of the Convox app etcdApp that
// serves etcd to the app app, whose manifest is d: one internal singleton
// service etcd running `baton etcd` from the image the app's baton
// processes run (so that image must contain the baton command), with the
// app's user limited to the app's prefix, /baton/<app>. It advertises the
// address the apps reach it at. file is where the manifest is written, for
// the deploy command in its comment.
func EtcdAppManifest(d *Document, app, etcdApp, file string, st Storage) ([]byte, error) {
	if err := checkAppName("app", app); err != nil {
		return nil, err
	}
	if err := checkAppName("etcd app", etcdApp); err != nil {
		return nil, err
	}
	var src *service
	if a, _ := read(d); a != nil {
		src = buildSource(a.services)
	}
	cmd := strings.Join([]string{"baton", "etcd", "--name", "etcd", "--data-dir", dataDir,
		"--listen-client-urls", fmt.Sprintf("http://0.0.0.0:%d", clientPort),
		"--advertise-client-urls", EtcdAppEndpoint(etcdApp)}, " ")
	body := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	body.Content = append(body.Content, image(src, Options{})...)
	body.Content = append(body.Content, kv("command", scalar(cmd))...)
	body.Content = append(body.Content, kv("internal", flag(true))...)
	body.Content = append(body.Content, kv("singleton", flag(true))...)
	body.Content = append(body.Content, probes(1)...)
	body.Content = append(body.Content, volume(st)...)

	envKey := scalar("environment")
	envKey.HeadComment = wrap(fmt.Sprintf("etcd for the baton of app %s (baton convox init --etcd-app %s): an app of "+
		"its own, so that no release of %s restarts it. Apps of the rack reach it at %s. On a fresh rack, in this order:", app, etcdApp, app, EtcdAppEndpoint(etcdApp)), 76) +
		fmt.Sprintf("\n  convox apps create %s\n  convox env set -a %s BATON_ETCD_USERNAME=%s BATON_ETCD_PASSWORD=<%s's>\n  convox deploy -a %s -m %s\n",
			etcdApp, etcdApp, app, app, etcdApp, file) +
		wrap(fmt.Sprintf("BATON_ETCD_USERNAME and BATON_ETCD_PASSWORD are those of app %s: `baton etcd` "+
			"makes that user, limited to the keys under BATON_PREFIX, and turns etcd's auth on.", app), 76)
	env := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{
		scalar("BATON_ETCD_USERNAME"), scalar("BATON_ETCD_PASSWORD"), scalar("BATON_PREFIX=/baton/" + app)}}
	etcdKey := scalar("etcd")
	etcdKey.HeadComment = wrap("One member. "+st.comment(), 76)
	services := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{etcdKey, body}}
	top := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{envKey, env, scalar("services"), services}}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{top}}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// validName is Convox's NameValidator (pkg/manifest/validate.go).
var validName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// checkAppName checks a Convox app name as Convox's NameValidator does
// (pkg/manifest/validate.go): lowercase letters, digits and dashes,
// starting with a letter.
func checkAppName(what, name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("manifest: %s name %q: want lowercase letters, digits and dashes, starting with a letter", what, name)
	}
	return nil
}
