package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/batonhq/baton/internal/manifest"
	"github.com/spf13/pflag"
)

func init() {
	register(command{name: "convox", summary: "add baton's etcd to a convox.yml (init), or check one (check)", run: runConvox})
}

const convoxSynopsis = `Usage:
  baton convox init [--members 1|3] [--image] [--storage efs|ephemeral] [FILE]
  baton convox init --etcd-app NAME --storage efs|ephemeral [--app APP] [FILE]
  baton convox check [FILE]

Fits a Convox app's manifest, FILE (default ./convox.yml), to baton. init
adds the bundled etcd service and BATON_ETCD_ENDPOINTS; check reports what
would make baton run a tick twice or not at all, and what Convox's parser
would drop without a word; Convox checks the rest itself at deploy. Run
` + "`baton convox init --help`" + ` or ` + "`baton convox check --help`" + ` for more.`

const convoxInitSynopsis = `Usage: baton convox init [flags] [FILE]

Adds what baton needs to FILE (default ./convox.yml). What follows about
Convox rests on Convox's own code (github.com/convox/convox), as no rack
was at hand to try it on.

Recommended: --etcd-app NAME runs etcd as the Convox app NAME, apart from
this app. Every promoted release of an app (a deploy; ` + "`convox env set`" + `
makes a release that is promoted only with --promote) restarts every
service of it, and a singleton stops before its successor starts, so an
etcd inside the app is down at each deploy and, on an emptyDir, comes back
empty: pauses, run --once claims, run history and held locks are lost.
With --etcd-app, init writes NAME's manifest to --etcd-file (one internal,
singleton service etcd running ` + "`baton etcd`" + ` from this app's image, with
BATON_PREFIX=/baton/APP) and points this app at http://etcd.NAME:2379:
Convox's resolver names a service SERVICE.APP.RACK.local and every pod
searches RACK.local, so that name finds the etcd app on a rack of any
name (on a rack without Convox's resolver, AWS's disable_convox_resolver,
set BATON_ETCD_ENDPOINTS to http://etcd.RACK-NAME.svc.cluster.local:2379;
on a rack with the feature gate external-dns-resolver, which gives pods
no search domains, set it to the full name Convox's resolver answers,
http://etcd.NAME.RACK.local:2379, and for an etcd inside the app, to
http://etcd.APP.RACK.local:2379 rather than baton's default
http://etcd:2379).
--storage is then required: efs keeps etcd's data on an awsEfs volume (the
rack needs ` + "`convox rack params set efs_csi_driver_enable=true`" + `);
ephemeral puts it on an emptyDir, lost with each new etcd process. init
prints the steps in the order a fresh rack needs them: create both apps,
set the password on both, deploy etcd, then the app. When --etcd-file
exists and serves another app, it is left as it is, and init prints how
to give this app a user of its own there (baton etcd --user
APP:/baton/APP, its password in BATON_ETCD_PASSWORD_<APP>).

Without --etcd-app, for a quick start, init adds an etcd inside the app:
by default one service etcd, singleton and internal, that runs
` + "`baton etcd`" + ` from the app's own image (built as the first service that
runs baton is, so that image must contain the baton command; with --image
it runs etcd's official image instead, which has no auth that baton sets
up), serving port 2379 with health /health, its data on an emptyDir unless
--storage efs; with --members 3, services etcd-0, etcd-1 and etcd-2
forming one cluster from a static --initial-cluster, on ports 2379 and
2380. init and check then note what each release of the app does to it.

Either way init adds to the app-level environment, which Convox gives to
every service, BATON_ETCD_ENDPOINTS and, for ` + "`baton etcd`" + `, the names (never
the values) of BATON_ETCD_USERNAME and BATON_ETCD_PASSWORD, which it makes
its user from and every client logs in with, and prints the ` + "`convox env\nset`" + `
command that gives them a random password.

Probes. Convox probes only a service's port: (its Kubernetes template):
health: is a readiness check (every 5 s after a 5 s grace, 4 s timeout,
default path /), which takes a failing process out of the Service and
leaves it running; only liveness: makes Kubernetes restart a process that
stops answering (every 5 s after a 10 s grace, 5 s timeout, 3 failures).
So init gives a single etcd member health: /health and liveness: {path:
/livez, grace: 30} (/livez is a local read, which needs no peer); the
members of three get neither, since a readiness check would keep them from
meeting, and while a member waits for its peers etcd answers no request at
all, so no probe can tell waiting from stuck. A service that runs
` + "`baton crontab`" + ` or ` + "`baton run`" + ` and has no port: (no web server of its own)
gets BATON_HTTP=:9090 in its environment, port: 9090, health: /healthz,
liveness: {path: /healthz} and, unless it says otherwise, internal: true,
which keeps the port off the internet (other apps reach it at
SERVICE.APP.RACK.local:9090, for Prometheus). /healthz fails when the
command's own loop stops answering, and never asks etcd, so an etcd outage
neither restarts every process nor holds up a deploy. command: is split
into arguments without a shell, so $PORT in it is not expanded, hence
BATON_HTTP. A service with port:, ports:, health:, liveness:, agent: or
BATON_HTTP (its own or the app's) is left as it is.

An etcd service already there is completed, not duplicated, and a value
already written is never changed. init writes into no YAML anchor and no
merge key: what it would have to change there is an error, or, for a
service's probes, a note. The file is replaced atomically, its comments,
blank lines, key order, anchors and quoting kept (a comment after a value
gets one space before it, and lists are indented under their key); running
init again changes nothing. init prints each change, then any problem
` + "`baton convox check`" + ` would report, and then exits 4, as check does.`

