package etcdtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// The member runs the program in ./server, built once per machine for each
// version of its source and of the module's dependencies, and kept in the
// temporary directory: every test binary of a `go test ./...` shares one
// build.
var server struct {
	once sync.Once
	path string
	err  error
}

// serverBinary returns the path of the member's program, building it if no
// build of this source exists yet.
func serverBinary() (string, error) {
	server.once.Do(func() { server.path, server.err = buildServer() })
	return server.path, server.err
}

func buildServer() (string, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("etcdtest: cannot locate the etcdtest package's source")
	}
	pkg := filepath.Dir(self)
	root := filepath.Dir(filepath.Dir(pkg)) // internal/etcdtest is two levels down
	key, err := sourceKey(root, filepath.Join(pkg, "server"))
	if err != nil {
		return "", err
	}
	bin := filepath.Join(os.TempDir(), "baton-etcdtest-"+key)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// Built beside its final name and renamed: test binaries that build at
	// once never see half a file.
	tmp, err := os.CreateTemp(os.TempDir(), "baton-etcdtest-build-")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	// Without the race detector, whatever the test binary was built with:
	// etcd is the harness here, not the subject.
	build := exec.Command("go", "build", "-buildvcs=false", "-o", tmp.Name(), "./internal/etcdtest/server")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("etcdtest: build the etcd member: %v\n%s", err, out)
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", err
	}
	return bin, nil
}

// sourceKey names a build of the server: the toolchain, the module's
// requirements and the server's source.
func sourceKey(root, src string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	files := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")}
	more, err := filepath.Glob(filepath.Join(src, "*.go"))
	if err != nil {
		return "", err
	}
	for _, f := range append(files, more...) {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("etcdtest: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
