package reports

import (
	"reflect"
	"strings"
	"testing"
)

// TestCountersFromCatalog: every count of every metric has one counter,
// named uniquely, with _total left to the sample.
func TestCountersFromCatalog(t *testing.T) {
	cs, err := Counters()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range cs {
		if names[c.Name] || strings.HasSuffix(c.Name, "_total") {
			t.Errorf("counter %s: duplicate or ends in _total", c.Name)
		}
		names[c.Name] = true
	}
	for _, s := range Catalog {
		for _, count := range []string{s.Num, s.Den, s.Unpriced} {
			if _, ok := CounterOf(s.Family, count); count != "" && !ok {
				t.Errorf("%s: count %s has no counter", s.Name, count)
			}
		}
	}
	if c, _ := CounterOf(FamilyCall, "cost"); c.Name != "orchstat_call_cost_usd" || c.Unit != "usd" {
		t.Errorf("the calls' cost is %+v", c)
	}
}

func f(v float64) *float64 { return &v }

// TestFoldModels keeps the top models by the ranking count and adds the
// rest's counts, nil sums included, into model="other".
func TestFoldModels(t *testing.T) {
	g := func(model string, calls float64, tokens *float64) CounterGroup {
		return CounterGroup{Family: FamilyCall, Labels: map[string]string{"system": "s", "model": model},
			Counts: map[string]*float64{"calls": f(calls), "input_tokens": tokens}}
	}
	groups := []CounterGroup{g("a", 10, f(1)), g("b", 5, nil), g("c", 5, f(2)), g("d", 1, nil),
		{Family: FamilyRecord, Labels: map[string]string{"system": "x"}, Counts: map[string]*float64{"runs": f(3)}}}
	out, folded := FoldModels(groups, 2, ModelRank)
	want := []CounterGroup{g("a", 10, f(1)), g("b", 5, nil), g("other", 6, f(2)), groups[4]}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("folded groups\n %+v\nwant\n %+v", out, want)
	}
	if !reflect.DeepEqual(folded, []Folded{{Family: FamilyCall, Models: []string{"c", "d"}}}) {
		t.Errorf("folded %+v", folded)
	}
	if out, folded := FoldModels(groups, 0, ModelRank); len(out) != len(groups) || folded != nil {
		t.Errorf("top 0 folded %+v", folded)
	}
}
