// Command mutation checks that baton's tests guard its guarantees. For each
// mutation in its lists (mutations.go and beside it) it breaks one guarantee-critical line
// on purpose, runs the tests named for it, and expects them to fail. It
// exits 1 if any mutation survives, if a mutation's code no longer compiles
// or its tests no longer exist, or if a marker is missing or duplicated; it
// prints a table of mutation, tests, outcome and seconds, and the wall-clock
// time of the whole check.
//
// A mutation is anchored on a marker comment, "// mutation:<name>", at the
// end of the line it changes, and on a piece of that line's text. Moving the
// line, or the function, keeps the mutation working; rewriting the line
// makes the check fail loudly, naming the marker, until the marker and the
// mutation agree again. Every marker in the code must be used by a mutation.
//
// Mutations run side by side (-j), each built from the module's own tree
// with its mutated files laid over it by the go command's -overlay (see
// overlay.go), so the working tree is never modified and no mutation sees
// another's. Each runs only its own tests, stopping at the first that
// fails. Run from anywhere in the module:
//
//	go run ./internal/mutation                          # every mutation, as CI does
//	go run ./internal/mutation -only forbid-leader-mode # some, by name
//	go run ./internal/mutation -list                    # the list, with each marker's place
//	go run ./internal/mutation -baseline                # first check the tests pass unmutated
//	go run ./internal/mutation -wide                    # every test of the packages, to see what else catches each
//	go run ./internal/mutation -j 1                     # one mutation at a time
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.only, "only", "", "comma-separated mutation names to check (default: all)")
	flag.BoolVar(&o.list, "list", false, "list the mutations and where their markers are, and exit")
	flag.BoolVar(&o.baseline, "baseline", false, "first run each mutation's tests unmutated; they must pass")
	flag.BoolVar(&o.wide, "wide", false, "run every test (with -short) of the packages a mutation names, not just its tests")
	flag.IntVar(&o.jobs, "j", defaultJobs, "how many mutations to check at once")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "timeout of each go test run")
	flag.StringVar(&o.shard, "shard", "", "K/N: check only every Nth mutation from the Kth (0 ≤ K < N), in the order of the list")
	flag.Parse()
	root, err := moduleRoot()
	if err != nil {
		fmt.Println("mutation:", err)
		os.Exit(1)
	}
	os.Exit(run(os.Stdout, root, allMutations(), o))
}

// defaultJobs is how many mutations run at once unless -j says otherwise.
// A mutation's run is mostly waiting: its tests drive clusters on the wall
// clock, and only the compile and link of its test binary keep a core
// busy. On 2 cores the 17 mutations took 296 s one at a time, 153 s two
// at a time and 98 s three at a time; four took 100 s, no faster (the
// baton command's mutation, about 70 s alone, is the tail), with each
// mutation slower for the load (309 s of runs against 255 s). Three is
// where the check stops getting faster, and no more than that shares the
// machine with wall-clock tests.
const defaultJobs = 3

type options struct {
	only, shard          string
	list, baseline, wide bool
	jobs                 int
	timeout              time.Duration
}

// run checks the mutations all, chosen by o, on the module at root (an
// absolute path), printing to out, and returns the exit code.
func run(out io.Writer, root string, all []mutation, o options) int {
	if o.jobs < 1 {
		fmt.Fprintf(out, "mutation: -j %d: want at least 1\n", o.jobs)
		return 1
	}
	found, err := findMarkers(root)
	if err == nil {
		err = checkMarkers(all, found)
	}
	if err != nil {
		fmt.Fprintln(out, "mutation:", err)
		return 1
	}
	chosen, err := choose(all, o.only)
	if err != nil {
		fmt.Fprintln(out, "mutation:", err)
		return 1
	}
	if chosen, err = shard(chosen, o.shard); err != nil {
		fmt.Fprintln(out, "mutation:", err)
		return 1
	}
	if o.wide {
		chosen = widen(chosen)
	}
	if o.list {
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

	start := time.Now()
	scratch, err := os.MkdirTemp("", "baton-mutation-")
	if err != nil {
		fmt.Fprintln(out, "mutation:", err)
		return 1
	}
	defer os.RemoveAll(scratch)
	// Every mutation is applied before any runs, so that all of them start
	// from the tree as it was when the check began.
	jobs := make([]job, len(chosen))
	for i, m := range chosen {
		jobs[i] = prepare(root, scratch, i, m, found)
	}
	fmt.Fprintf(out, "mutation: %d mutations of %s, %d at a time, each in an overlay in %s\n", len(chosen), root, o.jobs, scratch)

	if o.baseline && !runBaseline(out, root, chosen, o) {
		return 1
	}

	rows := make([]row, len(jobs))
	pool(len(jobs), o.jobs, func(i int) row {
		return check(root, jobs[i], o.timeout)
	}, func(i int, r row) {
		rows[i] = r
		fmt.Fprintf(out, "%s: %s (%.0fs)\n", r.name, r.result, r.seconds)
		if r.detail != "" {
			fmt.Fprintln(out, indent(r.detail))
		}
	})
	wall := time.Since(start)
	failed := printTable(out, rows, wall)
	if failed > 0 {
		fmt.Fprintf(out, "mutation: %d of %d mutations not caught\n", failed, len(rows))
		return 1
	}
	fmt.Fprintf(out, "mutation: all %d mutations caught in %.0fs\n", len(rows), wall.Seconds())
	return 0
}

// runBaseline runs each distinct set of the mutations' tests on the
// unmutated module, o.jobs at a time, and reports whether all passed.
func runBaseline(out io.Writer, root string, muts []mutation, o options) bool {
	var sets []tests
	for _, m := range muts {
		for _, t := range m.Tests {
			if !slices.Contains(sets, t) {
				sets = append(sets, t)
			}
		}
	}
	ok := true
	pool(len(sets), o.jobs, func(i int) testResult {
		return goTest(root, sets[i], o.timeout, nil)
	}, func(i int, res testResult) {
		if res.outcome != passed {
			ok = false
			fmt.Fprintf(out, "mutation: unmutated, go test %s: %s\n%s\n", sets[i], res.outcome, tail(res.output, 40))
			return
		}
		fmt.Fprintf(out, "baseline: go test %s passes (%.0fs)\n", sets[i], res.seconds)
	})
	return ok
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

// shard returns every nth of muts from the kth, as spec "k/n" says; all of
// them for an empty spec. CI checks one shard per commit, chosen by the
// commit: consecutive commits check the others.
func shard(muts []mutation, spec string) ([]mutation, error) {
	if spec == "" {
		return muts, nil
	}
	var k, n int
	if _, err := fmt.Sscanf(spec, "%d/%d", &k, &n); err != nil || n < 1 || k < 0 || k >= n || fmt.Sprintf("%d/%d", k, n) != spec {
		return nil, fmt.Errorf("-shard %q: want K/N with 0 <= K < N", spec)
	}
	var out []mutation
	for i := k; i < len(muts); i += n {
		out = append(out, muts[i])
	}
	return out, nil
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
