// Command baton runs cron for any language, once per tick for a whole
// cluster, coordinated through etcd; it also serves the bundled etcd and
// fits an app's convox.yml to it. Run `baton help` for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/pflag"
)

// Exit statuses of every command but run.
const (
	exitOK      = 0
	exitFailure = 1 // etcd unreachable or refusing access, a file that cannot be read, a failed operation
	exitUsage   = 2 // bad flags or arguments, a crontab or manifest that does not parse
	exitProblem = 4 // `baton convox check` found problems
)

// Exit statuses of baton run itself. Its command's own status passes
// through, so baton's are out of the range commands use for theirs (1, 2
// and 3 are common) and below the shell's 126, 127 and 128+N.
const (
	runFailure = 121 // etcd unreachable or refusing access, the command could not be started
	runUsage   = 122 // bad flags or arguments
	runLost    = 123 // leadership, the lock or the claim was lost while the command ran
)

const exitStatuses = `Exit status:
  0    success
  1    failure: etcd unreachable or refusing access, a file not readable,
       an operation refused
  2    usage: bad flags or arguments, a crontab or manifest that does not parse
  4    problems found (baton convox check)
  baton run exits with its command's status; its own statuses are 121, 122
  and 123 (see baton run --help).`

const runExitStatuses = `Exit status:
  COMMAND's own status, whatever it is, when COMMAND ran and exited
  128+N  COMMAND was killed by signal N (143: SIGTERM, 137: SIGKILL)
  126    COMMAND could not be executed; 127: COMMAND was not found
  0      --once: KEY succeeded within --ttl, or runs elsewhere; not run here
  0      asked to stop (SIGTERM, SIGINT, SIGHUP) before COMMAND started
  121    baton failed: etcd unreachable or refusing access (wrong or missing
         credentials, no permission on the prefix), a failed claim, or a
         --once success that could not be recorded (a retry runs again)
  122    usage: bad flags or arguments
  123    leadership, the lock or the --once claim was lost while COMMAND ran;
         COMMAND was stopped
  baton's own statuses are distinct from 1, 2 and 3, so a COMMAND's own
  failure can be told from baton's.`

// command is one subcommand. run gets the arguments after the subcommand's
// name and returns the exit status.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *environ, args []string) int
}

// environ is what a subcommand reads and writes outside itself, so tests can
// run subcommands in-process.
type environ struct {
	stdout, stderr io.Writer
	// signals delivers SIGTERM, SIGINT and SIGHUP; nil in tests that do not
	// signal. crontab reloads its file on SIGHUP; every other command
	// treats SIGHUP (its terminal closed, or a supervisor that stops with it)
	// as SIGTERM.
	signals <-chan os.Signal
}

// stopSignal is the cause of a stop asked for by a signal.
type stopSignal struct{ os.Signal }

func (s stopSignal) Error() string {
	names := map[os.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT", syscall.SIGHUP: "SIGHUP"}
	if n, ok := names[s.Signal]; ok {
		return "received " + n
	}
	return "received " + s.String()
}

var commands []command

func register(c command) { commands = append(commands, c) }

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	env := &environ{stdout: os.Stdout, stderr: os.Stderr, signals: sig}
	os.Exit(dispatch(context.Background(), env, os.Args[1:]))
}

func dispatch(ctx context.Context, env *environ, args []string) int {
	if len(args) == 0 {
		usage(env.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "--help":
		if len(args) > 1 {
			return dispatch(ctx, env, []string{args[1], "--help"})
		}
		usage(env.stdout)
		return exitOK
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, env, args[1:])
		}
	}
	fmt.Fprintf(env.stderr, "baton: unknown command %q\n\n", name)
	usage(env.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	sort.Slice(commands, func(i, j int) bool { return commands[i].name < commands[j].name })
	fmt.Fprint(w, "baton runs cron jobs once per tick for a whole cluster, coordinated through etcd.\n\nUsage:\n  baton COMMAND [flags] [args]\n\nCommands:\n")
	for _, c := range commands {
		if c.summary == "" {
			continue // internal
		}
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun `baton COMMAND --help` for a command's flags.\n\n", exitStatuses, "\n")
}

// flagSet returns a FlagSet for a subcommand whose --help prints synopsis,
// the flags and the exit statuses.
func flagSet(env *environ, name, synopsis string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("baton "+name, pflag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		statuses := exitStatuses
		if name == "run" {
			statuses = runExitStatuses
		}
		fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n%s\n%s\n", strings.TrimSpace(synopsis), fs.FlagUsages(), statuses)
	}
	return fs
}

// parse parses args into fs. done is true when the subcommand should return
// code at once: after --help (0) or a usage error (2).
func parse(env *environ, fs *pflag.FlagSet, args []string) (code int, done bool) {
	// pflag prints the usage itself on --help and errors; parse does both.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(env.stdout)
			fs.Usage()
			return exitOK, true
		}
		fmt.Fprintf(env.stderr, "%s: %v\nRun `%s --help` for usage.\n", fs.Name(), err, fs.Name())
		return exitUsage, true
	}
	return 0, false
}

// usageError reports a usage error of the subcommand fs and returns 2.
func usageError(env *environ, fs *pflag.FlagSet, format string, a ...any) int {
	fmt.Fprintf(env.stderr, "%s: %s\nRun `%s --help` for usage.\n", fs.Name(), fmt.Sprintf(format, a...), fs.Name())
	return exitUsage
}

// fail reports an error of the subcommand and returns 1.
func fail(env *environ, name string, err error) int {
	fmt.Fprintf(env.stderr, "baton %s: %v\n", name, err)
	return exitFailure
}

func init() {
	register(command{name: "_supervise", run: func(_ context.Context, _ *environ, args []string) int { return supervise(args) }})
}
