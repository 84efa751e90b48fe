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

// Exit statuses. A command run by `baton run` passes its own status through.
const (
	exitOK      = 0
	exitFailure = 1 // etcd unreachable, a file that cannot be read, a failed operation
	exitUsage   = 2 // bad flags or arguments, a crontab or manifest that does not parse
	exitLost    = 3 // leadership or the lock was lost while the command ran
	exitProblem = 4 // `baton convox check` found problems
)

const exitStatuses = `Exit status:
  0    success
  1    failure: etcd unreachable, a file not readable, an operation refused
  2    usage: bad flags or arguments, a crontab or manifest that does not parse
  3    leadership or the lock was lost while the command ran (baton run)
  4    problems found (baton convox check)
  baton run otherwise exits with its command's status, or 128+N when the
  command was killed by signal N.`

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
	// signals delivers SIGTERM and SIGINT; nil in tests that do not signal.
	signals <-chan os.Signal
}

var commands []command

func register(c command) { commands = append(commands, c) }

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
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
		fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n%s\n%s\n", strings.TrimSpace(synopsis), fs.FlagUsages(), exitStatuses)
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
