package render

import (
	"os"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/reports"
)

// TestDocsDocumentMetrics holds docs/metrics.md's tables to the catalog.
func TestDocsDocumentMetrics(t *testing.T) {
	old, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := FillMetricDoc(string(old))
	if err != nil {
		t.Fatal(err)
	}
	if doc != string(old) {
		t.Error("docs/metrics.md's tables differ from the metric catalog (model/reports/catalog.go): run go run ./cmd/orchstat gen-docs docs")
	}
}

func TestFillMetricDocRefusesAMissingFamily(t *testing.T) {
	doc := "<!-- metrics: trace -->\n<!-- /metrics -->\n<!-- metrics: call -->\n<!-- /metrics -->\n"
	if _, err := FillMetricDoc(doc); err == nil || !strings.Contains(err.Error(), "no table of record metrics") {
		t.Errorf("a page without the record table: err = %v", err)
	}
	doc += "<!-- metrics: record -->\n<!-- /metrics -->\n<!-- metrics: bogus -->\n<!-- /metrics -->\n"
	if _, err := FillMetricDoc(doc); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("a table of an undeclared family: err = %v", err)
	}
}

// TestEveryMetricIsDrawnInItsUnits is the render's part of the catalog
// loop: each kind of metric shows in its own units, so a metric declared
// with a kind cannot render as another.
func TestEveryMetricIsDrawnInItsUnits(t *testing.T) {
	half := 0.5
	for _, s := range reports.Catalog {
		got := MetricText(s.Name, &half)
		var want string
		switch s.Kind {
		case reports.Share:
			want = "50.0%"
		case reports.Average:
			want = "0.50"
		case reports.Count, reports.Sum, reports.Cost:
			want = countText(half)
		default:
			t.Errorf("%s: kind %v has no units", s.Name, s.Kind)
			continue
		}
		if got != want {
			t.Errorf("%s (%v) shows 0.5 as %q, want %q", s.Name, s.Kind, got, want)
		}
	}
}
