package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

type outcome string

const (
	passed      outcome = "passed"
	failedTest  outcome = "a test failed"
	noTests     outcome = "the -run pattern matches no test"
	buildFailed outcome = "the mutated module does not build"
	goFailed    outcome = "go test failed without a failing test"
)

type testResult struct {
	outcome outcome
	failing []string // top-level tests that failed
	output  string
	seconds float64
}

var failRe = regexp.MustCompile(`(?m)^--- FAIL: (\S+)`)

// goTest runs one set of tests in the module at dir, stopping at the first
// failure, and classifies the result: only a test that ran and failed
// catches a mutation. env is appended to the environment; the check passes
// a mutation's overlay in it (see overlayEnv).
//
// -p=1 keeps each run to one compile or test binary at a time: the worker
// pool, not go test, decides how many runs share the machine. -vet=off
// leaves vet to CI's own run of it: a mutant's compile is the check's cost.
func goTest(dir string, t tests, timeout time.Duration, env []string) testResult {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	args := []string{"test", "-count=1", "-p=1", "-vet=off", "-failfast", "-timeout=" + timeout.String(), "-run=" + t.Run}
	if t.Short {
		args = append(args, "-short")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./"+t.Pkg)...)
	cmd.Dir = dir
	// Environ sets PWD to Dir, so that the go command sees the module under
	// the same path as the overlay's keys.
	cmd.Env = append(cmd.Environ(), env...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	res := testResult{output: buf.String(), seconds: time.Since(start).Seconds()}
	for _, m := range failRe.FindAllStringSubmatch(res.output, -1) {
		res.failing = append(res.failing, m[1])
	}
	var exit *exec.ExitError
	switch {
	case err == nil && strings.Contains(res.output, "no tests to run"):
		res.outcome = noTests
	case err == nil:
		res.outcome = passed
	case !errors.As(err, &exit):
		res.outcome, res.output = goFailed, err.Error()+"\n"+res.output
	case strings.Contains(res.output, "[build failed]") || strings.Contains(res.output, "[setup failed]"):
		res.outcome = buildFailed
	case len(res.failing) > 0 || strings.Contains(res.output, "panic: test timed out"):
		res.outcome = failedTest
		if len(res.failing) == 0 {
			res.failing = []string{"timeout"}
		}
	default:
		res.outcome = goFailed
	}
	return res
}

// firstFailure is the first failing test's report: its "--- FAIL" line
// and the last n-1 of the indented lines under it (a test's failure
// comes after what it logged), each cut to 200 bytes. It shows why a
// mutation counts as caught, so that a test that failed for the machine's
// load (a missed deadline) can be told from one that saw the guarantee
// broken.
func firstFailure(output string, n int) string {
	lines := strings.Split(output, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "--- FAIL: ") {
			continue
		}
		end := i + 1
		for end < len(lines) && strings.HasPrefix(lines[end], "    ") {
			end++
		}
		report := append([]string{l}, lines[max(i+1, end-(n-1)):end]...)
		for k, r := range report {
			if len(r) > 200 {
				report[k] = strings.ToValidUTF8(r[:200], "") + "..."
			}
		}
		return strings.Join(report, "\n")
	}
	return ""
}
