package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// writeManifest writes src to a convox.yml in a new directory.
func writeManifest(t *testing.T, src string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "convox.yml")
	if err := os.WriteFile(path, []byte(src), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestConvoxExamples runs init and check on copies of the shipped examples:
// they are set up, and fine.
func TestConvoxExamples(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../../../examples/*/convox.yml")
	if len(files) == 0 {
		t.Fatal("no examples/*/convox.yml found")
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			src := readFile(t, f)
			path := writeManifest(t, src, 0o644)
			code, out := runBaton(t, nil, "convox", "init", path)
			if code != exitOK || out != path+": already set up; nothing changed\n" {
				t.Errorf("init: exit %d, output:\n%s", code, out)
			}
			if readFile(t, path) != src {
				t.Error("init changed a set-up manifest")
			}
			// The etcd app beside it, which the example deploys once.
			etcdApp := filepath.Join(filepath.Dir(f), "convox.etcd.yml")
			for _, p := range []string{path, etcdApp} {
				code, out = runBaton(t, nil, "convox", "check", p)
				if code != exitOK || !strings.Contains(out, "\n"+p+": no problems with baton's rules") && !strings.HasPrefix(out, p+": no problems with baton's rules") ||
					!strings.HasSuffix(out, p+": Convox checks the rest itself at deploy\n") {
					t.Errorf("check %s: exit %d, output:\n%s", p, code, out)
				}
			}
			// The etcd app's one etcd: what scale and node drains do to it.
			if !strings.Contains(out, etcdApp+":18: note: service etcd: nothing keeps it at one process") || !strings.Contains(out, "PodDisruptionBudget of minAvailable 50%") {
				t.Errorf("check %s notes nothing of scale or drains:\n%s", etcdApp, out)
			}
		})
	}
}

const plainApp = `# The app.
services:
  web:
    build: .
    command: sh -c "baton crontab crontab & exec node server.js"
    port: 3000   # the web port

  # worker:
  #   build: .
`

func TestConvoxInit(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, plainApp, 0o640)
	app := filepath.Base(filepath.Dir(path))
	code, out := runBaton(t, nil, "convox", "init", path)
	if code != exitOK {
		t.Fatalf("init: exit %d, output:\n%s", code, out)
	}
	for _, want := range []string{
		path + ": added BATON_ETCD_ENDPOINTS=http://etcd:2379 to the app's environment",
		path + ": added service etcd (baton etcd, from the image of service web)",
		// What a release of the app does to the etcd inside it.
		"note: service etcd runs etcd inside the app, so every promoted release of the app",
		"comes back empty, and baton forgets pauses, run --once claims",
		"--etcd-app NAME",
		// The steps, in the order a fresh rack needs them.
		"Then, in this order (on a fresh rack; skip what is done):\n  convox apps create " + app + "\n  convox env set -a " + app + " BATON_ETCD_USERNAME=" + app + " BATON_ETCD_PASSWORD=$(openssl rand -hex 24)\n  convox deploy -a " + app + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "reports:") {
		t.Errorf("init reports problems in its own result:\n%s", out)
	}
	got := readFile(t, path)
	for _, want := range []string{
		"# The app.\nenvironment:\n  - BATON_ETCD_ENDPOINTS=http://etcd:2379\n  - BATON_ETCD_USERNAME\n  - BATON_ETCD_PASSWORD\nservices:\n",
		"    port: 3000 # the web port\n  # etcd for baton",
		"  etcd:\n    build: .\n    command: baton etcd --name etcd",
		"          mountPath: /var/lib/etcd\n\n  # worker:\n  #   build: .\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("convox.yml lacks %q:\n%s", want, got)
		}
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o640 {
		t.Errorf("mode %v (%v), want 0640 kept", info.Mode().Perm(), err)
	}

	code, out = runBaton(t, nil, "convox", "init", path)
	if code != exitOK || !strings.Contains(out, "already set up; nothing changed") {
		t.Errorf("second init: exit %d, output:\n%s", code, out)
	}
	if readFile(t, path) != got {
		t.Error("second init changed the file")
	}
	if code, out := runBaton(t, nil, "convox", "check", path); code != exitOK || !strings.Contains(out, "every promoted release of the app (a deploy; `convox env set` only with --promote) restarts it") {
		t.Errorf("check after init: exit %d, want 0 and a note of what a release does; output:\n%s", code, out)
	}
}

