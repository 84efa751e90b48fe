package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A mutation is built from the module's own tree with its mutated files
// laid over it (go help build, -overlay): the go command reads each
// mutated file's contents from a file of the mutation's own, so the tree
// is never written to, and mutations built side by side never see each
// other's changes. The build cache keys packages by the contents it
// compiled, overlaid or not, so a mutated package is never taken for the
// original or for another mutation's.
//
// The overlay is what the go command builds, not what a test binary reads:
// a test that reads its package's sources at run time sees them unmutated.

// writeOverlay writes files (mutated contents, by path relative to root)
// under dir, with the overlay config that lays them over root's files, and
// returns the config's path.
func writeOverlay(dir, root string, files map[string][]byte) (string, error) {
	replace := map[string]string{}
	for f, data := range files {
		backing := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(backing), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(backing, data, 0o644); err != nil {
			return "", err
		}
		replace[filepath.Join(root, filepath.FromSlash(f))] = backing
	}
	data, err := json.Marshal(struct{ Replace map[string]string }{replace})
	if err != nil {
		return "", err
	}
	config := filepath.Join(dir, "overlay.json")
	return config, os.WriteFile(config, data, 0o644)
}

// overlayEnv is the environment that makes every go command of a test run
// build with the overlay at config. It goes in GOFLAGS rather than in go
// test's -overlay flag because tests run go commands of their own (the
// baton command's tests build the baton binary they start), and only the
// environment reaches those: with the flag alone, a mutation of the binary
// would go untested.
func overlayEnv(config string) ([]string, error) {
	if strings.ContainsAny(config, " \t\n") {
		return nil, fmt.Errorf("overlay %q: GOFLAGS cannot carry a path with a space; set TMPDIR to a directory without one", config)
	}
	flags := strings.TrimSpace(os.Getenv("GOFLAGS") + " -overlay=" + config)
	return []string{"GOFLAGS=" + flags}, nil
}
