package election

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryExportedNameIsShown keeps the exported API to what an
// application needs and can find: every exported name of the package
// appears in the package documentation or in an example.
func TestEveryExportedNameIsShown(t *testing.T) {
	t.Parallel()
	var shown strings.Builder
	examples, err := filepath.Glob("example*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append([]string{"doc.go"}, examples...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		shown.Write(b)
	}
	fset := token.NewFileSet()
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range sources {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range exportedNames(f) {
			n++
			if !regexp.MustCompile(`\b` + name + `\b`).MatchString(shown.String()) {
				t.Errorf("%s (%s) is in neither the package doc nor an example", name, path)
			}
		}
	}
	if n == 0 {
		t.Fatal("found no exported names")
	}
}

// exportedNames are the exported top-level names f declares; methods are
// shown with their type.
func exportedNames(f *ast.File) []string {
	var names []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				names = append(names, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names = append(names, s.Name.Name)
				case *ast.ValueSpec:
					for _, id := range s.Names {
						names = append(names, id.Name)
					}
				}
			}
		}
	}
	var exported []string
	for _, n := range names {
		if ast.IsExported(n) {
			exported = append(exported, n)
		}
	}
	return exported
}
