// Command mutation checks that baton's tests guard its guarantees. For each
// mutation in its list (mutations.go) it breaks one guarantee-critical line
// on purpose, in a scratch copy of the module, runs the tests named for it,
// and expects them to fail. It exits 1 if any mutation survives, if a
// mutation's code no longer compiles or its tests no longer exist, or if a
// marker is missing or duplicated; it prints a table of mutation, tests,
// outcome and seconds.
//
// A mutation is anchored on a marker comment, "// mutation:<name>", at the
// end of the line it changes, and on a piece of that line's text. Moving the
// line, or the function, keeps the mutation working; rewriting the line
// makes the check fail loudly, naming the marker, until the marker and the
// mutation agree again. Every marker in the code must be used by a mutation.
//
// The working tree is never modified. Run from anywhere in the module:
//
//	go run ./internal/mutation                          # every mutation, as CI does
//	go run ./internal/mutation -only forbid-leader-mode # some, by name
//	go run ./internal/mutation -list                    # the list, with each marker's place
//	go run ./internal/mutation -baseline                # first check the tests pass unmutated
//	go run ./internal/mutation -wide                    # every test of the packages, to see what else catches each
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	only := flag.String("only", "", "comma-separated mutation names to check (default: all)")
	list := flag.Bool("list", false, "list the mutations and where their markers are, and exit")
	baseline := flag.Bool("baseline", false, "first run each mutation's tests on the unmutated copy; they must pass")
	wide := flag.Bool("wide", false, "run every test (with -short) of the packages a mutation names, not just its tests")
	timeout := flag.Duration("timeout", 5*time.Minute, "timeout of each go test run")
	flag.Parse()
	os.Exit(run(os.Stdout, *only, *list, *baseline, *wide, *timeout))
}

func run(out io.Writer, only string, list, baseline, wide bool, timeout time.Duration) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(out, "mutation:", err)
		return 1
	}
	found, err := findMarkers(root)
	if err == nil {
		err = checkMarkers(mutations, found)
	}
	if err != nil {
		fmt.Fprintln(out, "mutation:", err)
		return 1
	}
	chosen, err := choose(mutations, only)
	if err != nil {
		fmt.Fprintln(out, "mutation:", err)
		return 1
	}
	if wide {
		chosen = widen(chosen)
	}
	if list {
		for _, m := range chosen {
			fmt.Fprintf(out, "%s: %s\n", m.Name, m.Breaks)
			for _, e := range m.Edits {
				fmt.Fprintf(out, "\t%s (%s): %q -> %q\n", found[e.Marker][0], e.Marker, e.Old, e.New)
			}
			for _, t := range m.Tests {
				fmt.Fprintf(out, "\tgo test %s\n", t)
			}
		}
		return 0
	}

	scratch, err := os.MkdirTemp("", "baton-mutation-")
	if err != nil {
		fmt.Fprintln(out, "mutation:", err)
		return 1
	}
	defer os.RemoveAll(scratch)
	if err := copyModule(root, scratch); err != nil {
		fmt.Fprintln(out, "mutation: copy the module:", err)
		return 1
	}
	fmt.Fprintf(out, "mutation: %d mutations, on a copy of %s in %s\n", len(chosen), root, scratch)

	if baseline {
		for _, m := range chosen {
			for _, t := range m.Tests {
				res := goTest(scratch, t, timeout)
				if res.outcome != passed {
					fmt.Fprintf(out, "mutation: unmutated, go test %s: %s\n%s\n", t, res.outcome, tail(res.output, 40))
					return 1
				}
				fmt.Fprintf(out, "baseline: go test %s passes (%.0fs)\n", t, res.seconds)
			}
		}
	}

	var rows []row
	for _, m := range chosen {
		r := check(scratch, m, found, timeout)
		rows = append(rows, r)
		fmt.Fprintf(out, "%s: %s (%.0fs)\n", r.name, r.result, r.seconds)
		if r.detail != "" {
			fmt.Fprintln(out, indent(r.detail))
		}
	}
	failed := printTable(out, rows)
	if failed > 0 {
		fmt.Fprintf(out, "mutation: %d of %d mutations not caught\n", failed, len(rows))
		return 1
	}
	fmt.Fprintf(out, "mutation: all %d mutations caught\n", len(rows))
	return 0
}

// widen makes each mutation run every test of its packages, in -short
// mode: to learn whether anything at all catches a mutation.
func widen(muts []mutation) []mutation {
	var out []mutation
	for _, m := range muts {
		var ts []tests
		for _, t := range m.Tests {
			if !slices.ContainsFunc(ts, func(x tests) bool { return x.Pkg == t.Pkg }) {
				ts = append(ts, tests{Pkg: t.Pkg, Run: ".", Short: true})
			}
		}
		m.Tests = ts
		out = append(out, m)
	}
	return out
}