// TestConvoxInitEtcdApp: --etcd-app writes the etcd app's manifest and
// points the app at it, names the password variables without values, says
// how to set them and deploy, and leaves both files fine for check and for
// a second init.
func TestConvoxInitEtcdApp(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, plainApp, 0o644)
	etcdFile := filepath.Join(filepath.Dir(path), "convox.etcd.yml")
	code, out := runBaton(t, nil, "convox", "init", "--etcd-app", "shop-etcd", "--app", "shop", "--storage", "efs", path)
	if code != exitOK {
		t.Fatalf("init: exit %d, output:\n%s", code, out)
	}
	for _, want := range []string{
		etcdFile + ": wrote the manifest of app shop-etcd",
		"BATON_ETCD_ENDPOINTS=http://etcd.shop-etcd:2379",
		// Both apps exist before their variables are set, and the variables
		// before the deploys that need them.
		"Then, in this order (on a fresh rack; skip what is done):\n" +
			"  convox rack params set efs_csi_driver_enable=true   # once per rack, for the awsEfs volume\n" +
			"  convox apps create shop-etcd\n  convox apps create shop\n" +
			"  P=$(openssl rand -hex 24) && convox env set -a shop-etcd BATON_ETCD_USERNAME=shop BATON_ETCD_PASSWORD=$P && convox env set -a shop BATON_ETCD_USERNAME=shop BATON_ETCD_PASSWORD=$P\n" +
			"  convox deploy -a shop-etcd -m " + etcdFile + "   # once\n" +
			"  convox deploy -a shop   # as often as you like\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "note:") {
		t.Errorf("init notes an etcd in an app without one:\n%s", out)
	}
	app := readFile(t, path)
	if !strings.Contains(app, "  - BATON_ETCD_ENDPOINTS=http://etcd.shop-etcd:2379\n  - BATON_ETCD_USERNAME\n  - BATON_ETCD_PASSWORD\n") || strings.Contains(app, "  etcd:") {
		t.Errorf("the app's convox.yml:\n%s", app)
	}
	etcd := readFile(t, etcdFile)
	for _, want := range []string{
		"  - BATON_ETCD_USERNAME\n  - BATON_ETCD_PASSWORD\n  - BATON_PREFIX=/baton/shop\n",
		"--advertise-client-urls http://etcd.shop-etcd:2379",
		"    internal: true\n    singleton: true\n    port: 2379\n    health: /health\n    liveness:\n      path: /livez\n      grace: 30\n",
		"      - awsEfs:\n          id: etcd-data\n          accessMode: ReadWriteOnce\n          mountPath: /var/lib/etcd\n",
	} {
		if !strings.Contains(etcd, want) {
			t.Errorf("the etcd app's manifest lacks %q:\n%s", want, etcd)
		}
	}
	for _, f := range []string{path, etcdFile} {
		if code, out := runBaton(t, nil, "convox", "check", f); code != exitOK || strings.Contains(out, "inside the app") {
			t.Errorf("check %s: exit %d, output:\n%s", f, code, out)
		}
	}
	code, out = runBaton(t, nil, "convox", "init", "--etcd-app", "shop-etcd", "--app", "shop", "--storage", "efs", path)
	if code != exitOK || !strings.Contains(out, "exists; left as it is") || !strings.Contains(out, "nothing changed") {
		t.Errorf("second init: exit %d, output:\n%s", code, out)
	}
	// A plain init of the app keeps it on the etcd app.
	if code, out := runBaton(t, nil, "convox", "init", path); code != exitOK || !strings.Contains(out, "nothing changed") {
		t.Errorf("init without --etcd-app: exit %d, output:\n%s", code, out)
	}
	if readFile(t, path) != app || readFile(t, etcdFile) != etcd {
		t.Error("a second init changed a file")
	}
}

