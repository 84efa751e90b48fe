package cronx_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/batonhq/baton/internal/etcdtest"
)

// robfigModule is the release whose test suite cronx must pass.
const robfigModule = "github.com/robfig/cron/v3@v3.0.1"

// robfigPackageClause matches the package clause of robfig/cron's test files,
// which are internal tests of package cron.
var robfigPackageClause = regexp.MustCompile(`(?m)^package cron$`)

// TestRobfigParity runs robfig/cron v3.0.1's own test suite, from the module
// cache, against cronx: in a throwaway module it puts cronx's source files
// next to robfig's test files, renamed to package cronx, builds that test
// binary once and runs it. robfig's tests are internal tests: those that
// touch a Cron's unexported fields (c.location, c.parser) check cronx's, and
// those that reach robfig's own unexported names are left out, as
// robfigInternal lists.
//
// The suite sleeps on the wall clock, about 40 s one test after another; its
// tests run in shards side by side, alone and coordinated at once, each
// coordinated shard a scheduler of its own. -short skips it.
func TestRobfigParity(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs robfig/cron's wall-clock test suite (about 40 s)")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the parity test runs the go command: %v", err)
	}
	robfigDir := findRobfig(t, goTool)
	repo := filepath.Dir(goOutput(t, goTool, ".", "env", "GOMOD"))
	goVersion := goOutput(t, goTool, ".", "list", "-m", "-f", "{{.GoVersion}}")

	work := t.TempDir()
	copyCronxSource(t, work)
	copyRobfigTests(t, robfigDir, work)
	goMod := fmt.Sprintf(`module github.com/batonhq/baton/cronxparity

go %s

require github.com/batonhq/baton v0.0.0

replace github.com/batonhq/baton => %s
`, goVersion, repo)
	writeFile(t, filepath.Join(work, "go.mod"), []byte(goMod))
	// The repository's sums let the throwaway module resolve cronx's
	// dependencies from the module cache without asking the network.
	sums, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(work, "go.sum"), sums)
	bin := buildSuite(t, goTool, work)

	// Alone, cronx must be robfig/cron. Coordinated through etcd, a cluster
	// of one must behave the same: on time, same entries, same Stop.
	t.Run("alone", func(t *testing.T) {
		t.Parallel()
		robfigSuite{t: t, goTool: goTool, bin: bin}.check()
	})
	t.Run("coordinated", func(t *testing.T) {
		t.Parallel()
		space := etcdtest.Shared(t)
		robfigSuite{t: t, goTool: goTool, bin: bin, env: append(space.Env(), "BATON_TTL=2"), space: space}.check()
	})
}

// buildSuite compiles the throwaway module's tests, with -race if this test
// binary was built with it, so that robfig's suite runs under the race
// detector too.
func buildSuite(t *testing.T, goTool, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "cronxparity.test")
	args := []string{"test", "-c", "-o", bin}
	if raceEnabled() {
		args = append(args, "-race")
	}
	if out, err := goCommand(t, goTool, dir, args...).CombinedOutput(); err != nil {
		// A build error: a test that reaches one of robfig's unexported
		// names and is not in robfigInternal, or cronx lost a name.
		t.Fatalf("robfig/cron's tests do not compile against cronx (go test -c in %s): %v\n%s", dir, err, out)
	}
	return bin
}

// suiteShards is how many processes run robfig's suite side by side: its
// tests mostly sleep, so more shards than cores still shorten it.
const suiteShards = 4