// row is one line of the report.
type row struct {
	name    string
	tests   []string
	result  string
	caught  bool
	seconds float64
	detail  string // output worth reading: a survivor's, or an error's
}

// check applies m to the scratch copy, runs its tests until one set fails,
// and restores the copy.
func check(scratch string, m mutation, found map[string][]site, timeout time.Duration) (r row) {
	r.name = m.Name
	start := time.Now()
	defer func() { r.seconds = time.Since(start).Seconds() }()
	mutated, err := apply(scratch, m, found)
	if err != nil {
		r.result, r.detail = "ERROR", err.Error()
		return r
	}
	restore, err := writeFiles(scratch, mutated)
	defer restore()
	if err != nil {
		r.result, r.detail = "ERROR", err.Error()
		return r
	}
	r.result = "SURVIVED"
	for _, t := range m.Tests {
		r.tests = append(r.tests, t.String())
		res := goTest(scratch, t, timeout)
		switch res.outcome {
		case failedTest:
			r.result, r.caught = "caught by "+strings.Join(res.failing, ","), true
			return r
		case passed:
			r.detail = tail(res.output, 20)
		default:
			r.result, r.detail = "ERROR: "+string(res.outcome), tail(res.output, 40)
			return r
		}
	}
	return r
}

type outcome string

const (
	passed      outcome = "passed"
	failedTest  outcome = "a test failed"
	noTests     outcome = "the -run pattern matches no test"
	buildFailed outcome = "the mutated module does not build"
	goFailed    outcome = "go test failed without a failing test"
)

type testResult struct {
	outcome outcome
	failing []string // top-level tests that failed
	output  string
	seconds float64
}

var failRe = regexp.MustCompile(`(?m)^--- FAIL: (\S+)`)

// goTest runs one set of tests on the copy, one package at a time and
// stopping at the first failure, and classifies the result: only a test
// that ran and failed catches a mutation.
func goTest(dir string, t tests, timeout time.Duration) testResult {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	args := []string{"test", "-count=1", "-p=1", "-failfast", "-timeout=" + timeout.String(), "-run=" + t.Run}
	if t.Short {
		args = append(args, "-short")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./"+t.Pkg)...)
	cmd.Dir = dir
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	res := testResult{output: buf.String(), seconds: time.Since(start).Seconds()}
	for _, m := range failRe.FindAllStringSubmatch(res.output, -1) {
		res.failing = append(res.failing, m[1])
	}
	var exit *exec.ExitError
	switch {
	case err == nil && strings.Contains(res.output, "no tests to run"):
		res.outcome = noTests
	case err == nil:
		res.outcome = passed
	case !errors.As(err, &exit):
		res.outcome, res.output = goFailed, err.Error()+"\n"+res.output
	case strings.Contains(res.output, "[build failed]") || strings.Contains(res.output, "[setup failed]"):
		res.outcome = buildFailed
	case len(res.failing) > 0 || strings.Contains(res.output, "panic: test timed out"):
		res.outcome = failedTest
		if len(res.failing) == 0 {
			res.failing = []string{"timeout"}
		}
	default:
		res.outcome = goFailed
	}
	return res
}

// writeFiles writes the mutated files and returns a function that puts the
// originals back.
func writeFiles(root string, files map[string][]byte) (func(), error) {
	saved := map[string][]byte{}
	restore := func() {
		for f, data := range saved {
			os.WriteFile(filepath.Join(root, filepath.FromSlash(f)), data, 0o644)
		}
	}
	for f, data := range files {
		p := filepath.Join(root, filepath.FromSlash(f))
		old, err := os.ReadFile(p)
		if err != nil {
			return restore, err
		}
		saved[f] = old
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return restore, err
		}
	}
	return restore, nil
}

func printTable(out io.Writer, rows []row) (failed int) {
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "MUTATION\tTESTS\tRESULT\tSECONDS")
	total := 0.0
	for _, r := range rows {
		if !r.caught {
			failed++
		}
		total += r.seconds
		fmt.Fprintf(w, "%s\t%s\t%s\t%.0f\n", r.name, strings.Join(r.tests, "; "), r.result, r.seconds)
	}
	fmt.Fprintf(w, "total\t\t%d of %d caught\t%.0f\n", len(rows)-failed, len(rows), total)
	w.Flush()
	return failed
}

func choose(all []mutation, only string) ([]mutation, error) {
	if only == "" {
		return all, nil
	}
	var chosen []mutation
	for _, name := range strings.Split(only, ",") {
		i := slices.IndexFunc(all, func(m mutation) bool { return m.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("-only: no mutation named %q", name)
		}
		chosen = append(chosen, all[i])
	}
	return chosen, nil
}

// moduleRoot is the directory of the go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// copyModule copies the module's files, without nested modules or dot
// directories, from root to dst.
func copyModule(root, dst string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || isModule(path)) {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, info.Mode().Perm())
	})
}

func isModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "\t" + strings.ReplaceAll(s, "\n", "\n\t")
}