const convoxCheckSynopsis = `Usage: baton convox check [FILE]

Checks FILE (default ./convox.yml) with baton's rules, and for what
Convox's parser would drop without a word, and prints each problem as
FILE:LINE: message. Convox checks the rest itself at deploy: check never
says a manifest is fine as a whole. What it says of Convox rests on
Convox's own code (github.com/convox/convox), as no rack was at hand.

baton's rules, which Convox knows nothing of:
  - a service or timer that runs baton with no etcd reachable by the name
    BATON_ETCD_ENDPOINTS gives (without it, baton uses http://etcd:2379; a
    dotted name, such as an etcd app's etcd.NAME, is outside the manifest);
  - an etcd service that is not singleton: true or not internal: true,
    whose scale lets it run more than one process or that is an agent (each
    process would be a separate cluster), whose ports are not exposed, whose
    readiness or liveness check asks a path etcd does not serve, or whose
    volume is not where etcd keeps its data;
  - a timer that does not run through ` + "`baton run --once`" + `: a Convox
    timer is a Kubernetes CronJob, which may start one schedule twice;
  - a service that lists a BATON_* variable without a value, cancelling the
    app-level default.

What Convox's parser drops without a word: unknown keys at the top level,
in services, timers and resources, and in a service's health and
liveness; keys given twice (a top-level environment, services, timers or
resources given twice Convox reads whole, the blocks one after the other,
and so does check; it says so all the same); environment entries that are not strings; and
a merge key (<<: *anchor) anywhere inside services, timers, resources and
balancers, which Convox reads entry by entry with yaml.v2 and so loses,
with all the anchor holds (a quoted "<<" it does merge). Nothing in such a
merge key counts for baton's rules either.

It also notes, without counting it a problem, what Convox does to each
etcd service that no manifest changes: a release of the app it is in
restarts it; ` + "`convox scale`" + ` can start a second process beside it (singleton
does not stop that); a node drain (a rack update that replaces nodes) does
not wait on it whatever its PodDisruptionBudget, since Convox's node
controller restarts elsewhere every Deployment on a cordoned node whose
budget allows no disruption, so etcd is down while it moves; members of
three get no anti-affinity, so two may share a node and restart together,
losing the quorum (the note says how to keep them apart); and an etcd that
is not ` + "`baton etcd`" + ` has no auth that baton set up.`

