// Package testbin builds the module's programs for tests that run them as
// processes: the baton command, the etcd member of etcdtest. Each build is
// made once per machine for each version of the source it is made from, and
// kept in the temporary directory, so that every test binary of a
// `go test ./...` shares it rather than link its own; a new build removes
// the builds unused for a day.
//
// A build's name covers the toolchain, the module's requirements, the files
// of the source it is made from, its tags and race detector, and GOFLAGS
// with the content of an overlay it names: a test run with a file replaced
// (go test's -overlay, through GOFLAGS) gets a build of the replaced file.
package testbin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// Build is a program to build.
type Build struct {
	// Pkg is the package, as go build names it from the module's root
	// ("./convox/cmd/baton").
	Pkg string
	// Tags are build tags; Race builds with the race detector.
	Tags []string
	Race bool
	// Source lists the directories, relative to the module's root, whose
	// files the program is made of; empty is the whole module. A program
	// that imports nothing of the module names its own directory, so that
	// changes elsewhere do not rebuild it.
	Source []string
}

var builds sync.Map // name -> *build

type build struct {
	once sync.Once
	path string
	err  error
}

// Path returns the path of b's program, building it if no build of this
// version exists yet.
func Path(b Build) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	name, err := b.name(root)
	if err != nil {
		return "", err
	}
	v, _ := builds.LoadOrStore(name, &build{})
	bd := v.(*build)
	bd.once.Do(func() { bd.path, bd.err = b.make(root, name) })
	return bd.path, bd.err
}

// Root returns the module's root directory.
func Root() (string, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("testbin: cannot locate the module's source")
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(self))), nil // internal/testbin/testbin.go
}

func (b Build) make(root, name string) (string, error) {
	bin := filepath.Join(os.TempDir(), buildPrefix+name)
	if _, err := os.Stat(bin); err == nil {
		now := time.Now()
		os.Chtimes(bin, now, now) // in use: not pruned
		return bin, nil
	}
	// Built beside its final name and renamed, so that test binaries
	// building at once never see half a file.
	tmp, err := os.CreateTemp(os.TempDir(), buildPrefix+"build-")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := []string{"build", "-buildvcs=false", "-o", tmp.Name()}
	if b.Race {
		args = append(args, "-race")
	}
	if len(b.Tags) > 0 {
		args = append(args, "-tags", strings.Join(b.Tags, ","))
	}
	cmd := exec.Command("go", append(args, b.Pkg)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testbin: go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, out)
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", err
	}
	prune(os.TempDir(), time.Now().Add(-unusedFor))
	return bin, nil
}

// buildPrefix begins the name of every build in the temporary directory.
const buildPrefix = "baton-testbin-"

// unusedFor is how long a build goes unused before a new build removes
// it: each version of the source leaves one, tens of megabytes, and a day
// of changes makes dozens.
const unusedFor = 24 * time.Hour

// prune removes the builds in dir last used before cutoff; a build in use
// is touched each time a test asks for it. A process already running one
// keeps its file open.
func prune(dir string, cutoff time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), buildPrefix) || strings.HasPrefix(e.Name(), buildPrefix+"build-") {
			continue
		}
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && info.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// name is the build's name: a hash of everything the program is made of.
func (b Build) name(root string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), runtime.GOOS, runtime.GOARCH, b.Pkg, b.Race, b.Tags)
	goflags := os.Getenv("GOFLAGS")
	fmt.Fprintln(h, "GOFLAGS", goflags)
	for _, f := range strings.Fields(goflags) {
		if overlay, ok := strings.CutPrefix(f, "-overlay="); ok {
			if err := hashOverlay(h, overlay); err != nil {
				return "", err
			}
		}
	}
	files := []string{"go.mod", "go.sum"}
	dirs := b.Source
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	for _, d := range dirs {
		found, err := sourceFiles(root, d)
		if err != nil {
			return "", err
		}
		files = append(files, found...)
	}
	sort.Strings(files)
	for _, f := range files {
		if err := hashFile(h, root, f); err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:20], nil
}

// sourceFiles lists the files under dir that a build may read: every file
// but tests, below dot directories and nested modules.
func sourceFiles(root, dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && rel != dir && (strings.HasPrefix(d.Name(), ".") || exists(filepath.Join(path, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && !strings.HasSuffix(d.Name(), "_test.go") {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

func hashFile(h io.Writer, root, rel string) error {
	f, err := os.Open(filepath.Join(root, rel))
	if err != nil {
		return fmt.Errorf("testbin: %w", err)
	}
	defer f.Close()
	fmt.Fprintln(h, rel)
	_, err = io.Copy(h, f)
	return err
}

// hashOverlay hashes an overlay file (go help build) and the files it puts
// in place, whose content may change under one name.
func hashOverlay(h io.Writer, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("testbin: GOFLAGS's overlay: %w", err)
	}
	var overlay struct{ Replace map[string]string }
	if err := json.Unmarshal(data, &overlay); err != nil {
		return fmt.Errorf("testbin: GOFLAGS's overlay %s: %w", path, err)
	}
	names := make([]string, 0, len(overlay.Replace))
	for name := range overlay.Replace {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintln(h, "overlay", name)
		if with := overlay.Replace[name]; with != "" {
			if err := hashFile(h, "", with); err != nil {
				return err
			}
		}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
