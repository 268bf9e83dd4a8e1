package kafkaapi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNoKeyOutsideTable checks that no non-test file of the package decides
// anything by API key outside the table of apis.go (issue 13): no switch on a
// request's key, no comparison of one, and no kmsg key constant (kmsg.Produce,
// ...). What a key needs, its file registers.
func TestNoKeyOutsideTable(t *testing.T) {
	keyNames := map[string]bool{}
	for k := int16(0); k < int16(len(apis)); k++ {
		if n := kmsg.NameForKey(k); n != "" {
			keyNames[n] = true
		}
	}
	isKey := func(e ast.Expr) bool {
		if c, ok := e.(*ast.CallExpr); ok {
			e = c.Fun
		}
		s, ok := e.(*ast.SelectorExpr)
		return ok && s.Sel.Name == "Key"
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SwitchStmt:
				if n.Tag != nil && isKey(n.Tag) {
					t.Errorf("%s: switch on an API key", fset.Position(n.Pos()))
				}
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isKey(n.X) || isKey(n.Y)) {
					t.Errorf("%s: comparison of an API key", fset.Position(n.Pos()))
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "kmsg" && keyNames[n.Sel.Name] {
					t.Errorf("%s: kmsg key constant kmsg.%s", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 50 {
		t.Fatalf("checked %d files, expected the key files and more", checked)
	}
}
