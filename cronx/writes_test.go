package cronx

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"
	"testing"
)

// namesKeys are the files of cronx that may name etcd keys, and why: all
// others, a new file too, build what they write to etcd, and the reads it
// is made against, in writes.go, where its cost is said.
var namesKeys = map[string]string{
	"writes.go":       "the scheduler's writes, and their cost",
	"scope.go":        "the scope holds the layout",
	"coordination.go": "New builds the layout",
	"cron_control.go": "a Cron's Control takes its layout",
	"control.go":      "the operator's reads and writes (Pause, Trigger, Status)",
	"backfill.go":     "a backfill's request, written by Control",
}

// TestTheSchedulersFilesNameNoKey: what the scheduler writes to etcd is
// built in writes.go, where its cost is said: no other file of cronx names
// a key of the layout, but those of namesKeys.
func TestTheSchedulersFilesNameNoKey(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		uses := keyUses(f)
		why, excepted := namesKeys[name]
		switch {
		case excepted && len(uses) == 0:
			t.Errorf("%s names no etcd key: take it out of namesKeys (%s)", name, why)
		case !excepted:
			checked++
			for _, n := range uses {
				t.Errorf("%s names etcd keys (%s); build the write in writes.go", fset.Position(n.Pos()), types.ExprString(n))
			}
		}
	}
	if checked < 40 {
		t.Errorf("%d files checked; the package's are not where the test looks", checked)
	}
}

// keyUses are the places where f names the layout: the scope's keys (as
// in co.keys.Last(job), rc.co.keys.History(job) or a struct's keys field),
// the layout's type, or jobkeys.Layout and jobkeys.New.
func keyUses(f *ast.File) []ast.Expr {
	var uses []ast.Expr
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); n.Sel.Name == "keys" || ok && x.Name == "jobkeys" && (n.Sel.Name == "Layout" || n.Sel.Name == "New") {
				uses = append(uses, n)
			}
		case *ast.Ident:
			if n.Name == "layout" {
				uses = append(uses, n)
			}
		}
		return true
	})
	return uses
}
