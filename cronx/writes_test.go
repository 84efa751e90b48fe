package cronx

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"testing"
)

// TestTheSchedulersFilesNameNoKey: what the scheduler writes to etcd for a
// tick, a run's end and a term is built in writes.go, where its cost is
// said: the scheduler's own files name no key of the layout.
func TestTheSchedulersFilesNameNoKey(t *testing.T) {
	scheduler := []string{"cron.go", "loop.go", "run.go", "runs.go", "claim.go", "batch.go",
		"record.go", "outcome.go", "publish.go", "session.go", "leader.go"}
	fset := token.NewFileSet()
	for _, name := range scheduler {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			// The layout is the scope's keys, as in co.keys.Last(job),
			// rc.co.keys.History(job) or bufferTurn(co.keys, job).
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "keys" && scopeOf(sel.X) {
				t.Errorf("%s names etcd keys (%s.keys); build the write in writes.go", fset.Position(sel.Pos()), types.ExprString(sel.X))
			}
			return true
		})
	}
}

// scopeOf reports whether x names a scope: a coordinator (co) or the
// scope itself (sc), as the package calls them.
func scopeOf(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name == "co" || x.Name == "sc"
	case *ast.SelectorExpr:
		return x.Sel.Name == "co" || x.Sel.Name == "sc" || x.Sel.Name == "scope"
	}
	return false
}
