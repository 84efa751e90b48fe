package testbin

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPruneRemovesOnlyBuildsUnusedForADay: the builds of old versions of
// the source go, and the builds in use, a build being written and other
// programs' files stay.
func TestPruneRemovesOnlyBuildsUnusedForADay(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	files := map[string]time.Time{
		buildPrefix + "0123456789abcdef0123": now.Add(-2 * unusedFor), // an old version's
		buildPrefix + "fedcba9876543210fedc": now.Add(-time.Hour),     // used an hour ago
		buildPrefix + "build-123456":         now.Add(-2 * unusedFor), // being written
		"someone-elses-file":                 now.Add(-2 * unusedFor),
	}
	for name, mtime := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	prune(dir, now.Add(-unusedFor))
	for name := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone, want := os.IsNotExist(err), name == buildPrefix+"0123456789abcdef0123"; gone != want {
			t.Errorf("%s: removed %v, want %v", name, gone, want)
		}
	}
}
