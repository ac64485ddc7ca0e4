package replay

import (
	"maps"
	"slices"
	"testing"

	"github.com/orchstat/orchstat/model/simulated"
)

// Every figure of the catalog has a total, and every total is a figure's:
// a figure added to model/simulated must say here how it is counted.
func TestEveryFigureHasATotal(t *testing.T) {
	for i, f := range catalog {
		if totals[i] == nil {
			t.Errorf("figure %q has no total in figureTotals", f.Key)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(figureTotals)) {
		if !slices.ContainsFunc(catalog, func(f simulated.Figure) bool { return f.Key == k }) {
			t.Errorf("figureTotals has %q, which is no figure of the catalog", k)
		}
	}
}
