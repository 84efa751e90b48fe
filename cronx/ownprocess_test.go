package cronx

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ownProcessEnv names, in a copy of the test binary, the one test it runs.
const ownProcessEnv = "CRONX_TEST_OWN_PROCESS"

// inOwnProcess runs the calling test in a process of its own: a copy of
// this test binary that runs that test alone. It reports true in that
// copy, where the caller goes on with its test, and false in the test
// binary's own process, where the caller returns at once.
//
// It is for a test that sets the process's environment (t.Setenv): such
// a test cannot run beside the others in one process, and every parallel
// test of the package would wait for it; from a process of its own it
// runs beside them. A test that skips in -short mode says so before it
// calls inOwnProcess.
func inOwnProcess(t *testing.T) bool {
	t.Helper()
	if os.Getenv(ownProcessEnv) == t.Name() {
		return true
	}
	t.Parallel()
	run := make([]string, 0, 2)
	for _, part := range strings.Split(t.Name(), "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	args := []string{"-test.run=" + strings.Join(run, "/"), "-test.count=1", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	if deadline, ok := t.Deadline(); ok && time.Until(deadline) > time.Second {
		args = append(args, "-test.timeout="+time.Until(deadline).Round(time.Second).String())
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), ownProcessEnv+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s, in a process of its own: %v; its output:\n%s", t.Name(), err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()+" ") {
		t.Fatalf("%s, in a process of its own, did not pass; its output:\n%s", t.Name(), out)
	}
	return false
}
