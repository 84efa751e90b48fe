package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const guarded = `package a

func ok(busy bool) bool {
	if busy { // mutation:busy
		return false
	}
	return true // mutation:result
}
`

// TestApplyChangesOnlyTheMarkedText: a mutation changes its text on the
// marked line and nothing else, whatever line the marker is on.
func TestApplyChangesOnlyTheMarkedText(t *testing.T) {
	root := writeTree(t, map[string]string{"a/a.go": guarded, "a/a_test.go": "package a // mutation:not-read\n"})
	found, err := findMarkers(root)
	if err != nil {
		t.Fatal(err)
	}
	m := mutation{Name: "never-busy", Edits: []edit{{Marker: "busy", Old: "busy {", New: "false {"}, {Marker: "result", Old: "true", New: "!false"}}}
	if err := checkMarkers([]mutation{m}, found); err != nil {
		t.Fatal(err)
	}
	out, err := apply(root, m, found)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(strings.Replace(guarded, "if busy {", "if false {", 1), "return true", "return !false", 1)
	if got := string(out["a/a.go"]); got != want {
		t.Errorf("mutated file:\n%s\nwant:\n%s", got, want)
	}
	if len(out) != 1 {
		t.Errorf("apply changed %d files, want 1", len(out))
	}
	// The original is untouched: apply only returns contents.
	if data, _ := os.ReadFile(filepath.Join(root, "a", "a.go")); string(data) != guarded {
		t.Error("apply wrote to the tree")
	}
}

// TestMarkerProblemsFailLoudly: a refactoring that drops, copies or
// rewrites a marked line makes the check fail with the marker's name,
// rather than let a mutation test nothing.
func TestMarkerProblemsFailLoudly(t *testing.T) {
	busy := mutation{Name: "never-busy", Edits: []edit{{Marker: "busy", Old: "busy {", New: "false {"}}}
	for _, tc := range []struct {
		name  string
		files map[string]string
		muts  []mutation
		want  string // in the error of checkMarkers, or of apply if checkMarkers passes
	}{
		{"missing", map[string]string{"a/a.go": "package a\n"}, []mutation{busy}, `marker "busy" is not in the code`},
		{"twice", map[string]string{"a/a.go": guarded, "b/b.go": "package b\n\nvar x = 1 // mutation:busy\n"}, []mutation{busy}, `marker "busy" is on 2 lines`},
		{"unused", map[string]string{"a/a.go": guarded}, []mutation{busy}, `marker "result" (a/a.go:7) is used by no mutation`},
		{"line rewritten", map[string]string{"a/a.go": strings.Replace(guarded, "if busy {", "if !idle {", 1)},
			[]mutation{busy, {Name: "r", Edits: []edit{{Marker: "result", Old: "true", New: "false"}}}}, `holds "busy {" 0 times`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			found, err := findMarkers(root)
			if err != nil {
				t.Fatal(err)
			}
			err = checkMarkers(tc.muts, found)
			if err == nil {
				_, err = apply(root, tc.muts[0], found)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestMutationsMatchTheCode: every mutation of the list finds its markers
// once in this module and its text on their lines, and names its tests.
func TestMutationsMatchTheCode(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	found, err := findMarkers(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkMarkers(allMutations(), found); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range allMutations() {
		if names[m.Name] {
			t.Errorf("two mutations named %q", m.Name)
		}
		names[m.Name] = true
		if len(m.Tests) == 0 {
			t.Errorf("mutation %s names no tests", m.Name)
		}
		if _, err := apply(root, m, found); err != nil {
			t.Error(err)
		}
	}
}

// TestShardTakesEveryNthMutation: the shards of a list are apart and
// together the whole list; a malformed spec is refused, named.
func TestShardTakesEveryNthMutation(t *testing.T) {
	var muts []mutation
	for i := range 7 {
		muts = append(muts, mutation{Name: fmt.Sprint("m", i)})
	}
	names := func(ms []mutation) (out []string) {
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return out
	}
	var all []string
	for k, want := range [][]string{{"m0", "m3", "m6"}, {"m1", "m4"}, {"m2", "m5"}} {
		got, err := shard(muts, fmt.Sprintf("%d/3", k))
		if err != nil || !slices.Equal(names(got), want) {
			t.Errorf("shard %d/3: %v (%v), want %v", k, names(got), err, want)
		}
		all = append(all, names(got)...)
	}
	if len(all) != len(muts) {
		t.Errorf("the shards hold %d mutations, want %d", len(all), len(muts))
	}
	if got, err := shard(muts, ""); err != nil || len(got) != len(muts) {
		t.Errorf("no shard: %d mutations (%v), want all %d", len(got), err, len(muts))
	}
	for _, bad := range []string{"3/3", "-1/3", "1/0", "1", "a/b", "1/3x"} {
		if _, err := shard(muts, bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("shard %q: %v, want an error naming it", bad, err)
		}
	}
}
