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
would make baton run a tick twice or not at all, some of what Convox would
reject or silently ignore, and what it leaves to Convox. Run ` + "`baton convox init --help`" + ` or
` + "`baton convox check --help`" + ` for more.`

const convoxInitSynopsis = `Usage: baton convox init [flags] [FILE]

Adds what baton needs to FILE (default ./convox.yml).

Recommended: --etcd-app NAME runs etcd as the Convox app NAME, apart from
this app. Every release of an app (a deploy, ` + "`convox env set`" + `) restarts
every service of it, and a singleton stops before its successor starts, so
an etcd inside the app is down at each release and, on an emptyDir, comes
back empty: pauses, run --once claims, run history and held locks are lost.
With --etcd-app, init writes NAME's manifest to --etcd-file (one internal,
singleton service etcd running ` + "`baton etcd`" + ` from this app's image, with
BATON_PREFIX=/baton/APP) and points this app at
http://etcd.NAME.convox.local:2379. --storage is then required: efs keeps
etcd's data on an awsEfs volume (the rack needs ` + "`convox rack params set\nefs_csi_driver_enable=true`" + `); ephemeral puts it on an emptyDir, lost at
each restart of etcd. Deploy NAME once with ` + "`convox deploy -a NAME -m FILE`" + `.
When --etcd-file exists and serves another app, it is left as it is, and
init prints how to give this app a user of its own there (baton etcd
--user APP:/baton/APP, its password in BATON_ETCD_PASSWORD_<APP>).

Without --etcd-app, for a quick start, init adds an etcd inside the app:
by default one service etcd, singleton and internal, that runs
` + "`baton etcd`" + ` from the app's own image (built as the first service that
runs baton is, so that image must contain the baton command; with --image
it runs etcd's official image instead, which sets up no auth), serving port
2379 with health /health, its data on an emptyDir unless --storage efs;
with --members 3, services etcd-0, etcd-1 and etcd-2 forming one cluster
from a static --initial-cluster, on ports 2379 and 2380. init and check
then note what each release of the app does to it.

Either way init adds to the app-level environment, which Convox gives to
every service, BATON_ETCD_ENDPOINTS and the names (never the values) of
BATON_ETCD_USERNAME and BATON_ETCD_PASSWORD, which ` + "`baton etcd`" + ` makes its
user from and every client logs in with, and prints the one
` + "`convox env set`" + ` command that gives them a random password.

