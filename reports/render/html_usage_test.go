package render

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/reports"
)

// usageSpanReport is calls on days eleven months apart, by three models
// (one without a price), keyed by day, week or month as by says.
func usageSpanReport(by string, keys ...string) *reports.UsageReport {
	model := func(provider, name string, calls int64, cost *float64) reports.UsageRow {
		return reports.UsageRow{Provider: provider, Model: name, Calls: calls, CostUSD: cost}
	}
	var rows []reports.UsageRow
	for i, k := range keys {
		ms := []reports.UsageRow{model("anthropic", "claude-sonnet-4-20250514", int64(10*(i+1)), f64(float64(i+1)))}
		if i > 0 {
			ms = append(ms, model("openai", "gpt-5.3-codex", 5, f64(0.5)), model("openai", "gpt-5.6-luna", 1, nil))
		}
		r := reports.UsageRow{Key: k, Models: ms}
		for _, m := range ms {
			r.Calls += m.Calls
			if m.CostUSD != nil {
				r.CostUSD = f64(deref(r.CostUSD) + *m.CostUSD)
			} else {
				r.NoPriceCalls += m.Calls
			}
		}
		rows = append(rows, r)
	}
	total := reports.UsageRow{Key: "total", Models: []reports.UsageRow{
		model("anthropic", "claude-sonnet-4-20250514", 60, f64(6)), model("openai", "gpt-5.3-codex", 10, f64(1)), model("openai", "gpt-5.6-luna", 2, nil)}}
	return &reports.UsageReport{Database: "orchstat.duckdb",
		Usage: reports.Usage{By: by, Timezone: "UTC", Rows: rows, Total: total}}
}

// TestUsageHTMLCharts: a period view's page charts calls and cost per
// period by model on a time axis, whole labels, a data table each; a
// session view charts the cost of each session.
func TestUsageHTMLCharts(t *testing.T) {
	for _, c := range []struct {
		name string
		r    *reports.UsageReport
		want []string
	}{
		{"day", usageSpanReport("day", "2025-09-03", "2025-09-07", "2026-07-13"), []string{"Calls per day", "Cost per day (USD)"}},
		{"week", usageSpanReport("week", "2025-09-01", "2026-07-13", undatedKey), []string{"Calls per week", "Cost per week (USD)"}},
		{"month", usageSpanReport("month", "2025-09", "2025-12", "2026-07"), []string{"Calls per month", "Cost per month (USD)"}},
		{"session", usageSpanReport("session", "019c8a59", "7f3a"), []string{"Cost by session (USD)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := RenderUsage(&buf, c.r, FormatHTML, 0); err != nil {
				t.Fatal(err)
			}
			page := buf.String()
			svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1)
			if len(svgs) != len(c.want) {
				t.Fatalf("%d charts, want %d", len(svgs), len(c.want))
			}
			for i, title := range c.want {
				if !strings.Contains(svgs[i], `aria-label="`+title+`"`) {
					t.Errorf("chart %d is not %q: %.200s", i, title, svgs[i])
				}
				if strings.Contains(svgs[i], "…") {
					t.Errorf("chart %q cuts a label", title)
				}
			}
			if c.name != "session" {
				for _, m := range []string{"claude-sonnet-4-20250514", "gpt-5.3-codex", "gpt-5.6-luna"} {
					if !strings.Contains(svgs[0], m) {
						t.Errorf("the calls chart does not name %s", m)
					}
				}
				if !strings.Contains(page, `<th scope="col" class="n">gpt-5.3-codex</th>`) {
					t.Error("the data table has no column per model")
				}
			}
		})
	}
}
