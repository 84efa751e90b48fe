package manifest

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// An etcd inside an app shares the app's releases: Convox rolls every
// service of an app at each release (the release id is in every pod's
// labels), and a singleton's old process stops before the new one starts,
// so each deploy or `convox env set` takes that etcd down, and wipes it on
// an emptyDir. The recommended layout gives etcd a Convox app of its own,
// deployed once and left alone: EtcdAppManifest writes that app's manifest,
// and Init with Options.EtcdApp points the app at it.

// EtcdAppEndpoint is the client URL of the etcd service of the Convox app
// named etcdApp, as the apps of the rack reach an internal service of
// another app.
func EtcdAppEndpoint(etcdApp string) string {
	return fmt.Sprintf("http://etcd.%s.convox.local:%d", etcdApp, clientPort)
}

// EtcdAppManifest returns the convox.yml of the Convox app etcdApp that
// serves etcd to the app app, whose manifest is d: one internal singleton
// service etcd running `baton etcd` from the image the app's baton
// processes run (so that image must contain the baton command), with the
// app's user limited to the app's prefix, /baton/<app>. file is where the
// manifest is written, for the deploy command in its comment.
func EtcdAppManifest(d *Document, app, etcdApp, file string, st Storage) ([]byte, error) {
	if err := checkAppName("app", app); err != nil {
		return nil, err
	}
	if err := checkAppName("etcd app", etcdApp); err != nil {
		return nil, err
	}
	var src *service
	if top := d.top(); top != nil {
		_, services := get(top, "services")
		src = buildSource(serviceList(services))
	}
	cmd := strings.Join([]string{"baton", "etcd", "--name", "etcd", "--data-dir", dataDir,
		"--listen-client-urls", fmt.Sprintf("http://0.0.0.0:%d", clientPort),
		"--advertise-client-urls", EtcdAppEndpoint(etcdApp)}, " ")
	body := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	body.Content = append(body.Content, image(src, Options{})...)
	body.Content = append(body.Content, kv("command", scalar(cmd))...)
	body.Content = append(body.Content, kv("internal", boolean11(true))...)
	body.Content = append(body.Content, kv("singleton", boolean11(true))...)
	body.Content = append(body.Content, ports(1)...)
	body.Content = append(body.Content, volume(st)...)

	envKey := scalar("environment")
	envKey.HeadComment = wrap(fmt.Sprintf("etcd for the baton of app %s (baton convox init --etcd-app %s): an app of "+
		"its own, so that no release of %s restarts it. Deploy it once:", app, etcdApp, app), 76) +
		fmt.Sprintf("\n  convox apps create %s\n  convox deploy -a %s -m %s\n", etcdApp, etcdApp, file) +
		wrap(fmt.Sprintf("BATON_ETCD_USERNAME and BATON_ETCD_PASSWORD are those of app %s: `baton etcd` "+
			"makes that user, limited to the keys under BATON_PREFIX, and turns etcd's auth on.", app), 76)
	env := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{
		scalar("BATON_ETCD_USERNAME"), scalar("BATON_ETCD_PASSWORD"), scalar("BATON_PREFIX=/baton/" + app)}}
	etcdKey := scalar("etcd")
	etcdKey.HeadComment = wrap("One member. "+st.comment(), 78)
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

// checkAppName checks a Convox app name: lowercase letters, digits and
// dashes.
func checkAppName(what, name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("manifest: %s name %q: want lowercase letters, digits and dashes", what, name)
	}
	return nil
}
