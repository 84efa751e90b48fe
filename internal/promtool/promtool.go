// Package promtool runs Prometheus's promtool, from Debian's prometheus
// package, for the tests that check baton's metrics, alert rules and
// dashboard against Prometheus's own code.
package promtool

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Path returns promtool's path. In CI (CI set, as .ci/run, which installs
// it, runs) a missing promtool fails the test; elsewhere the test is
// skipped, saying how to install it.
func Path(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("promtool not found on PATH (%v): .ci/run installs it (apt-get install prometheus)", err)
	}
	t.Skipf("promtool not found on PATH (%v): apt-get install prometheus to run this test; CI fails without it", err)
	return ""
}

// Run runs promtool with args and stdin, and fails the test with its
// output when it fails.
func Run(t testing.TB, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command(Path(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
