// Package promtool runs Prometheus's promtool, from Debian's prometheus
// package, for the tests that check baton's metrics, alert rules and
// dashboard against Prometheus's own code.
package promtool

import (
	"os/exec"
	"strings"
	"testing"
)

// Path returns promtool's path. The quick tier (-short) skips the tests
// that need it; in the full tier, which .ci/test runs after installing
// it, a missing promtool fails the test.
func Path(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("checks with promtool; the full tier (.ci/test) runs it")
	}
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool not found on PATH (%v): .ci/test installs it (apt-get install prometheus)", err)
	}
	return path
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
