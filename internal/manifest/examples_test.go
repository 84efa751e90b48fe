package manifest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestManifestExamples checks every convox.yml the repository ships: Check
// finds nothing wrong, and Init has nothing to add.
func TestManifestExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/*/convox.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no examples/*/convox.yml found")
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			d := mustParse(t, string(src))
			for _, p := range Check(d) {
				t.Errorf("%s:%d: %s", f, p.Line, p.Message)
			}
			changes, err := Init(d, Options{})
			if err != nil || len(changes) > 0 {
				t.Errorf("Init on %s: changes %q, error %v; the example is not set up", f, changes, err)
			}
		})
	}
}
