package main

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
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

// TestPoolRunsUpToWorkersAtOnce: the pool keeps workers calls going at
// once and never more, and runs each index once, in order with one
// worker. The calls block until the test lets one end; synctest.Wait
// shows how many are running once nothing else can move.
func TestPoolRunsUpToWorkersAtOnce(t *testing.T) {
	for _, workers := range []int{1, 3, 10} {
		t.Run(strconv.Itoa(workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 7
				var running atomic.Int32
				end := make(chan struct{})
				var started []int // indices, in the order their calls started
				var mu sync.Mutex
				do := func(i int) int {
					running.Add(1)
					defer running.Add(-1)
					mu.Lock()
					started = append(started, i)
					mu.Unlock()
					<-end
					return i * i
				}
				results := map[int]int{}
				returned := make(chan struct{})
				go func() {
					pool(n, workers, do, func(i, r int) { results[i] = r })
					close(returned)
				}()
				for ended := range n {
					synctest.Wait()
					if got, want := running.Load(), int32(min(workers, n-ended)); got != want {
						t.Errorf("after %d calls ended: %d running, want %d", ended, got, want)
						break
					}
					end <- struct{}{}
				}
				close(end)
				<-returned
				for i := range n {
					if results[i] != i*i {
						t.Errorf("result %d: %d, want %d", i, results[i], i*i)
					}
				}
				if len(started) != n {
					t.Errorf("%d calls, want %d", len(started), n)
				}
				if workers == 1 && !slices.IsSorted(started) {
					t.Errorf("one worker ran %v, want the list's order", started)
				}
			})
		})
	}
}

// TestPoolHandsResultsOverOneAtATime: however many calls end at once,
// done runs for one result at a time, so that it may own what it writes
// (the report's rows and its output).
func TestPoolHandsResultsOverOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 5
		var inDone atomic.Int32
		next := make(chan struct{})
		got := map[int]bool{}
		returned := make(chan struct{})
		go func() {
			pool(n, n, func(i int) int { return i }, func(i, r int) {
				inDone.Add(1)
				defer inDone.Add(-1)
				<-next
				got[r] = true
			})
			close(returned)
		}()
		for range n {
			synctest.Wait()
			if k := inDone.Load(); k != 1 {
				t.Errorf("done runs %d times at once, want 1", k)
			}
			next <- struct{}{}
		}
		<-returned
		if len(got) != n {
			t.Errorf("done had %d results, want %d", len(got), n)
		}
	})
}

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
