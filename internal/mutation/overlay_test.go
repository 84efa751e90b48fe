package main

import (
	"strings"
	"testing"
	"time"
)

// TestOverlayReplacesTestFiles: an overlay changes a test file as it
// changes the code, and the build cache keeps the overlaid test binary
// apart from the original's.
func TestOverlayReplacesTestFiles(t *testing.T) {
	root := writeTree(t, tinyModule)
	mutated := strings.Replace(tinyModule["a/a_test.go"], "!Free(0) || Free(1)", "Free(0)", 1)
	config, err := writeOverlay(t.TempDir(), root, map[string][]byte{"a/a_test.go": []byte(mutated)})
	if err != nil {
		t.Fatal(err)
	}
	env, err := overlayEnv(config)
	if err != nil {
		t.Fatal(err)
	}
	free := tests{Pkg: "a", Run: "^TestFree$"}
	for _, step := range []struct {
		env  []string
		want outcome
	}{{nil, passed}, {env, failedTest}, {nil, passed}} {
		if res := goTest(root, free, time.Minute, step.env); res.outcome != step.want {
			t.Fatalf("go test with env %q: %s, want %s\n%s", step.env, res.outcome, step.want, res.output)
		}
	}
}

// TestOverlayEnvKeepsGOFLAGS: the overlay is added to the flags the user
// set, and a path GOFLAGS cannot carry is refused by name.
func TestOverlayEnvKeepsGOFLAGS(t *testing.T) {
	t.Setenv("GOFLAGS", "-mod=mod")
	env, err := overlayEnv("/tmp/x/overlay.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := "GOFLAGS=-mod=mod -overlay=/tmp/x/overlay.json"; len(env) != 1 || env[0] != want {
		t.Errorf("env %q, want %q", env, want)
	}
	if _, err := overlayEnv("/tmp/a b/overlay.json"); err == nil || !strings.Contains(err.Error(), `"/tmp/a b/overlay.json"`) {
		t.Errorf("error %v, want one naming the path", err)
	}
}
