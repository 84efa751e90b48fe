package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is also the small programs the tests run as commands
// (TestMain runs one when TEST_HELPER names it): a program whose behaviour a
// shell cannot give, as a shell's own children get every signal baton
// passes to a command's tree.

// helperMain runs the helper name with args and returns its exit status.
func helperMain(name string, args []string) int {
	switch name {
	case "slowterm":
		return slowTerm(args[0])
	}
	fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
	return 2
}

// slowTermTakes is how long slowterm takes to finish after SIGTERM.
const slowTermTakes = 2500 * time.Millisecond

// slowTerm appends "ready PID" to log, then waits for SIGTERM (or SIGINT),
// takes slowTermTakes to finish whatever signals come meanwhile, appends
// "finished PID" and exits 0. A program that must not be cut short.
func slowTerm(log string) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	appendLine(log, "ready "+strconv.Itoa(os.Getpid()))
	<-sigs
	time.Sleep(slowTermTakes)
	appendLine(log, "finished "+strconv.Itoa(os.Getpid()))
	return 0
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		panic(err)
	}
}

// helperCommand is a shell command line that runs the helper name with args.
func helperCommand(t *testing.T, name string, args ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	q := []string{"TEST_HELPER=" + name, shellQuote(self)}
	for _, a := range args {
		q = append(q, shellQuote(a))
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// helperPids returns the pids the log's lines with what name, in order.
func helperPids(log, what string) []string {
	var out []string
	for _, l := range readLines(log) {
		if w, pid, ok := strings.Cut(l, " "); ok && w == what {
			out = append(out, pid)
		}
	}
	return out
}