func runConvox(ctx context.Context, env *environ, args []string) int {
	fs := flagSet(env, "convox", convoxSynopsis)
	fs.SetInterspersed(false)
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "%s\n\n%s\n", convoxSynopsis, exitStatuses) }
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		return usageError(env, fs, "missing subcommand: init or check")
	}
	switch sub := fs.Arg(0); sub {
	case "init":
		return convoxInit(env, fs.Args()[1:])
	case "check":
		return convoxCheck(env, fs.Args()[1:])
	case "help":
		fmt.Fprintf(env.stdout, "%s\n\n%s\n", convoxSynopsis, exitStatuses)
		return exitOK
	default:
		return usageError(env, fs, "unknown subcommand %q: want init or check", sub)
	}
}

// manifestArg returns the manifest file named by the arguments left after
// the flags: one, or none for ./convox.yml.
func manifestArg(env *environ, fs *pflag.FlagSet) (string, int, bool) {
	switch fs.NArg() {
	case 0:
		return "convox.yml", 0, true
	case 1:
		return fs.Arg(0), 0, true
	}
	return "", usageError(env, fs, "want at most one FILE, got %d arguments", fs.NArg()), false
}

// readManifest reads and parses a manifest, reporting a failure the way
// both subcommands do: an unreadable file is a failure, YAML that does not
// parse a usage error, with its line.
func readManifest(env *environ, sub, path string) (*manifest.Document, int, bool) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fail(env, "convox "+sub, err), false
	}
	doc, err := manifest.Parse(src)
	if err != nil {
		var se *manifest.SyntaxError
		if errors.As(err, &se) && se.Line > 0 {
			fmt.Fprintf(env.stderr, "%s:%d: %s\n", path, se.Line, se.Msg)
		} else {
			fmt.Fprintf(env.stderr, "%s: %v\n", path, err)
		}
		return nil, exitUsage, false
	}
	return doc, 0, true
}

