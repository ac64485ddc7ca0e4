package yamlast

import (
	"fmt"
	"slices"
	"testing"

	"github.com/goccy/go-yaml/ast"
)

type testNode struct {
	A *Entry `yaml:"a"`
	B *Entry `yaml:"b"`
}

func TestFields(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		a, b      string   // the values read, "-" when absent
		reports   []string // line:col field: message
		order     []string // the keys InOrder runs, unknown ones included
	}{
		{"both", "b: 2\na: 1\n", "1", "2", nil, []string{"b", "a"}},
		{"unknown kept in order", "c: 3\na: 1\nd: 4\n", "1", "-", nil, []string{"c", "a", "d"}},
		{"merged keys last", "x: &x {b: 2}\nv: {<<: *x, a: 1}\n", "1", "2", nil, []string{"a", "b"}},
		{"not a mapping", "[1]\n", "-", "-", []string{"1:1 : not a mapping"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			var reports []string
			report := func(at ast.Node, field, msg string) {
				line, col := Pos(at)
				reports = append(reports, fmt.Sprintf("%d:%d %s: %s", line, col, field, msg))
			}
			body := f.Docs[0].Body
			rd := Reader{Anchors: Anchors(body)}
			if es, _ := rd.Mapping(body, "", "", func(ast.Node, string, string) {}); len(es) == 2 && es[1].Key == "v" {
				body = es[1].Raw // the mapping that merges
			}
			var n testNode
			unknown, _ := rd.Fields(body, "", "not a mapping", report, &n)
			if got := value(n.A) + value(n.B); got != tt.a+tt.b {
				t.Errorf("a, b = %s, want %s", got, tt.a+tt.b)
			}
			if !slices.Equal(reports, tt.reports) {
				t.Errorf("reports %q, want %q", reports, tt.reports)
			}
			var o InOrder
			var order []string
			keep := func(e Entry) { order = append(order, e.Key) }
			o.Add(n.B, keep) // added before a, run in the file's order
			o.Add(n.A, keep)
			o.Each(unknown, keep)
			o.Run()
			if !slices.Equal(order, tt.order) {
				t.Errorf("order %q, want %q", order, tt.order)
			}
		})
	}
	if got := Keys(&testNode{}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Keys = %q", got)
	}
}

func value(e *Entry) string {
	if e == nil {
		return "-"
	}
	s, _ := Scalar(e.Value)
	return s
}
