package reports

import (
	"slices"
	"testing"
)

// Every FamilyTrace count the catalog names is declared as a fold of
// per-run counts, and every fold reads declared per-run counts: the store
// and other dialects' views render the metrics from these alone.
func TestGroupCountsCoverTheCatalog(t *testing.T) {
	var names []string
	for _, g := range GroupCounts {
		names = append(names, g.Name)
		for _, n := range g.Of {
			if _, ok := RunCountOf(n); !ok {
				t.Errorf("group count %s folds %s, which RunCounts does not declare", g.Name, n)
			}
		}
		if (g.Fold == SumRuns && len(g.Of) != 1) || (g.Fold == RunsWith && len(g.Of) == 0) || (g.Fold == AllRuns && len(g.Of) != 0) {
			t.Errorf("group count %s: fold %d of %v", g.Name, g.Fold, g.Of)
		}
	}
	for _, s := range FamilyOf(FamilyTrace) {
		for _, c := range []string{s.Num, s.Den} {
			if c != "" && !slices.Contains(names, c) {
				t.Errorf("metric %s counts %s, which GroupCounts does not declare", s.Name, c)
			}
		}
	}
	// A table's counts sit together, so each table is read once.
	seen := map[string]bool{}
	for i, c := range RunCounts {
		if seen[c.Table] && RunCounts[i-1].Table != c.Table {
			t.Errorf("RunCounts reads %s in two places", c.Table)
		}
		seen[c.Table] = true
	}
}

func TestDuckDBExpr(t *testing.T) {
	for _, tc := range []struct {
		name, want string
	}{
		{"requests_retried", "count(*) FILTER (WHERE retries > 0)"},
		{"request_retries", "coalesce(sum(retries), 0)"},
		{"repair_max_iteration", "max(iteration) FILTER (WHERE type = 'RepairAttempted' AND iteration IS NOT NULL)"},
		{"l3_steps", "(count(DISTINCT iteration + 0.0) + coalesce(max(CASE WHEN iteration IS NULL THEN 1 ELSE 0 END), 0))"},
		{"requests_failed", "count(*) FILTER (WHERE success = false)"},
	} {
		c, ok := RunCountOf(tc.name)
		if !ok {
			t.Fatalf("no run count %s", tc.name)
		}
		if got := c.DuckDBExpr(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
