package render

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
)

// docs/metrics.md's tables of metrics are drawn from the catalog, so the
// contract users read cannot drift from what the store computes. Each
// stands between markers naming its family:
//
//	<!-- metrics: trace -->
//	| metric | kind | ...
//	<!-- /metrics -->

var metricTableBlock = regexp.MustCompile(`(?s)<!-- metrics: ([a-z]+) -->\n.*?<!-- /metrics -->`)

// MetricDocTable is the Markdown table of a family's metrics.
func MetricDocTable(f reports.Family) string {
	var b strings.Builder
	b.WriteString("| metric | kind | numerator (or value) | denominator |\n|---|---|---|---|\n")
	for _, s := range reports.FamilyOf(f) {
		name := "`" + s.Name + "`"
		if s.Own {
			name += " (orchstat's own)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, s.Kind, s.NumDoc, s.DenDoc)
	}
	return b.String()
}

// FillMetricDoc redraws every table of metrics in doc, a metrics page,
// from the catalog. It fails on a marker naming no family, and when a
// family of the catalog has no table: a metric must be documented.
func FillMetricDoc(doc string) (string, error) {
	var err error
	seen := map[reports.Family]bool{}
	out := metricTableBlock.ReplaceAllStringFunc(doc, func(block string) string {
		f := reports.Family(metricTableBlock.FindStringSubmatch(block)[1])
		if len(reports.FamilyOf(f)) == 0 && err == nil {
			err = fmt.Errorf("the metrics page has a table of %q metrics, a family the catalog does not declare", f)
		}
		seen[f] = true
		return "<!-- metrics: " + string(f) + " -->\n" + MetricDocTable(f) + "<!-- /metrics -->"
	})
	for _, s := range reports.Catalog {
		if !seen[s.Family] && err == nil {
			err = fmt.Errorf("the metrics page has no table of %s metrics (for %s): add <!-- metrics: %s --><!-- /metrics -->", s.Family, s.Name, s.Family)
		}
	}
	return out, err
}