A service that runs ` + "`baton crontab`" + ` or ` + "`baton run`" + ` and has no port: (no web
server of its own, so no health check) gets baton's: BATON_HTTP=:9090 in
its environment, port: 9090, health: /healthz and, unless it says
otherwise, internal: true. What this relies on was checked against
Convox's documentation and its Kubernetes templates, as no rack was at
hand: Convox gives a service a readiness check only on its port:, asking
health's path (default /) every 5 s after a 5 s grace, with a 4 s
timeout, and replaces a process that keeps failing it; a service with
port: is reachable from the internet unless internal: true, which keeps
it in the rack (SERVICE.APP.convox.local:9090, for Prometheus); command:
is split into arguments without a shell, so $PORT in it is not expanded,
hence BATON_HTTP. /healthz does not ask etcd, so an etcd outage does not
get every process replaced. A service with port:, ports:, health:,
agent: or BATON_HTTP (its own or the app's) is left as it is.

An etcd service already there is completed, not duplicated, and a value
already written is never changed. The file is replaced atomically, with
its comments, blank lines, key order and anchors kept; running init again
changes nothing. init prints each change, then any problem ` + "`baton convox\ncheck`" + ` would report, and then exits 4, as check does.`

const convoxCheckSynopsis = `Usage: baton convox check [FILE]

Checks FILE (default ./convox.yml) with baton's rules and with some of
Convox's, and prints each problem as FILE:LINE: message. Convox itself
checks the rest at deploy: check never says a manifest is fine as a whole.

baton's rules, which Convox knows nothing of:
  - a service or timer that runs baton with no etcd reachable by the name
    BATON_ETCD_ENDPOINTS gives (without it, baton uses http://etcd:2379; an
    etcd app of its own, etcd.NAME.convox.local, is outside the manifest);
  - an etcd service that is not singleton: true or not internal: true,
    that can scale past one process or is an agent (each process would be a
    separate cluster), whose ports are not exposed, whose readiness check
    cannot pass, or whose volume is not where etcd keeps its data;
  - a timer that does not run through ` + "`baton run --once`" + `: a Convox
    timer is a Kubernetes CronJob, which may start one schedule twice;
  - a service that lists a BATON_* variable without a value, cancelling the
    app-level default.

Convox's rules it checks, in line with Convox's own manifest code: names
of lowercase letters, digits and dashes; timers and services naming a
service or resource that does not exist; resources without a type;
internal with internalRouter; deployment percentages; a ? inside a timer's
schedule field; the form of the keys baton reads (agent, command,
environment, health, image, internal, internalRouter, port, ports, scale's
count, singleton); and what Convox silently drops: unknown keys at the top
level and in services, timers and resources, keys given twice, and
environment entries that are not strings.

After the problems, it lists by line the parts of FILE it did not check
(budget, balancers, a service's build or scale.autoscale, variables to set
with ` + "`convox env set`" + `, ...): Convox checks those at deploy. It also
notes, without counting it a problem, what each release of the app does to
an etcd service inside it.`

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
	image := fs.Bool("image", false, "run etcd from its official image, "+manifest.EtcdImage+", rather than baton etcd from the app's image (no auth set up)")
	storage := fs.String("storage", "", "the `KIND` of storage for a new etcd's data: efs, an awsEfs volume that outlives restarts (the rack needs: "+manifest.EFSDriver+"), or ephemeral, an emptyDir lost at each restart (default ephemeral in the app; required with --etcd-app)")
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
		return usageError(env, fs, "--etcd-app needs --storage: efs (persistent; the rack needs `%s`) or ephemeral (an emptyDir: each restart of etcd loses %s)", manifest.EFSDriver, manifest.Lost)
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
	case len(changes) > 0 && !*image:
		printNextSteps(env, *app, *etcdApp, *etcdFile, opts.Storage)
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
	fmt.Fprintf(env.stdout, "\n%s serves the app of prefix %s. To serve %s too, with a user of its own limited to /baton/%s:\n", etcdFile, otherPrefix, app, app)
	fmt.Fprintf(env.stdout, "  - add `--user %s:/baton/%s` to the command of its service etcd, and %s to its environment;\n", app, app, pw)
	fmt.Fprintf(env.stdout, "  - P=$(openssl rand -hex 24) && convox env set -a %s %s=$P && convox env set -a %s BATON_ETCD_USERNAME=%s BATON_ETCD_PASSWORD=$P\n", etcdApp, pw, app, app)
	fmt.Fprintf(env.stdout, "  - convox deploy -a %s -m %s, then convox deploy -a %s\n", etcdApp, etcdFile, app)
}

func storageWords(st manifest.Storage) string {
	if st == manifest.EFS {
		return "on an awsEfs volume (the rack needs `" + manifest.EFSDriver + "`)"
	}
	return "on an emptyDir: each restart of etcd loses " + manifest.Lost
}

// printNextSteps prints the commands that set the etcd user's password,
// which the manifest names but never holds, and deploy.
func printNextSteps(env *environ, app, etcdApp, etcdFile string, st manifest.Storage) {
	fmt.Fprintln(env.stdout, "\nSet the etcd user's password, a random one, never written down:")
	if etcdApp == "" {
		fmt.Fprintf(env.stdout, "  convox env set -a %s BATON_ETCD_USERNAME=%s BATON_ETCD_PASSWORD=$(openssl rand -hex 24)\n", app, app)
		return
	}
	fmt.Fprintf(env.stdout, "  P=$(openssl rand -hex 24) && convox env set -a %s BATON_ETCD_USERNAME=%s BATON_ETCD_PASSWORD=$P && convox env set -a %s BATON_ETCD_USERNAME=%s BATON_ETCD_PASSWORD=$P\n",
		etcdApp, app, app, app)
	fmt.Fprintln(env.stdout, "Then deploy etcd once, and the app as often as you like:")
	if st == manifest.EFS {
		fmt.Fprintf(env.stdout, "  %s   # once per rack, for the awsEfs volume\n", manifest.EFSDriver)
	}
	fmt.Fprintf(env.stdout, "  convox apps create %s\n  convox deploy -a %s -m %s\n  convox deploy -a %s\n", etcdApp, etcdApp, etcdFile, app)
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
	left := manifest.LeftToConvox(doc)
	if len(left) == 0 {
		fmt.Fprintf(env.stdout, "%s: Convox checks the rest itself at deploy\n", path)
	} else {
		fmt.Fprintf(env.stdout, "%s: Convox checks the rest itself at deploy, including what these lines hold, which baton did not check:\n", path)
		for _, u := range left {
			fmt.Fprintf(env.stdout, "%s:%d: %s\n", path, u.Line, u.Part)
		}
	}
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
