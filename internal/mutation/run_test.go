package main

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// tinyModule is a module with two marked lines, tests that guard one of
// them, and a command whose test builds and starts the binary, as the
// baton command's tests do. Each test, when RENDEZVOUS is set, first meets
// the others at that address, so that it runs only once all of them run.
var tinyModule = map[string]string{
	"go.mod": "module tiny\n\ngo 1.22\n",
	"a/a.go": `package a

// Free reports whether no one holds n.
func Free(n int) bool {
	return n == 0 // mutation:free
}

// Double is 2n.
func Double(n int) int {
	return n * 2 // mutation:double
}
`,
	"a/a_test.go": `package a

import (
	"testing"

	"tiny/meet"
)

func TestFree(t *testing.T) {
	meet.Others(t)
	if !Free(0) || Free(1) {
		t.Fatal("Free is wrong")
	}
}

// TestDoubleOfZeroAndFree cannot tell n*2 from n*3, and fails if Free is wrong.
func TestDoubleOfZeroAndFree(t *testing.T) {
	meet.Others(t)
	if Double(0) != 0 || !Free(0) {
		t.Fatal("Double(0) or Free(0) is wrong")
	}
}
`,
	"cmd/tiny/main.go": `package main

import (
	"fmt"

	"tiny/a"
)

func main() { fmt.Println(a.Double(21), a.Free(0)) }
`,
	"cmd/tiny/main_test.go": `package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tiny/meet"
)

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tiny-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "tiny")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestBinary(t *testing.T) {
	meet.Others(t)
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "42 true" {
		t.Fatalf("the binary says %q, want \"42 true\"", got)
	}
}
`,
	"meet/meet.go": `// Package meet holds a test until the others that meet at RENDEZVOUS run.
package meet

import (
	"bufio"
	"net"
	"os"
	"testing"
	"time"
)

func Others(t *testing.T) {
	addr := os.Getenv("RENDEZVOUS")
	if addr == "" {
		return
	}
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := c.Write([]byte(t.Name() + "\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatal("the other tests did not come:", err)
	}
}
`,
}

var (
	freeInverted    = mutation{Name: "free-inverted", Edits: []edit{{Marker: "free", Old: "n == 0", New: "n != 0"}}, Tests: []tests{{Pkg: "a", Run: "^TestFree$"}}}
	doubleUnguarded = mutation{Name: "double-unguarded", Edits: []edit{{Marker: "double", Old: "n * 2", New: "n * 3"}}, Tests: []tests{{Pkg: "a", Run: "^TestDoubleOfZeroAndFree$"}}}
	doubleInBinary  = mutation{Name: "double-in-binary", Edits: []edit{{Marker: "double", Old: "n * 2", New: "n * 3"}},
		Tests: []tests{{Pkg: "a", Run: "^TestDoubleOfZeroAndFree$"}, {Pkg: "cmd/tiny", Run: "^TestBinary$"}}}
	brokenBuild = mutation{Name: "broken-build", Edits: []edit{{Marker: "free", Old: "n == 0", New: "n == undefinedName"}}, Tests: []tests{{Pkg: "a", Run: "^TestFree$"}}}
	noSuchTest  = mutation{Name: "no-such-test", Edits: []edit{{Marker: "double", Old: "n * 2", New: "n * 4"}}, Tests: []tests{{Pkg: "a", Run: "^TestNothing$"}}}
)

// rendezvous listens for tests and answers none until n have come, so
// that each of the first n proves the others run at the same time; it
// answers those that come later at once. It returns the address and a
// function that reports the names that came.
func rendezvous(t *testing.T, n int) (addr string, came func() []string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var mu sync.Mutex
	var names []string
	go func() {
		var waiting []net.Conn
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			name, _ := bufio.NewReader(c).ReadString('\n')
			mu.Lock()
			names = append(names, strings.TrimSpace(name))
			mu.Unlock()
			if waiting = append(waiting, c); len(names) < n {
				continue
			}
			for _, c := range waiting {
				c.Write([]byte("go\n"))
				c.Close()
			}
			waiting = nil
		}
	}()
	return l.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), names...)
	}
}

// resultOf is the RESULT column of a mutation's row in the table.
func resultOf(t *testing.T, out, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `  .*?  (caught by \S+|SURVIVED|ERROR.*?)  +\d+$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no row for %s in:\n%s", name, out)
	}
	return m[1]
}

func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for name := range tinyModule {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(data)
	}
	return files
}

// TestMutationsSideBySide: mutations of one file, checked at the same
// time from one tree, each see their own change and no other's: a caught
// one is caught, an unguarded one survives, one that does not compile and
// one whose tests match nothing are errors, and the check fails. The
// mutation of the command is caught by the binary its test builds. The
// tree is the same afterwards, and its tests, run unmutated after the
// mutated builds, pass.
func TestMutationsSideBySide(t *testing.T) {
	root := writeTree(t, tinyModule)
	before := snapshot(t, root)
	// The first tests of the three mutations whose tests run meet:
	// TestFree, and TestDoubleOfZeroAndFree twice; that of double-in-binary
	// passes, and its next set, TestBinary, comes later.
	addr, came := rendezvous(t, 3)
	t.Setenv("RENDEZVOUS", addr)
	muts := []mutation{freeInverted, doubleUnguarded, doubleInBinary, brokenBuild, noSuchTest}

	var out bytes.Buffer
	code := run(&out, root, muts, options{jobs: len(muts), timeout: 3 * time.Minute})
	t.Logf("check output:\n%s", out.String())
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for name, want := range map[string]string{
		freeInverted.Name:    "caught by TestFree",
		doubleUnguarded.Name: "SURVIVED",
		doubleInBinary.Name:  "caught by TestBinary",
		brokenBuild.Name:     "ERROR: " + string(buildFailed),
		noSuchTest.Name:      "ERROR: " + string(noTests),
	} {
		if got := resultOf(t, out.String(), name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if strings.Contains(out.String(), "did not come") {
		t.Error("the mutations' tests did not run side by side")
	}
	if got := came(); len(got) != 4 || got[3] != "TestBinary" {
		t.Errorf("tests that came: %q, want 3 at once, then TestBinary", got)
	}
	if !strings.Contains(out.String(), "3 of 5 mutations not caught") {
		t.Error("the check does not say how many mutations were not caught")
	}

	if after := snapshot(t, root); !equalMaps(before, after) {
		t.Errorf("the check changed the tree:\n%v\nwas:\n%v", after, before)
	}
	t.Setenv("RENDEZVOUS", "")
	plain := exec.Command("go", "test", "./...")
	plain.Dir = root
	if b, err := plain.CombinedOutput(); err != nil {
		t.Errorf("the unmutated module fails after the check (a mutated build taken from the cache?): %v\n%s", err, b)
	}
}

// TestAllCaughtPasses: the check passes when every mutation is caught,
// and its table ends with the wall-clock time.
func TestAllCaughtPasses(t *testing.T) {
	root := writeTree(t, tinyModule)
	muts := []mutation{freeInverted, doubleInBinary, {Name: "free-negative", Edits: []edit{{Marker: "free", Old: "n == 0", New: "n < 0"}},
		Tests: []tests{{Pkg: "a", Run: "^TestFree$"}}}}
	var out bytes.Buffer
	code := run(&out, root, muts, options{jobs: 2, timeout: 3 * time.Minute})
	t.Logf("check output:\n%s", out.String())
	if code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	if !regexp.MustCompile(`(?m)^total \(wall clock\) +3 of 3 caught +\d+$`).MatchString(out.String()) {
		t.Error("no total row with the wall-clock time")
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
