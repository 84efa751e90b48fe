package manifest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestManifestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "convox.yml")
	if err := os.WriteFile(path, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new\n" {
		t.Fatalf("read %q, %v; want %q", got, err, "new\n")
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", info.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d entries, want only convox.yml: a temporary file was left", len(entries))
	}

	// Through a symbolic link, the target is replaced and the link stays.
	link := filepath.Join(dir, "link.yml")
	if err := os.Symlink("convox.yml", link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := WriteFile(link, []byte("newer\n")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.yml is no longer a link: %v %v", fi.Mode(), err)
	}
	if got, _ := os.ReadFile(path); string(got) != "newer\n" {
		t.Errorf("target holds %q, want %q", got, "newer\n")
	}

	if err := WriteFile(filepath.Join(dir, "missing.yml"), []byte("x")); err == nil {
		t.Error("WriteFile on a missing file succeeded; want an error")
	}
}