// TestConvoxInitSecondAppOnOneEtcdApp: an app pointed at an etcd app made
// for another one is told how to get a user of its own there.
func TestConvoxInitSecondAppOnOneEtcdApp(t *testing.T) {
	t.Parallel()
	shop := writeManifest(t, plainApp, 0o644)
	etcdFile := filepath.Join(filepath.Dir(shop), "convox.etcd.yml")
	if code, out := runBaton(t, nil, "convox", "init", "--etcd-app", "rack-etcd", "--app", "shop", "--storage", "efs", shop); code != exitOK {
		t.Fatalf("init of shop: exit %d:\n%s", code, out)
	}
	etcd := readFile(t, etcdFile)
	blog := writeManifest(t, plainApp, 0o644)
	code, out := runBaton(t, nil, "convox", "init", "--etcd-app", "rack-etcd", "--app", "blog", "--storage", "efs", "--etcd-file", etcdFile, blog)
	if code != exitOK {
		t.Fatalf("init of blog: exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"serves the app of prefix /baton/shop",
		"add `--user blog:/baton/blog` to the command of its service etcd, and BATON_ETCD_PASSWORD_BLOG to its environment;\n" +
			"  - convox apps create blog   # unless it exists\n" +
			"  - P=$(openssl rand -hex 24) && convox env set -a rack-etcd BATON_ETCD_PASSWORD_BLOG=$P && convox env set -a blog BATON_ETCD_USERNAME=blog BATON_ETCD_PASSWORD=$P\n" +
			"  - convox deploy -a rack-etcd -m " + etcdFile + "   # restarts etcd, for every app on it\n  - convox deploy -a blog\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if readFile(t, etcdFile) != etcd {
		t.Error("init of a second app changed the etcd app's manifest")
	}
}

// TestConvoxInitEphemeralEtcdApp: ephemeral storage is an emptyDir, and
// --etcd-app without --storage is a usage error naming both choices.
func TestConvoxInitEphemeralEtcdApp(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, plainApp, 0o644)
	code, out := runBaton(t, nil, "convox", "init", "--etcd-app", "shop-etcd", path)
	if code != exitUsage || !strings.Contains(out, "efs") || !strings.Contains(out, "ephemeral") || !strings.Contains(out, "pauses") {
		t.Errorf("--etcd-app without --storage: exit %d, output:\n%s", code, out)
	}
	if readFile(t, path) != plainApp {
		t.Error("a refused init changed the file")
	}
	code, out = runBaton(t, nil, "convox", "init", "--etcd-app", "shop-etcd", "--app", "shop", "--storage", "ephemeral", path)
	if code != exitOK || !strings.Contains(out, "on an emptyDir: each new etcd process loses pauses") {
		t.Errorf("init --storage ephemeral: exit %d, output:\n%s", code, out)
	}
	if etcd := readFile(t, filepath.Join(filepath.Dir(path), "convox.etcd.yml")); !strings.Contains(etcd, "      - emptyDir:\n") {
		t.Errorf("the etcd app's manifest has no emptyDir:\n%s", etcd)
	}
}

// TestConvoxInitFailsAsCheckDoes: an etcd service that init completes but
// cannot make right (an explicit internal: false, which init never
// overrides) makes init exit as check does, not 0.
func TestConvoxInitFailsAsCheckDoes(t *testing.T) {
	t.Parallel()
	src := plainApp + "  etcd:\n    build: .\n    command: baton etcd --listen-client-urls http://0.0.0.0:2379\n    internal: false\n"
	path := writeManifest(t, src, 0o644)
	code, out := runBaton(t, nil, "convox", "init", path)
	if code != exitProblem || !strings.Contains(out, "not internal: true") {
		t.Errorf("init: exit %d, want %d naming internal; output:\n%s", code, exitProblem, out)
	}
	if code, out := runBaton(t, nil, "convox", "check", path); code != exitProblem {
		t.Errorf("check: exit %d, want %d; output:\n%s", code, exitProblem, out)
	}
}