// check runs the whole suite and fails the test unless every test passes,
// allowing the timing-sensitive ones a rerun.
func (suite robfigSuite) check() {
	t := suite.t
	started := time.Now()
	tests := suite.list()
	shards := make([][]string, suiteShards)
	for i, name := range tests {
		shards[i%suiteShards] = append(shards[i%suiteShards], name)
	}
	runs := make([]suiteRun, suiteShards)
	var wg sync.WaitGroup
	for i, shard := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = suite.run(i, "^("+strings.Join(shard, "|")+")$")
		}()
	}
	wg.Wait()
	first := mergeRuns(runs)
	var retried []string
	for _, name := range tests {
		if first.passed[name] {
			continue
		}
		reason, sensitive := timingSensitive[name]
		if !sensitive && suite.env != nil {
			reason, sensitive = coordinatedWindows, true
		}
		if !sensitive || !first.failed[name] {
			t.Fatalf("robfig/cron's %s does not pass against cronx (%s):\n%s", name, suite.bin, first.report(name))
		}
		t.Logf("%s failed; it is timing-sensitive (%s), so it runs again alone:\n%s", name, reason, first.report(name))
		if !suite.passesAlone(name) {
			t.Fatalf("robfig/cron's %s fails against cronx on every attempt", name)
		}
		retried = append(retried, name)
	}
	again := "none"
	if len(retried) > 0 {
		again = strings.Join(retried, ", ")
	}
	t.Logf("robfig/cron's %d tests pass against cronx in %v, in %d shards; run again: %s",
		len(tests), time.Since(started).Round(time.Second), suiteShards, again)
}

// timingSensitive lists the tests of robfig/cron that fail now and then
// against robfig/cron itself, with why. Each may run again, alone, when it
// fails; every other test must pass on the first run, unless coordinated
// (coordinatedWindows).
var timingSensitive = map[string]string{
	"TestChainDelayIfStillRunning": millisecondWindows,
	"TestChainSkipIfStillRunning":  millisecondWindows,
	"TestAddWhileRunningWithDelay": secondBoundary,
	"TestStopAndWait":              stopWithinAMillisecond,
}

const millisecondWindows = "its subtests give goroutines 2 to 5 ms to run, and one started 1 ms " +
	"after another must have finished within 3 ms, which a descheduled goroutine or a coarse " +
	"timer misses; robfig/cron itself fails them now and then, more often under -race"

const secondBoundary = "it adds a job due every second at a moment of no particular phase and wants " +
	"one run in the next 1.05 s: added within 50 ms of a second's end, the job is due twice in that " +
	"window, in robfig/cron itself as well"

const stopWithinAMillisecond = "its subtests want the context Stop returns done within 1 ms, and " +
	"robfig/cron cancels it from a goroutine of its own, which a loaded machine may not schedule in " +
	"that millisecond; robfig/cron itself fails it now and then under -race on a busy machine"

// coordinatedWindows is why, coordinated, any test may run again: most of
// robfig's tests wait a second plus 50 ms for a job due each second, and
// there a new Cron first wins its election and claims the tick in etcd, a
// few round trips that a loaded machine can hold up past the window. A
// difference from robfig/cron fails alone too.
const coordinatedWindows = "coordinated, a new Cron's first run waits for its election and its claim in etcd, " +
	"which a loaded machine can hold up past robfig's one-second windows"

// robfigSuite runs the test suite's binary.
type robfigSuite struct {
	t      *testing.T
	goTool string
	bin    string
	env    []string        // added to the environment of the binary
	space  *etcdtest.Space // coordinated: the etcd key space the shards share
}

// list returns the names of the suite's top-level tests and examples.
func (s robfigSuite) list() []string {
	s.t.Helper()
	out, err := exec.CommandContext(s.t.Context(), s.bin, "-test.list", ".").CombinedOutput()
	if err != nil {
		s.t.Fatalf("%s -test.list: %v\n%s", s.bin, err, out)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Test") || strings.HasPrefix(line, "Example") {
			names = append(names, line)
		}
	}
	if len(names) == 0 {
		s.t.Fatalf("%s -test.list found no tests:\n%s", s.bin, out)
	}
	return names
}

// passesAlone runs one test on its own, up to three times, and reports
// whether it passed.
func (s robfigSuite) passesAlone(name string) bool {
	for range 3 {
		r := s.run(suiteShards, "^"+name+"$")
		if r.passed[name] {
			return true
		}
		s.t.Logf("%s failed again:\n%s", name, r.report(name))
	}
	return false
}

