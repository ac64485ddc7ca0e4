package query_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/reference"
)

// TestEveryMetricIsHandled loops over the metric catalog and fails when a
// declared metric lacks a stage: a query count it is made of, a check
// against numbers computed apart from its SQL. (The render's units and
// docs/metrics.md have their own loops in reports/render.)
func TestEveryMetricIsHandled(t *testing.T) {
	ctx := context.Background()
	st, err := query.Open(ctx, filepath.Join(t.TempDir(), "catalog.duckdb"), query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	traces, _ := filepath.Glob("../testdata/runs/*/trace.jsonl")
	ref, err := reference.Compute(traces, reference.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	tests := testFunctions(t)
	counts := map[reports.Family][]string{}
	used := map[reports.Family]map[string]bool{}
	seen := map[string]bool{}
	for _, s := range reports.Catalog {
		if seen[s.Name] {
			t.Errorf("%s is declared twice", s.Name)
		}
		seen[s.Name] = true
		if _, ok := counts[s.Family]; !ok {
			cols, err := query.CountsOf(ctx, st, s.Family)
			if err != nil {
				t.Errorf("%s: family %q: %v", s.Name, s.Family, err)
				continue
			}
			counts[s.Family], used[s.Family] = cols, map[string]bool{}
		}
		needs := map[string]string{"Num": s.Num}
		if s.Kind.Ratio() {
			needs["Den"] = s.Den
		}
		if s.Kind == reports.Cost {
			needs["Unpriced"] = s.Unpriced
		}
		for field, name := range needs {
			if !slices.Contains(counts[s.Family], name) {
				t.Errorf("%s: its %s %q is not a count the %s query computes (%v)", s.Name, field, name, s.Family, counts[s.Family])
			}
			used[s.Family][name] = true
		}
		if s.NumDoc == "" || s.Kind.Ratio() && s.DenDoc == "" {
			t.Errorf("%s: says in no words what it counts (NumDoc, DenDoc): docs/metrics.md would have a blank", s.Name)
		}
		switch s.Oracle {
		case "":
			t.Errorf("%s: nothing checks its SQL (Oracle)", s.Name)
		case "reference":
			if _, ok := ref.Metrics[s.Name]; !ok {
				t.Errorf("%s: its oracle is reports/reference, which does not compute it", s.Name)
			}
		default:
			if !tests[s.Oracle][s.Name] {
				t.Errorf("%s: its oracle is %s, which is no test in query naming %q", s.Name, s.Oracle, s.Name)
			}
		}
	}
	for family, cols := range counts {
		for _, c := range cols {
			if !used[family][c] {
				t.Errorf("the %s query computes %q, which no metric of the catalog is made of", family, c)
			}
		}
	}
}

// testFunctions maps each test function of this package to the string
// literals in its body.
func testFunctions(t *testing.T) map[string]map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil {
				continue
			}
			lits := map[string]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
					if s, err := strconv.Unquote(l.Value); err == nil {
						lits[s] = true
					}
				}
				return true
			})
			out[fn.Name.Name] = lits
		}
	}
	return out
}
