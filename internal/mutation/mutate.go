package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// A mutation breaks one guarantee on purpose, in a build of its own (see
// overlay.go), and names the tests that must then fail.
type mutation struct {
	Name   string
	Breaks string // what a user would see go wrong
	Edits  []edit
	Tests  []tests
}

// An edit replaces Old with New on the one line that carries the marker
// comment "// mutation:<Marker>". Old must occur on that line exactly once.
type edit struct {
	Marker   string
	Old, New string
}

// tests is one `go test` run: a package and a -run pattern.
type tests struct {
	Pkg   string
	Run   string
	Short bool
}

func (t tests) String() string {
	s := "./" + t.Pkg + " -run '" + t.Run + "'"
	if t.Short {
		s += " -short"
	}
	return s
}

// markerRe finds a marker comment; a marker name is lower case words joined
// by hyphens.
var markerRe = regexp.MustCompile(`// mutation:([a-z0-9]+(?:-[a-z0-9]+)*)`)

// site is where a marker sits: a file relative to the module root, and a
// line number from 1.
type site struct {
	File string
	Line int
}

func (s site) String() string { return fmt.Sprintf("%s:%d", s.File, s.Line) }

// findMarkers reads every non-test Go file under root and returns where
// each marker sits. Nested modules, dot directories and testdata are not
// part of the module and are not read.
func findMarkers(root string) (map[string][]site, error) {
	found := map[string][]site{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(path, d) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			for _, m := range markerRe.FindAllStringSubmatch(sc.Text(), -1) {
				found[m[1]] = append(found[m[1]], site{File: filepath.ToSlash(rel), Line: n})
			}
		}
		return sc.Err()
	})
	return found, err
}

// skipDir reports whether a directory is outside the module: a nested
// module, a dot directory, testdata, or this tool's own package (whose
// sources name every marker in its list).
func skipDir(path string, d fs.DirEntry) bool {
	name := d.Name()
	if strings.HasPrefix(name, ".") || name == "testdata" {
		return true
	}
	if strings.HasSuffix(filepath.ToSlash(path), "/internal/mutation") {
		return true
	}
	return isModule(path)
}

// checkMarkers fails unless every marker the mutations use sits on exactly
// one line and every marker in the code is used by some mutation: a marker
// lost or copied in a refactoring must not let a mutation quietly test
// nothing.
func checkMarkers(muts []mutation, found map[string][]site) error {
	var problems []string
	used := map[string]bool{}
	for _, m := range muts {
		for _, e := range m.Edits {
			used[e.Marker] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(used)) {
		switch sites := found[name]; len(sites) {
		case 0:
			problems = append(problems, fmt.Sprintf("marker %q is not in the code: put \"// mutation:%s\" back on the line it guards", name, name))
		case 1:
		default:
			problems = append(problems, fmt.Sprintf("marker %q is on %d lines (%s): it must mark one", name, len(sites), joinSites(sites)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(found)) {
		if !used[name] {
			problems = append(problems, fmt.Sprintf("marker %q (%s) is used by no mutation", name, joinSites(found[name])))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("mutation markers:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// apply returns the files m changes, with their mutated contents, read
// from root. found must have passed checkMarkers.
func apply(root string, m mutation, found map[string][]site) (map[string][]byte, error) {
	files := map[string][]string{}
	for _, e := range m.Edits {
		s := found[e.Marker][0]
		lines, ok := files[s.File]
		if !ok {
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(s.File)))
			if err != nil {
				return nil, err
			}
			lines = strings.Split(string(data), "\n")
			files[s.File] = lines
		}
		line := lines[s.Line-1]
		if n := strings.Count(line, e.Old); n != 1 || e.Old == "" {
			return nil, fmt.Errorf("mutation %s: %s (marker %q) holds %q %d times, want once; the line is now %q",
				m.Name, s, e.Marker, e.Old, n, strings.TrimSpace(line))
		}
		lines[s.Line-1] = strings.Replace(line, e.Old, e.New, 1)
	}
	out := map[string][]byte{}
	for f, lines := range files {
		out[f] = []byte(strings.Join(lines, "\n"))
	}
	return out, nil
}

func joinSites(sites []site) string {
	var s []string
	for _, x := range sites {
		s = append(s, x.String())
	}
	return strings.Join(s, ", ")
}