func TestConvoxInitThreeMembersWithImage(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, plainApp, 0o644)
	code, out := runBaton(t, nil, "convox", "init", "--members", "3", "--image", path)
	if code != exitOK {
		t.Fatalf("init: exit %d, output:\n%s", code, out)
	}
	got := readFile(t, path)
	for _, want := range []string{
		"BATON_ETCD_ENDPOINTS=http://etcd-0:2379,http://etcd-1:2379,http://etcd-2:2379",
		"  etcd-2:\n    image: gcr.io/etcd-development/etcd:",
		"--initial-cluster etcd-0=http://etcd-0:2380,etcd-1=http://etcd-1:2380,etcd-2=http://etcd-2:2380",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("convox.yml lacks %q:\n%s", want, got)
		}
	}
	// A second init without --members keeps the three.
	if code, out := runBaton(t, nil, "convox", "init", path); code != exitOK || !strings.Contains(out, "nothing changed") {
		t.Errorf("second init: exit %d, output:\n%s", code, out)
	}
	// Asking for one member now is refused, and the file stays.
	code, out = runBaton(t, nil, "convox", "init", "--members", "1", path)
	if code != exitFailure || !strings.Contains(out, "etcd-0, etcd-1, etcd-2") {
		t.Errorf("init --members 1 beside three: exit %d, output:\n%s", code, out)
	}
	if readFile(t, path) != got {
		t.Error("a refused init changed the file")
	}
}

// TestConvoxInitDefaultFile runs init in a directory with a convox.yml,
// naming no file.
func TestConvoxInitDefaultFile(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, plainApp, 0o644)
	cmd := exec.Command(batonBin, "convox", "init")
	cmd.Dir = filepath.Dir(path)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("baton convox init: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "convox.yml: added") {
		t.Errorf("output:\n%s", out)
	}
	if !strings.Contains(readFile(t, path), "  etcd:\n") {
		t.Error("./convox.yml has no etcd service")
	}
}

func TestConvoxCheck(t *testing.T) {
	t.Parallel()
	src := `services:
  web:
    command: baton crontab crontab
    scael: 2
timers:
  cleanup:
    schedule: "0 3 * * *"
    command: bin/cleanup
    service: web
`
	path := writeManifest(t, src, 0o644)
	code, out := runBaton(t, nil, "convox", "check", path)
	if code != exitProblem {
		t.Errorf("exit %d, want %d", code, exitProblem)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []string{
		`:3: service web runs baton, but no etcd is reachable`,
		`:4: service web: unknown key "scael" (did you mean scale?)`,
		`:8: timer cleanup runs "bin/cleanup" directly`,
		`: Convox checks the rest itself at deploy`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], path+w) {
			t.Errorf("line %d is %q, want it to start %q", i+1, lines[i], path+w)
		}
	}
	if readFile(t, path) != src {
		t.Error("check changed the file")
	}
}

// TestConvoxCheckSaysWhatItLeavesToConvox: a manifest whose only fault is
// one of Convox's rules baton leaves to Convox (an auto-shutdown budget with
// no webhook: testdata/convox/auto-shutdown-invalid-rule1.yml of
// internal/manifest, which Convox's Validate refuses) is not called fine:
// check says Convox checks the rest at deploy.
func TestConvoxCheckSaysWhatItLeavesToConvox(t *testing.T) {
	t.Parallel()
	src := `services:
  api:
    image: example/api:latest
    domain: api.example.com
budget:
  monthlyCapUsd: 100
  atCapAction: auto-shutdown
`
	path := writeManifest(t, src, 0o644)
	code, out := runBaton(t, nil, "convox", "check", path)
	if code != exitOK || !strings.HasPrefix(out, path+": no problems with baton's rules") || !strings.HasSuffix(out, path+": Convox checks the rest itself at deploy\n") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	if strings.Contains(out, "no problems found") {
		t.Errorf("output calls the manifest fine as a whole:\n%s", out)
	}
}