// run runs the tests matching pattern as shard n: coordinated, each shard
// is a scheduler of its own, under a prefix of its own, as a separate
// cluster would be.
func (s robfigSuite) run(n int, pattern string) suiteRun {
	s.t.Helper()
	cmd := exec.CommandContext(s.t.Context(), s.goTool, "tool", "test2json", "-t", s.bin,
		"-test.v=test2json", "-test.count=1", "-test.timeout=5m", "-test.run", pattern)
	cmd.Dir = filepath.Dir(s.bin)
	cmd.Env = append(os.Environ(), s.env...)
	if s.space != nil {
		cmd.Env = append(cmd.Env, "BATON_PREFIX="+s.space.BatonPrefix(fmt.Sprintf("/shard%d", n)))
	}
	out, _ := cmd.CombinedOutput()
	// The exit status adds nothing: a test that neither passed nor
	// failed (a build error, a crash) is reported from the output.
	return parseSuiteRun(out)
}

// mergeRuns is the outcome of several runs of distinct tests.
func mergeRuns(runs []suiteRun) suiteRun {
	all := suiteRun{passed: map[string]bool{}, failed: map[string]bool{}, output: map[string]*strings.Builder{}}
	for _, r := range runs {
		maps.Copy(all.passed, r.passed)
		maps.Copy(all.failed, r.failed)
		for name, o := range r.output {
			if all.output[name] == nil {
				all.output[name] = &strings.Builder{}
			}
			all.output[name].WriteString(o.String())
		}
	}
	return all
}

// suiteRun is the outcome of one run of the suite's binary, as test2json
// reports it.
type suiteRun struct {
	passed, failed map[string]bool
	output         map[string]*strings.Builder // by top-level test; "" is the rest
}

func parseSuiteRun(out []byte) suiteRun {
	r := suiteRun{passed: map[string]bool{}, failed: map[string]bool{}, output: map[string]*strings.Builder{}}
	for _, line := range bytes.Split(out, []byte("\n")) {
		var ev struct{ Action, Test, Output string }
		if json.Unmarshal(line, &ev) != nil {
			ev = struct{ Action, Test, Output string }{Action: "output", Output: string(line) + "\n"}
		}
		top, _, _ := strings.Cut(ev.Test, "/")
		switch {
		case ev.Action == "output" || ev.Action == "build-output":
			if r.output[top] == nil {
				r.output[top] = &strings.Builder{}
			}
			r.output[top].WriteString(ev.Output)
		case ev.Action == "pass" && ev.Test == top:
			r.passed[top] = true
		case ev.Action == "fail" && ev.Test == top:
			r.failed[top] = true
		}
	}
	return r
}

// report returns what the run printed for test, and everything printed
// outside any test (build errors, a crash of the test binary).
func (r suiteRun) report(test string) string {
	var b strings.Builder
	if o := r.output[test]; o != nil && test != "" {
		b.WriteString(o.String())
	}
	if o := r.output[""]; o != nil {
		b.WriteString(o.String())
	}
	return b.String()
}

// findRobfig returns the directory of robfig/cron in the module cache,
// downloading the module if it is not there.
func findRobfig(t *testing.T, goTool string) string {
	t.Helper()
	cache := goOutput(t, goTool, ".", "env", "GOMODCACHE")
	dir := filepath.Join(cache, filepath.FromSlash(robfigModule))
	if _, err := os.Stat(filepath.Join(dir, "cron_test.go")); err == nil {
		return dir
	}
	// Outside this module, so that the download cannot touch go.mod or
	// go.sum.
	out := goOutput(t, goTool, t.TempDir(), "mod", "download", "-json", robfigModule)
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(out), &mod); err != nil {
		t.Fatalf("go mod download %s: %v\n%s", robfigModule, err, out)
	}
	if mod.Error != "" || mod.Dir == "" {
		t.Fatalf("go mod download %s: %s", robfigModule, out)
	}
	return mod.Dir
}

// copyCronxSource copies the package's non-test Go files, which are the
// whole of cronx, into dir.
func copyCronxSource(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, f), src)
	}
}

