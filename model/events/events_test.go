package events

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// eventShaped is how an event type looks: two or more capitalised words.
var eventShaped = regexp.MustCompile(`^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$`)

// sqlEventLiteral is an event type quoted in SQL text.
var sqlEventLiteral = regexp.MustCompile(`'([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)'`)

// TestEventNamesKnown reads the module's Go source (tests, testdata and
// benchmarks aside: the trace generator writes the orchestrator's whole
// vocabulary, Subprocess* included, not only what orchstat reads) and checks that every event type it spells is one of
// events.go's constants: those quoted in SQL text, and those Go code compares with or
// switches on an event's type. A typo, or a new event used without being
// declared in events.go, fails here, naming the file and line.
func TestEventNamesKnown(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Skip("the module's source is not at ../..")
	}
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "testdata" || name == "benchmarks" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		check := func(lit *ast.BasicLit, name, how string) {
			checked++
			if !KnownEvent(name) {
				t.Errorf("%s: %s names event type %q, which model/events/events.go does not declare", fset.Position(lit.Pos()), how, name)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING || !strings.Contains(strings.ToUpper(n.Value), "SELECT") {
					break
				}
				for _, m := range sqlEventLiteral.FindAllStringSubmatch(n.Value, -1) {
					check(n, m[1], "SQL")
				}
			case *ast.SwitchStmt:
				if n.Tag == nil || !isEventType(n.Tag) {
					break
				}
				for _, c := range n.Body.List {
					for _, e := range c.(*ast.CaseClause).List {
						if s, lit, ok := stringLit(e); ok && eventShaped.MatchString(s) {
							check(lit, s, "a switch on an event's type")
						}
					}
				}
			case *ast.BinaryExpr:
				if n.Op != token.EQL && n.Op != token.NEQ {
					break
				}
				for _, pair := range [][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
					if s, lit, ok := stringLit(pair[1]); ok && isEventType(pair[0]) && eventShaped.MatchString(s) {
						check(lit, s, "a comparison with an event's type")
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Error("found no event type in the module's source: the walk is broken")
	}
	t.Logf("%d event type literals checked", checked)
}

// isEventType reports whether e reads an event's type: x.Type, a variable
// typ, e.typ, or typ.String (a sql.NullString).
func isEventType(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "typ"
	case *ast.SelectorExpr:
		if e.Sel.Name == "Type" || e.Sel.Name == "typ" {
			return true
		}
		return e.Sel.Name == "String" && isEventType(e.X)
	}
	return false
}

func stringLit(e ast.Expr) (string, *ast.BasicLit, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", nil, false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, lit, err == nil
}

// knownEvents are the values of events.go's constants: the event types
// orchstat knows, declared once, as constants.
var knownEvents = sync.OnceValue(func() map[string]bool {
	f, err := parser.ParseFile(token.NewFileSet(), "events.go", nil, 0)
	if err != nil {
		panic(err)
	}
	known := map[string]bool{}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, sp := range g.Specs {
				for _, v := range sp.(*ast.ValueSpec).Values {
					if s, _, ok := stringLit(v); ok {
						known[s] = true
					}
				}
			}
		}
	}
	return known
})

// KnownEvent reports whether typ is the value of one of events.go's
// constants.
func KnownEvent(typ string) bool { return knownEvents()[typ] }
