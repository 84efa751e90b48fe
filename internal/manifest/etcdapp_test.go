package manifest

import (
	"errors"
	"strings"
	"testing"
)

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

// TestEtcdAppManifestIsSetUp: the etcd app's manifest passes Check, has no
// note (its releases are its own), and Init has nothing to add to it.
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
		if n := Notes(d); len(n) != 0 {
			t.Errorf("%v: notes %v", st, n)
		}
		if !strings.Contains(string(src), "build: ./app") || !strings.Contains(string(src), "BATON_PREFIX=/baton/shop") {
			t.Errorf("%v: manifest:\n%s", st, src)
		}
	}
	if _, err := EtcdAppManifest(app, "Shop", "shop-etcd", "f", EFS); err == nil {
		t.Error("an app name in upper case was taken")
	}
}

// TestNotesSayWhatAReleaseDoes: an etcd inside an app is noted, with its
// data lost on an emptyDir and kept on awsEfs.
func TestNotesSayWhatAReleaseDoes(t *testing.T) {
	for _, tc := range []struct {
		storage Storage
		want    string
	}{{Ephemeral, "comes back empty, and baton forgets pauses"}, {EFS, "on an awsEfs volume, is kept"}} {
		d := mustParse(t, "services:\n  web:\n    build: .\n    command: baton crontab crontab\n")
		if _, err := Init(d, Options{Storage: tc.storage}); err != nil {
			t.Fatal(err)
		}
		notes := Notes(d)
		if len(notes) != 1 || !strings.Contains(notes[0].Message, "every release of the app") || !strings.Contains(notes[0].Message, tc.want) {
			t.Errorf("%v: notes %v, want one saying %q", tc.storage, notes, tc.want)
		}
	}
}
