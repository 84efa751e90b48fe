package manifest

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// rack is a Convox rack as its code names a service to a pod: the Service
// of service S of app A carries the alias S.A.RACK.local
// (provider/k8s/template/app/service.yml.tmpl), which the rack's resolver
// answers with the Service's address (pkg/resolver/service.go, an exact
// match) and which it forwards otherwise (pkg/resolver/dns.go); a pod of
// app A searches, in order, A.RACK.local, RACK-A.svc.cluster.local (its
// namespace, provider/k8s/app.go), RACK.local, svc.cluster.local and
// cluster.local (the dnsConfig of service.yml.tmpl and timer.yml.tmpl),
// and its resolv.conf sets no ndots, so a name with a dot is asked as it
// is first, then with each search domain (resolv.conf(5), ndots:1).
type rack struct {
	name  string
	hosts map[string]string // alias -> the Service's address
}

func (r *rack) deploy(app string, services ...string) {
	for _, s := range services {
		r.hosts[fmt.Sprintf("%s.%s.%s.local", s, app, r.name)] = app + "/" + s
	}
}

// lookup resolves host from a pod of app as the pod's resolver would, and
// returns the Service it reaches, or "".
func (r *rack) lookup(app, host string) string {
	names := []string{host}
	if strings.Contains(host, ".") { // dots >= ndots: as it is first
		for _, s := range []string{app + "." + r.name + ".local", r.name + "-" + app + ".svc.cluster.local", r.name + ".local", "svc.cluster.local", "cluster.local"} {
			names = append(names, host+"."+s)
		}
	}
	for _, n := range names {
		if svc, ok := r.hosts[n]; ok {
			return svc
		}
	}
	return ""
}

// TestEtcdAppEndpointResolves: the address Init gives an app for the etcd
// app, and the one the etcd app advertises, reach the etcd app's service
// etcd from the app's processes and the etcd app's own, on a rack of any
// name; the old etcd.NAME.convox.local reached it only on a rack named
// convox.
func TestEtcdAppEndpointResolves(t *testing.T) {
	src, err := EtcdAppManifest(mustParse(t, "services:\n  web:\n    build: .\n"), "shop", "shop-etcd", "convox.etcd.yml", EFS)
	if err != nil {
		t.Fatal(err)
	}
	args, _ := etcdArgs(mustParse(t, string(src)).mustService(t, "etcd").command)
	advertised, _ := flagValue(args, "advertise-client-urls")
	for _, name := range []string{"convox", "production", "shop", "r2-d2"} {
		r := &rack{name: name, hosts: map[string]string{}}
		r.deploy("shop", "web")
		r.deploy("shop-etcd", "etcd")
		r.deploy("blog-etcd", "etcd")
		for _, u := range []string{EtcdAppEndpoint("shop-etcd"), advertised} {
			host := mustURL(t, u).Hostname()
			for _, from := range []string{"shop", "shop-etcd", "blog"} {
				if got := r.lookup(from, host); got != "shop-etcd/etcd" {
					t.Errorf("rack %s: %s from a pod of app %s reaches %q, want shop-etcd/etcd", name, host, from, got)
				}
			}
		}
		old := r.lookup("shop", "etcd.shop-etcd.convox.local")
		if (old != "") != (name == "convox") {
			t.Errorf("rack %s: etcd.shop-etcd.convox.local reaches %q", name, old)
		}
	}
}

func (d *Document) mustService(t *testing.T, name string) *service {
	t.Helper()
	a, _ := read(d)
	if s := a.byName[name]; s != nil {
		return s
	}
	t.Fatalf("no service %s", name)
	return nil
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestInitEtcdAppRefusesAnEtcdInTheApp: pointing an app at an etcd app
// while it runs an etcd of its own would leave two; Init refuses.
func TestInitEtcdAppRefusesAnEtcdInTheApp(t *testing.T) {
	d := mustParse(t, "services:\n  web:\n    build: .\n  etcd:\n    build: .\n    command: baton etcd\n")
	before := string(d.Bytes())
	if _, err := Init(d, Options{EtcdApp: "shop-etcd"}); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "shop-etcd") {
		t.Fatalf("Init: %v, want ErrConflict naming shop-etcd", err)
	}
	if string(d.Bytes()) != before {
		t.Error("a refused Init changed the document")
	}
}

// TestEtcdAppManifestIsSetUp: the etcd app's manifest passes Check, gets
// no note on releases (its releases are its own), and Init has nothing to
// add to it; its etcd has a readiness check on /health and a liveness
// check on /livez, and its comment gives the deploy steps in the order a
// fresh rack needs them: the app first, then its environment, then the
// deploy (`convox env set` on an app that does not exist fails:
// provider/k8s/release.go, ReleaseCreate, releaseFork, ReleaseList, AppGet).
func TestEtcdAppManifestIsSetUp(t *testing.T) {
	app := mustParse(t, "services:\n  web:\n    build: ./app\n    command: baton crontab crontab\n")
	for _, st := range []Storage{EFS, Ephemeral} {
		src, err := EtcdAppManifest(app, "shop", "shop-etcd", "convox.etcd.yml", st)
		if err != nil {
			t.Fatal(err)
		}
		d := mustParse(t, string(src))
		for _, p := range Check(d) {
			t.Errorf("%v: line %d: %s", st, p.Line, p.Message)
		}
		if hasNote(Notes(d), "etcd", "inside the app") {
			t.Errorf("%v: notes %v", st, Notes(d))
		}
		if changes, err := Init(d, Options{}); err != nil || len(changes) > 0 {
			t.Errorf("%v: Init: %q, %v", st, changes, err)
		}
		for _, want := range []string{"build: ./app", "BATON_PREFIX=/baton/shop", "    health: /health\n    liveness:\n      path: /livez\n      grace: 30\n",
			"#   convox apps create shop-etcd\n#   convox env set -a shop-etcd BATON_ETCD_USERNAME=shop BATON_ETCD_PASSWORD=<shop's>\n#   convox deploy -a shop-etcd -m convox.etcd.yml\n"} {
			if !strings.Contains(string(src), want) {
				t.Errorf("%v: manifest lacks %q:\n%s", st, want, src)
			}
		}
	}
	if _, err := EtcdAppManifest(app, "Shop", "shop-etcd", "f", EFS); err == nil {
		t.Error("an app name in upper case was taken")
	}
}
