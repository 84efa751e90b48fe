package manifest

import (
	"strings"
	"testing"
)

// TestNotesSayWhatAReleaseDoes: an etcd inside an app is noted, with its
// data lost on an emptyDir and kept on awsEfs; only a promoted release
// restarts it (pkg/cli/env.go: `convox env set` promotes only with
// --promote).
func TestNotesSayWhatAReleaseDoes(t *testing.T) {
	for _, tc := range []struct {
		storage Storage
		want    string
	}{{Ephemeral, "comes back empty, and baton forgets pauses"}, {EFS, "on an awsEfs volume, is kept"}} {
		d := mustParse(t, "services:\n  web:\n    build: .\n    command: baton crontab crontab\n")
		if _, err := Init(d, Options{Storage: tc.storage}); err != nil {
			t.Fatal(err)
		}
		if !hasNote(Notes(d), "etcd", "runs etcd inside the app, so every promoted release of the app (a deploy; `convox env set` only with --promote) restarts it", tc.want) {
			t.Errorf("%v: notes %v, want one saying %q", tc.storage, Notes(d), tc.want)
		}
	}
}

// TestNotesOnEveryEtcd: nothing in Convox keeps an etcd service at one
// process (singleton only sets the deployment's percentages,
// pkg/manifest/manifest.go; `convox scale` checks nothing of it), and no
// node drain waits on it: its PodDisruptionBudget of minAvailable 50%
// (provider/k8s/controller_deployment.go) is 1 of 1, but Convox's node
// controller restarts elsewhere every Deployment on a cordoned node whose
// budget allows no disruption (provider/k8s/controller_node.go), and an
// annotation that lowers the budget lets the drain evict it. Members of
// three get no anti-affinity (provider/k8s/template/app/service.yml.tmpl),
// so the note says what keeps a quorum. An etcd app gets the notes too; a
// web service gets none.
func TestNotesOnEveryEtcd(t *testing.T) {
	app, err := EtcdAppManifest(mustParse(t, "services:\n  web:\n    build: .\n"), "shop", "shop-etcd", "convox.etcd.yml", EFS)
	if err != nil {
		t.Fatal(err)
	}
	scale := "nothing keeps it at one process: `convox scale etcd --count 2` is not refused"
	drain := "Convox's node controller restarts it on another node when its node is cordoned"
	down := "etcd is down while it starts on another node"
	annotated := func(a string) string {
		return "services:\n" + strings.Replace(etcdOK, "    internal: true\n", "    internal: true\n    annotations:\n      - "+a+"\n", 1)
	}
	for _, tc := range []struct{ name, src, want string }{
		{"the etcd app", string(app), drain},
		{"an etcd in the app", "services:\n  web:\n    build: .\n" + etcdOK, drain},
		{"minAvailable 0", annotated("convox.com/pdb-minavailable=0"), "Its annotation convox.com/pdb-minavailable=0 lets a node drain (a rack update that replaces nodes, a node replaced or scaled in) evict it at once"},
		{"PDB disabled", annotated("convox.com/pdb-disabled=true"), "Its annotation convox.com/pdb-disabled=true lets a node drain"},
		{"minAvailable 1 is still 1", annotated("convox.com/pdb-minavailable=1"), drain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notes := Notes(mustParse(t, tc.src))
			if !hasNote(notes, "etcd", scale, tc.want, down) {
				t.Errorf("notes %v, want one on service etcd saying %q, %q and %q", notes, scale, tc.want, down)
			}
			for _, n := range notes {
				if strings.Contains(n.Message, "service web") || strings.Contains(n.Message, "waits on it") {
					t.Errorf("a note on web, or one that has a drain wait: %s", n.Message)
				}
			}
		})
	}
	// Three members: each may share a node with another; the note says
	// what keeps a quorum.
	for _, member := range []string{"etcd-0", "etcd-1", "etcd-2"} {
		if !hasNote(Notes(mustParse(t, threeMembers)), member, drain, "no anti-affinity, so two of them may share a node", "topology.kubernetes.io/zone") {
			t.Errorf("no note on %s of members sharing a node and what keeps a quorum: %v", member, Notes(mustParse(t, threeMembers)))
		}
	}
}