func convoxInit(env *environ, args []string) int {
	fs := flagSet(env, "convox init", convoxInitSynopsis)
	members := fs.Int("members", 1, "etcd members: 1 (service etcd) or 3 (etcd-0, etcd-1, etcd-2); when not given, etcd services already in FILE are completed as they are")
	image := fs.Bool("image", false, "run etcd from its official image, "+manifest.EtcdImage+", rather than baton etcd from the app's image (no auth that baton sets up)")
	storage := fs.String("storage", "", "the `KIND` of storage for a new etcd's data: efs, an awsEfs volume that outlives its processes (the rack needs: "+manifest.EFSDriver+"), or ephemeral, an emptyDir lost with each new process (default ephemeral in the app; required with --etcd-app)")
	etcdApp := fs.String("etcd-app", "", "run etcd as the Convox app `NAME`, apart from this app's releases: write its manifest to --etcd-file and point this app at "+manifest.EtcdAppEndpoint("NAME"))
	app := fs.String("app", "", "this app's Convox name `APP`, for its etcd user and prefix (default FILE's directory name, as convox does)")
	etcdFile := fs.String("etcd-file", "", "the `PATH` where --etcd-app writes the etcd app's manifest (default convox.etcd.yml beside FILE)")
	if code, done := parse(env, fs, args); done {
		return code
	}
	if *members != 1 && *members != 3 {
		return usageError(env, fs, "--members %d: want 1 or 3", *members)
	}
	path, code, ok := manifestArg(env, fs)
	if !ok {
		return code
	}
	opts := manifest.Options{Image: *image, EtcdApp: *etcdApp}
	if fs.Changed("members") {
		opts.Members = *members
	}
	switch {
	case *storage != "":
		st, err := manifest.ParseStorage(*storage)
		if err != nil {
			return usageError(env, fs, "--%v", err)
		}
		opts.Storage = st
	case *etcdApp != "":
		return usageError(env, fs, "--etcd-app needs --storage: efs (persistent; the rack needs `%s`) or ephemeral (an emptyDir: each new etcd process loses %s)", manifest.EFSDriver, manifest.Lost)
	}
	if *etcdApp != "" && (*image || fs.Changed("members")) {
		return usageError(env, fs, "--etcd-app runs one member of baton etcd; it takes neither --image nor --members")
	}
	if *app == "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return fail(env, "convox init", err)
		}
		*app = filepath.Base(filepath.Dir(abs))
	}
	if *etcdFile == "" {
		*etcdFile = filepath.Join(filepath.Dir(path), "convox.etcd.yml")
	}
	doc, code, ok := readManifest(env, "init", path)
	if !ok {
		return code
	}
	var etcdManifest []byte
	sharedEtcd := "" // the prefix of the app an existing etcd app serves
	if *etcdApp != "" {
		var err error
		if etcdManifest, err = manifest.EtcdAppManifest(doc, *app, *etcdApp, *etcdFile, opts.Storage); err != nil {
			return usageError(env, fs, "%v (--app, --etcd-app)", err)
		}
	}
	changes, err := manifest.Init(doc, opts)
	if err != nil {
		return fail(env, "convox init", fmt.Errorf("%s: %w", path, err))
	}
	if etcdManifest != nil {
		switch err := manifest.CreateFile(*etcdFile, etcdManifest); {
		case errors.Is(err, os.ErrExist):
			fmt.Fprintf(env.stdout, "%s: exists; left as it is\n", *etcdFile)
			if other, ok := etcdAppPrefix(*etcdFile); ok && other != "/baton/"+*app {
				sharedEtcd = other
			}
		case err != nil:
			return fail(env, "convox init", err)
		default:
			fmt.Fprintf(env.stdout, "%s: wrote the manifest of app %s: one service etcd, internal and singleton, its data %s\n", *etcdFile, *etcdApp, storageWords(opts.Storage))
		}
	}
	if len(changes) == 0 {
		fmt.Fprintf(env.stdout, "%s: already set up; nothing changed\n", path)
	} else {
		if err := manifest.WriteFile(path, doc.Bytes()); err != nil {
			return fail(env, "convox init", err)
		}
		for _, c := range changes {
			fmt.Fprintf(env.stdout, "%s: %s\n", path, c)
		}
	}
	printProblems(env, path, manifest.Notes(doc))
	switch {
	case sharedEtcd != "":
		printSharedSteps(env, *app, *etcdApp, *etcdFile, sharedEtcd)
	case len(changes) > 0 || etcdManifest != nil:
		printNextSteps(env, *app, *etcdApp, *etcdFile, opts.Storage, manifest.SetsUpAuth(doc))
	}
	if problems := manifest.Check(doc); len(problems) > 0 {
		fmt.Fprintf(env.stdout, "\n`baton convox check %s` reports:\n", path)
		printProblems(env, path, problems)
		return exitProblem
	}
	return exitOK
}

// etcdAppPrefix reads the BATON_PREFIX of an etcd app's manifest: the
// prefix of the app it was made for.
func etcdAppPrefix(path string) (string, bool) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	d, err := manifest.Parse(src)
	if err != nil {
		return "", false
	}
	return manifest.EnvValue(d, "BATON_PREFIX")
}