// robfigInternal lists the top-level declarations of robfig/cron's tests
// that are left out of the suite, with why. They reach robfig's unexported
// names (its parser's fields, bounds and bit sets, its Printf logger's
// type), which are robfig's own business now that cronx runs robfig's
// parser, schedules, chain and loggers rather than its own; robfig's suite
// checks them against robfig. Every other test runs. The parity test fails if
// a listed declaration is no longer in robfig's tests, or if what remains
// does not compile against cronx.
var robfigInternal = map[string]string{
	"TestRange":                  "getRange and bounds are robfig's parser internals",
	"TestField":                  "getField is robfig's parser internals",
	"TestAll":                    "all and bounds are robfig's parser internals",
	"TestBits":                   "getBits is robfig's parser internals",
	"TestParseSchedule":          "builds expected schedules from robfig's bit sets (every5min, annual)",
	"TestOptionalSecondSchedule": "builds expected schedules from robfig's bit sets (every5min)",
	"TestNormalizeFields":        "normalizeFields is robfig's parser internals",
	"TestNormalizeFields_Errors": "normalizeFields is robfig's parser internals",
	"TestStandardSpecSchedule":   "builds expected schedules from robfig's bit sets (every5min, annual)",
	"TestWithVerboseLogger":      "asserts on robfig's unexported printfLogger type",
	"every5min":                  "helper of the parser tests above, from robfig's bit sets",
	"every5min5s":                "helper of the parser tests above, from robfig's bit sets",
	"midnight":                   "helper of the parser tests above, from robfig's bit sets",
	"annual":                     "helper of the parser tests above, from robfig's bit sets",
}

// copyRobfigTests copies every test file of robfig/cron into dir as a test
// of package cronx, without the declarations robfigInternal lists.
func copyRobfigTests(t *testing.T, robfigDir, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(robfigDir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no test files in %s", robfigDir)
	}
	left := map[string]bool{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(robfigPackageClause.FindAllIndex(src, -1)); n != 1 {
			t.Fatalf("%s: found %d package clauses %q, want 1", f, n, robfigPackageClause)
		}
		src = robfigPackageClause.ReplaceAll(src, []byte("package cronx"))
		src = leaveOut(t, f, src, left)
		writeFile(t, filepath.Join(dir, "robfig_"+filepath.Base(f)), src)
	}
	for name := range robfigInternal {
		if !left[name] {
			t.Errorf("robfigInternal lists %s, which robfig/cron's tests no longer declare", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// leaveOut returns the test file src without the functions robfigInternal
// lists, and without the imports only they used; it records in left what it
// left out.
func leaveOut(t *testing.T, name string, src []byte, left map[string]bool) []byte {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	kept := file.Decls[:0]
	var cut [][2]token.Pos // the spans of what is left out, doc comments included
	for _, d := range file.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
			if _, listed := robfigInternal[fn.Name.Name]; listed {
				left[fn.Name.Name] = true
				start := fn.Pos()
				if fn.Doc != nil {
					start = fn.Doc.Pos()
				}
				cut = append(cut, [2]token.Pos{start, fn.End()})
				continue
			}
		}
		kept = append(kept, d)
	}
	file.Decls = kept
	// The comments of what is left out would otherwise be printed in the
	// middle of what follows.
	comments := file.Comments[:0]
	for _, cg := range file.Comments {
		inside := false
		for _, span := range cut {
			inside = inside || (cg.Pos() >= span[0] && cg.End() <= span[1])
		}
		if !inside {
			comments = append(comments, cg)
		}
	}
	file.Comments = comments
	dropUnusedImports(file)
	var out bytes.Buffer
	if err := format.Node(&out, fset, file); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// dropUnusedImports removes the imports that no selector in file names.
func dropUnusedImports(file *ast.File) {
	used := map[string]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	for _, d := range file.Decls {
		gen, ok := d.(*ast.GenDecl)
		if !ok || gen.Tok != token.IMPORT {
			continue
		}
		specs := gen.Specs[:0]
		for _, s := range gen.Specs {
			is := s.(*ast.ImportSpec)
			path, _ := strconv.Unquote(is.Path.Value)
			local := pathpkg.Base(path)
			if is.Name != nil {
				local = is.Name.Name
			}
			if used[local] || local == "_" || local == "." {
				specs = append(specs, s)
			}
		}
		gen.Specs = specs
	}
	file.Imports = nil
}

// raceEnabled reports whether this test binary was built with -race.
func raceEnabled() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// goCommand returns the go command run in dir, outside any workspace, free
// to complete the throwaway module's go.mod.
func goCommand(t *testing.T, goTool, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(t.Context(), goTool, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
	return cmd
}

func goOutput(t *testing.T, goTool, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), goTool, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