// TestNotesOnAnEtcdWithoutAuth: an etcd that is not `baton etcd` has no
// auth baton set up, and an etcd client that sends a user to it gets in
// all the same (go.etcd.io/etcd/client/v3 client.go, getToken: "auth not
// enabled" is no error), so init and check say so, and SetsUpAuth, which
// init's printed steps follow, is false. An image whose etcd version baton
// does not know gets no liveness check on /livez, which it may not serve.
func TestNotesOnAnEtcdWithoutAuth(t *testing.T) {
	for _, tc := range []struct {
		name, src, what string
		auth            bool
	}{
		{"a stock etcd image, completed by init", "services:\n  web:\n    command: baton crontab crontab\n  etcd:\n    image: quay.io/coreos/etcd:v3.5.0\n", "/usr/local/bin/etcd --name etcd", false},
		{"init --image", "services:\n  web:\n    build: .\n", "/usr/local/bin/etcd --name etcd", false},
		{"baton etcd", "services:\n  web:\n    build: .\n", "", true},
		{"etcd named by its command", "services:\n  coord:\n    image: bitnami/etcd:3\n    command: etcd --listen-client-urls http://0.0.0.0:2379\n", "etcd --listen-client-urls", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mustParse(t, tc.src)
			if _, err := Init(d, Options{Image: tc.name == "init --image"}); err != nil {
				t.Fatal(err)
			}
			notes := Notes(d)
			noAuth := hasNote(notes, "", "not `baton etcd`, so it has no auth that baton set up", "clients that send BATON_ETCD_USERNAME and BATON_ETCD_PASSWORD to it get in all the same")
			if noAuth == tc.auth || (!tc.auth && !hasNote(notes, "", "runs etcd's own server ("+tc.what)) {
				t.Errorf("notes %v; want a note on missing auth: %v", notes, !tc.auth)
			}
			if got := SetsUpAuth(d); got != tc.auth {
				t.Errorf("SetsUpAuth = %v, want %v", got, tc.auth)
			}
			if strings.Contains(tc.src, "quay.io") && strings.Contains(string(d.Bytes()), "/livez") {
				t.Errorf("a liveness check on /livez for an etcd whose version baton does not know:\n%s", d.Bytes())
			}
			if has := strings.Contains(string(d.Bytes()), "BATON_ETCD_PASSWORD"); has != tc.auth {
				t.Errorf("BATON_ETCD_PASSWORD in the manifest: %v, want %v:\n%s", has, tc.auth, d.Bytes())
			}
		})
	}
}

// TestSetsUpAuthOutsideTheApp: with no etcd service, init's steps set a
// password only when the app names BATON_ETCD_PASSWORD for the etcd it
// points at, as an app pointed at an etcd app does.
func TestSetsUpAuthOutsideTheApp(t *testing.T) {
	for src, want := range map[string]bool{
		"environment:\n  - BATON_ETCD_ENDPOINTS=https://etcd.example.com:2379\nservices:\n  web:\n    command: baton crontab c\n":                                                false,
		"environment:\n  - BATON_ETCD_ENDPOINTS=http://etcd.shop-etcd:2379\n  - BATON_ETCD_USERNAME\n  - BATON_ETCD_PASSWORD\nservices:\n  web:\n    command: baton crontab c\n": true,
	} {
		if got := SetsUpAuth(mustParse(t, src)); got != want {
			t.Errorf("SetsUpAuth = %v, want %v:\n%s", got, want, src)
		}
	}
}

// hasNote reports whether a note on service name ("" for any) says each
// of want.
func hasNote(notes []Problem, name string, want ...string) bool {
	for _, n := range notes {
		ok := name == "" || strings.HasPrefix(n.Message, "note: service "+name+" ") || strings.HasPrefix(n.Message, "note: service "+name+":")
		for _, w := range want {
			ok = ok && strings.Contains(n.Message, w)
		}
		if ok {
			return true
		}
	}
	return false
}