// TestConvoxCheckMergeKeys: a merge key inside a service is what Convox's
// parser drops (testdata/convox/merge-key.yml of internal/manifest), so
// check reports it, and judges the etcd service without what the anchor
// holds: not singleton, not internal.
func TestConvoxCheckMergeKeys(t *testing.T) {
	t.Parallel()
	src := `x-etcd: &etcd
  internal: true
  singleton: true
services:
  etcd:
    <<: *etcd
    command: baton etcd --listen-client-urls http://0.0.0.0:2379
    port: 2379
    health: /health
`
	path := writeManifest(t, src, 0o644)
	code, out := runBaton(t, nil, "convox", "check", path)
	for _, want := range []string{
		path + ":5: service etcd runs etcd but is not singleton: true",
		path + ":5: service etcd runs etcd but is not internal: true",
		path + ":6: service etcd: Convox drops this merge key and all it brings (internal, singleton)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != exitProblem {
		t.Errorf("exit %d, want %d", code, exitProblem)
	}
}

// TestConvoxInitStockEtcd: an etcd service from a stock etcd image has no
// auth that baton set up, so init says so, names no password variable and
// prints no step that sets one; the deploy steps stay.
func TestConvoxInitStockEtcd(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src string
		args      []string
	}{
		{"quay.io/coreos/etcd", "services:\n  web:\n    build: .\n    command: baton crontab crontab\n  etcd:\n    image: quay.io/coreos/etcd:v3.5.0\n", nil},
		{"--image", plainApp, []string{"--image"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeManifest(t, tc.src, 0o644)
			app := filepath.Base(filepath.Dir(path))
			code, out := runBaton(t, nil, append(append([]string{"convox", "init"}, tc.args...), path)...)
			if code != exitOK {
				t.Fatalf("init: exit %d:\n%s", code, out)
			}
			if !strings.Contains(out, "not `baton etcd`, so it has no auth that baton set up") ||
				!strings.Contains(out, "Then, in this order (on a fresh rack; skip what is done):\n  convox apps create "+app+"\n  convox deploy -a "+app+"\n") {
				t.Errorf("init output:\n%s", out)
			}
			if strings.Contains(out, "convox env set -a") || strings.Contains(readFile(t, path), "BATON_ETCD_PASSWORD") {
				t.Errorf("init sets a password up for an etcd without auth:\n%s\n%s", out, readFile(t, path))
			}
		})
	}
}

// TestConvoxFailures checks the exit statuses and messages of what cannot
// be done, and that the file is left as it was.
func TestConvoxFailures(t *testing.T) {
	t.Parallel()
	malformed := "services:\n  web:\n    build: .\n   port: 3000\n"
	tests := []struct {
		name string
		src  string // written to convox.yml unless empty
		args []string
		code int
		out  *regexp.Regexp
	}{
		{"malformed YAML, init", malformed, []string{"init", "FILE"}, exitUsage, regexp.MustCompile(`^FILE:4: did not find expected key\n$`)},
		{"malformed YAML, check", malformed, []string{"check", "FILE"}, exitUsage, regexp.MustCompile(`^FILE:4: did not find expected key\n$`)},
		{"not a manifest", "- web\n", []string{"check", "FILE"}, exitUsage, regexp.MustCompile(`^FILE:1: the top level is a list`)},
		{"missing file, check", "", []string{"check", "FILE"}, exitFailure, regexp.MustCompile(`^baton convox check: open FILE: no such file or directory\n$`)},
		{"missing file, init", "", []string{"init", "FILE"}, exitFailure, regexp.MustCompile(`^baton convox init: open FILE: no such file or directory\n$`)},
		{"services is a list", "services:\n  - web\n", []string{"init", "FILE"}, exitFailure, regexp.MustCompile(`^baton convox init: FILE: manifest: line 2: services is a list`)},
		{"two members", plainApp, []string{"init", "--members", "2", "FILE"}, exitUsage, regexp.MustCompile(`--members 2: want 1 or 3`)},
		{"two files", plainApp, []string{"check", "FILE", "FILE"}, exitUsage, regexp.MustCompile(`want at most one FILE, got 2 arguments`)},
		{"no subcommand", "", []string{}, exitUsage, regexp.MustCompile(`missing subcommand: init or check`)},
		{"unknown subcommand", "", []string{"fix"}, exitUsage, regexp.MustCompile(`unknown subcommand "fix": want init or check`)},
		{"unknown flag", plainApp, []string{"init", "--member", "3", "FILE"}, exitUsage, regexp.MustCompile(`unknown flag: --member`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "convox.yml")
			if tt.src != "" {
				if err := os.WriteFile(path, []byte(tt.src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"convox"}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "FILE", path))
			}
			code, out := runBaton(t, nil, args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; output:\n%s", code, tt.code, out)
			}
			if !tt.out.MatchString(strings.ReplaceAll(out, path, "FILE")) {
				t.Errorf("output does not match %s:\n%s", tt.out, out)
			}
			if tt.src != "" {
				if got := readFile(t, path); got != tt.src {
					t.Errorf("the file changed:\n%s", got)
				}
				if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
					t.Errorf("%d files beside the manifest, want none", len(entries)-1)
				}
			}
		})
	}
}

func TestConvoxHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"convox", "--help"},
		{"convox", "init", "--help"},
		{"convox", "check", "--help"},
		{"help", "convox"},
	} {
		code, out := runBaton(t, nil, args...)
		if code != exitOK {
			t.Errorf("baton %s: exit %d", strings.Join(args, " "), code)
		}
		if !strings.Contains(out, "Usage") || !strings.Contains(out, "Exit status") {
			t.Errorf("baton %s printed no usage:\n%s", strings.Join(args, " "), out)
		}
	}
	_, out := runBaton(t, nil, "convox", "init", "--help")
	if !strings.Contains(out, "--members") || !strings.Contains(out, "--image") {
		t.Errorf("init --help lacks its flags:\n%s", out)
	}
	// What Convox does that no manifest changes: the names that resolve
	// under the feature gate external-dns-resolver (no search domains), and
	// a drain that does not wait on etcd.
	for _, want := range []string{"external-dns-resolver", "http://etcd.NAME.RACK.local:2379", "http://etcd.APP.RACK.local:2379"} {
		if !strings.Contains(out, want) {
			t.Errorf("convox init --help does not say %q:\n%s", want, out)
		}
	}
	_, out = runBaton(t, nil, "convox", "check", "--help")
	for _, want := range []string{"does\nnot wait on it", "no anti-affinity"} {
		if !strings.Contains(out, want) {
			t.Errorf("convox check --help does not say %q:\n%s", want, out)
		}
	}
}

// TestConvoxInitWiresHealth: a service that runs baton crontab with no web
// server of its own gets baton's /healthz as its Convox readiness and
// liveness checks, on an internal port, and check finds nothing wrong with
// it.
func TestConvoxInitWiresHealth(t *testing.T) {
	t.Parallel()
	path := writeManifest(t, `services:
  web:
    build: .
    port: 3000
  cron:
    build: .
    command: baton crontab crontab
`, 0o644)
	code, out := runBaton(t, nil, "convox", "init", path)
	if code != exitOK || !strings.Contains(out, path+": service cron: added BATON_HTTP=:9090, port: 9090, health: /healthz, liveness: {path: /healthz}, internal: true") {
		t.Fatalf("init: exit %d, output:\n%s", code, out)
	}
	want := "  cron:\n    build: .\n    command: baton crontab crontab\n    environment:\n      - BATON_HTTP=:9090\n    port: 9090\n    health: /healthz\n    liveness:\n      path: /healthz\n    internal: true\n"
	if got := readFile(t, path); !strings.Contains(got, want) || strings.Count(got, "/healthz") != 2 {
		t.Errorf("convox.yml lacks %q, once:\n%s", want, got)
	}
	if code, out := runBaton(t, nil, "convox", "check", path); code != exitOK {
		t.Errorf("check after init: exit %d:\n%s", code, out)
	}
}
