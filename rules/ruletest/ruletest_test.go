package ruletest

import (
	"strings"
	"testing"

	"github.com/orchstat/orchstat/rules/alerting"
)

// A rule test evaluates only the rules its evaluations name, unless one
// names none; what it asserts is the same either way.
func TestTestedRules(t *testing.T) {
	t.Parallel()
	rf := &alerting.File{Path: "x.yaml", Rules: []*alerting.Rule{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	names := func(f *alerting.File) string {
		var out []string
		for _, r := range f.Rules {
			out = append(out, r.Name)
		}
		return strings.Join(out, ",")
	}
	for _, tt := range []struct {
		evals []Eval
		want  string
	}{
		{[]Eval{{Rules: []string{"c"}}, {Rules: []string{"a"}}}, "a,c"},
		{[]Eval{{Rules: []string{"b"}}, {}}, "a,b,c"},
		{nil, ""},
	} {
		if got := names(testedRules(rf, tt.evals)); got != tt.want {
			t.Errorf("%+v: %s, want %s", tt.evals, got, tt.want)
		}
	}
	if len(rf.Rules) != 3 {
		t.Errorf("the rule file itself changed: %s", names(rf))
	}
}