// printSharedSteps says how an etcd app made for another app serves this
// one too: a user of this app's own, limited to its prefix.
func printSharedSteps(env *environ, app, etcdApp, etcdFile, otherPrefix string) {
	pw := passwordVar(app)
	fmt.Fprintf(env.stdout, "\n%s serves the app of prefix %s. To serve %s too, with a user of its own limited to /baton/%s, in this order:\n", etcdFile, otherPrefix, app, app)
	fmt.Fprintf(env.stdout, "  - add `--user %s:/baton/%s` to the command of its service etcd, and %s to its environment;\n", app, app, pw)
	fmt.Fprintf(env.stdout, "  - convox apps create %s   # unless it exists\n", app)
	fmt.Fprintf(env.stdout, "  - P=$(openssl rand -hex 24) && convox env set -a %s %s=$P && convox env set -a %s BATON_ETCD_USERNAME=%s BATON_ETCD_PASSWORD=$P\n", etcdApp, pw, app, app)
	fmt.Fprintf(env.stdout, "  - convox deploy -a %s -m %s   # restarts etcd, for every app on it\n  - convox deploy -a %s\n", etcdApp, etcdFile, app)
}

func storageWords(st manifest.Storage) string {
	if st == manifest.EFS {
		return "on an awsEfs volume (the rack needs `" + manifest.EFSDriver + "`)"
	}
	return "on an emptyDir: each new etcd process loses " + manifest.Lost
}

// printNextSteps prints the commands that deploy what init wrote, in the
// order a fresh rack needs them: `convox env set` makes a release of an app
// that must exist (provider/k8s/release.go: ReleaseCreate forks the app's
// latest release), and a deploy that finds a variable the manifest names
// without a value unset fails ("required env", pkg/manifest/manifest.go).
// The password is set only for an etcd whose auth baton sets up from it,
// and never written down.
func printNextSteps(env *environ, app, etcdApp, etcdFile string, st manifest.Storage, auth bool) {
	fmt.Fprintln(env.stdout, "\nThen, in this order (on a fresh rack; skip what is done):")
	if st == manifest.EFS {
		fmt.Fprintf(env.stdout, "  %s   # once per rack, for the awsEfs volume\n", manifest.EFSDriver)
	}
	if etcdApp == "" {
		fmt.Fprintf(env.stdout, "  convox apps create %s\n", app)
		if auth {
			fmt.Fprintf(env.stdout, "  convox env set -a %s BATON_ETCD_USERNAME=%s BATON_ETCD_PASSWORD=$(openssl rand -hex 24)\n", app, app)
		}
		fmt.Fprintf(env.stdout, "  convox deploy -a %s\n", app)
		return
	}
	fmt.Fprintf(env.stdout, "  convox apps create %s\n  convox apps create %s\n", etcdApp, app)
	fmt.Fprintf(env.stdout, "  P=$(openssl rand -hex 24) && convox env set -a %s BATON_ETCD_USERNAME=%s BATON_ETCD_PASSWORD=$P && convox env set -a %s BATON_ETCD_USERNAME=%s BATON_ETCD_PASSWORD=$P\n",
		etcdApp, app, app, app)
	fmt.Fprintf(env.stdout, "  convox deploy -a %s -m %s   # once\n  convox deploy -a %s   # as often as you like\n", etcdApp, etcdFile, app)
}

func convoxCheck(env *environ, args []string) int {
	fs := flagSet(env, "convox check", convoxCheckSynopsis)
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "%s\n\n%s\n", convoxCheckSynopsis, exitStatuses) }
	if code, done := parse(env, fs, args); done {
		return code
	}
	path, code, ok := manifestArg(env, fs)
	if !ok {
		return code
	}
	doc, code, ok := readManifest(env, "check", path)
	if !ok {
		return code
	}
	problems := manifest.Check(doc)
	printProblems(env, path, manifest.Notes(doc))
	printProblems(env, path, problems)
	if len(problems) == 0 {
		fmt.Fprintf(env.stdout, "%s: no problems with %s\n", path, manifest.Checked)
	}
	fmt.Fprintf(env.stdout, "%s: Convox checks the rest itself at deploy\n", path)
	if len(problems) > 0 {
		return exitProblem
	}
	return exitOK
}

func printProblems(env *environ, path string, problems []manifest.Problem) {
	for _, p := range problems {
		fmt.Fprintf(env.stdout, "%s:%d: %s\n", path, p.Line, p.Message)
	}
}
