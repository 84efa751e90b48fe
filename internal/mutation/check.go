package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// job is a mutation made ready to run: its overlay written and the
// environment that builds with it, or the error that keeps it from
// running.
type job struct {
	m   mutation
	env []string
	err error
}

// prepare applies m to root's files as they are now and writes its
// overlay under a directory of scratch of its own.
func prepare(root, scratch string, i int, m mutation, found map[string][]site) job {
	j := job{m: m}
	files, err := apply(root, m, found)
	if err != nil {
		j.err = err
		return j
	}
	// The directory is named for the mutation: a compile error names the
	// overlaid file by where its contents are.
	config, err := writeOverlay(filepath.Join(scratch, fmt.Sprintf("%02d-%s", i, m.Name)), root, files)
	if err == nil {
		j.env, err = overlayEnv(config)
	}
	j.err = err
	return j
}

// row is one line of the report.
type row struct {
	name    string
	tests   []string
	result  string
	caught  bool
	seconds float64
	detail  string // output worth reading: why it was caught, a survivor's, or an error's
}

// check runs the tests of a prepared mutation, one set after another,
// until a set fails: the mutation is caught by the first set that fails,
// and survives if every set passes.
func check(root string, j job, timeout time.Duration) (r row) {
	r.name = j.m.Name
	start := time.Now()
	defer func() { r.seconds = time.Since(start).Seconds() }()
	if j.err != nil {
		r.result, r.detail = "ERROR", j.err.Error()
		return r
	}
	r.result = "SURVIVED"
	for _, t := range j.m.Tests {
		r.tests = append(r.tests, t.String())
		res := goTest(root, t, timeout, j.env)
		switch res.outcome {
		case failedTest:
			r.result, r.caught = "caught by "+strings.Join(res.failing, ","), true
			r.detail = firstFailure(res.output, 4)
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

// printTable prints the rows in the order of the list, then the wall-clock
// time of the whole check, and returns how many mutations were not caught.
func printTable(out io.Writer, rows []row, wall time.Duration) (failed int) {
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "MUTATION\tTESTS\tRESULT\tSECONDS")
	for _, r := range rows {
		if !r.caught {
			failed++
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%.0f\n", r.name, strings.Join(r.tests, "; "), r.result, r.seconds)
	}
	fmt.Fprintf(w, "total (wall clock)\t\t%d of %d caught\t%.0f\n", len(rows)-failed, len(rows), wall.Seconds())
	w.Flush()
	return failed
}
