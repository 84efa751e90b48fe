package main

import (
	"strings"
	"testing"
)

// TestEveryCommandHasHelp runs `baton COMMAND --help` for every command:
// each exits 0 and prints its flags and the exit statuses, once.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	code, out := runBaton(t, nil, "help")
	if code != exitOK {
		t.Fatalf("baton help: exit %d", code)
	}
	var names []string
	for _, c := range commands {
		if c.summary == "" {
			continue
		}
		names = append(names, c.name)
		if !strings.Contains(out, c.name) {
			t.Errorf("baton help does not list %q:\n%s", c.name, out)
		}
	}
	for _, want := range []string{"crontab", "run", "etcd", "status", "pause", "resume", "trigger", "convox"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("no command %q", want)
		}
	}
	for _, name := range names {
		code, out := runBaton(t, nil, name, "--help")
		if code != exitOK || strings.Count(out, "Exit status") != 1 {
			t.Errorf("baton %s --help: exit %d, output:\n%s", name, code, out)
		}
	}
	if code, out := runBaton(t, nil, "frobnicate"); code != exitUsage || !strings.Contains(out, "unknown command") {
		t.Errorf("unknown command: exit %d, output:\n%s", code, out)
	}
	if code, _ := runBaton(t, nil); code != exitUsage {
		t.Errorf("no command: exit %d, want 2", code)
	}
}

// TestHelpSaysWhatBecomesOfACommandsProcesses: run's and crontab's help say
// that a command's whole tree ends with its run, what remains possible,
// what environment commands get, and how a TLS mistake is reported.
func TestHelpSaysWhatBecomesOfACommandsProcesses(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"run", "crontab"} {
		_, out := runBaton(t, nil, name, "--help")
		for _, want := range []string{"setsid", "double-forks", "PR_SET_CHILD_SUBREAPER", "killed at the same instant",
			"less BATON_HTTP", "BATON_ETCD_ENDPOINTS,\nBATON_PREFIX", "x509", "up to\nthe last \"@\"", "password with a comma"} {
			if !strings.Contains(out, want) {
				t.Errorf("baton %s --help does not say %q", name, want)
			}
		}
	}
	_, out := runBaton(t, nil, "crontab", "--help")
	for _, want := range []string{"each key once", "MAX_ARG_STRLEN", "needs no etcd", "cannot be read (missing, a directory) exits 1",
		"shortest time between the job's ticks"} {
		if !strings.Contains(out, want) {
			t.Errorf("baton crontab --help does not say %q", want)
		}
	}
}
