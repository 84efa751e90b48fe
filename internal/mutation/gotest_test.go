package main

import (
	"strings"
	"testing"
)

// TestFirstFailureShowsWhyItFailed: the report of a caught mutation ends
// with the failure, past what the test logged before it.
func TestFirstFailureShowsWhyItFailed(t *testing.T) {
	out := "=== RUN\n--- FAIL: TestA (1.00s)\n    a_test.go:1: log 1\n    a_test.go:2: log 2\n    a_test.go:3: log 3\n" +
		"    a_test.go:9: ran twice " + strings.Repeat("é", 150) + "\nFAIL\n--- FAIL: TestB (0.00s)\n    b_test.go:1: other\n"
	got := firstFailure(out, 3)
	want := "--- FAIL: TestA (1.00s)\n    a_test.go:3: log 3\n    a_test.go:9: ran twice " + strings.Repeat("é", 86) + "..."
	if got != want {
		t.Errorf("firstFailure:\n%s\nwant:\n%s", got, want)
	}
	if got := firstFailure("ok  \ttiny/a\t0.01s\n", 3); got != "" {
		t.Errorf("firstFailure of a pass: %q, want none", got)
	}
}
