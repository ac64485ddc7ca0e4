package render

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/reports"
)

// HTMLSummaryReport is htmlTestReport with a summary filled by hand:
// a week against the one before, one alert firing and one pending (its
// change within noise), three systems (one without cost, one whose change
// has a reason instead of a delta), days without data, and where. The
// browser test draws it too.
func HTMLSummaryReport() *reports.Report {
	r := htmlTestReport()
	p := func(v float64) *float64 { return &v }
	since := time.Date(2026, 1, 23, 0, 0, 0, 0, time.UTC)
	until := since.AddDate(0, 0, 7)
	prev := since.AddDate(0, 0, -7)
	var days []string
	for d := since; d.Before(until); d = d.AddDate(0, 0, 1) {
		days = append(days, d.Format(time.DateOnly))
	}
	daily := func(counts ...int64) []reports.DayPoint {
		var out []reports.DayPoint
		for i, c := range counts {
			out = append(out, reports.DayPoint{Day: days[i], Count: c, Failed: c / 5, Retried: c / 3})
		}
		return out
	}
	rise := &reports.Change{Previous: p(0.18), Delta: p(0.07), Low: p(0.02), High: p(0.12), Significant: true}
	noise := &reports.Change{Previous: p(0.09), Delta: p(0.01), Low: p(-0.03), High: p(0.05)}
	r.Summary = &reports.Summary{
		Window:   reports.Period{Since: &since, Until: until, Days: days},
		Previous: &reports.Period{Since: &prev, Until: since},
		Attention: reports.Attention{At: until, Rules: 13, Counts: map[string]int{"firing": 1, "pending": 1, "inactive": 11},
			Alerts: []reports.AttentionRow{
				{Rule: "provider_retry_rate_high", Severity: "warning", State: "firing", Metric: "provider_retry_rate",
					Value: p(0.25), Numerator: p(50), Denominator: p(200), Threshold: p(0.2), Condition: "value > threshold && denominator >= 20", Change: rise},
				{Rule: "call_failure_rate_high", Severity: "critical", State: "pending", Labels: map[string]string{"system": "claude-code"},
					Metric: "call_failure_rate", Value: p(0.1), Numerator: p(3), Denominator: p(30), Threshold: p(0.05), Condition: "value > threshold", Change: noise},
			}},
		Systems: []reports.SystemSummary{
			{System: "orchestrator", Unit: "runs",
				Count:       reports.Figure{Metric: "runs", Value: p(364), Change: &reports.Change{Previous: p(300), Delta: p(64), Significant: true}},
				FailureRate: reports.Figure{Metric: "run_failure_rate", Value: p(0.08), Numerator: p(29), Denominator: p(364), Change: noise},
				RetryRate:   reports.Figure{Metric: "provider_retry_rate", Value: p(0.25), Numerator: p(50), Denominator: p(200), Change: rise},
				Daily:       daily(50, 51, 52, 0, 70, 71, 70)},
			{System: "factory", Unit: "runs",
				Count:       reports.Figure{Metric: "record_runs", Value: p(12), Change: &reports.Change{Previous: p(12), Delta: p(0)}},
				FailureRate: reports.Figure{Metric: "record_failure_rate", Value: p(5.0 / 12), Numerator: p(5), Denominator: p(12), Change: &reports.Change{Reason: "too few runs before"}},
				RetryRate:   reports.Figure{Metric: "record_retry_rate", Value: p(5.0 / 12), Numerator: p(5), Denominator: p(12)},
				Daily:       daily(0, 0, 6, 0, 0, 6, 0)},
			{System: "claude-code", Unit: "calls",
				Count:       reports.Figure{Metric: "calls", Value: p(30), Change: &reports.Change{Previous: p(41), Delta: p(-11), Significant: true}},
				FailureRate: reports.Figure{Metric: "call_failure_rate", Value: p(0.1), Numerator: p(3), Denominator: p(30), Change: noise},
				RetryRate:   reports.Figure{Metric: "call_retry_rate", Value: p(1.0 / 3), Numerator: p(10), Denominator: p(30), Change: &reports.Change{Previous: p(0.5), Delta: p(-1.0 / 6), Low: p(-0.3), High: p(-0.02), Significant: true}},
				Cost:        reports.Figure{Metric: "call_cost_usd", Value: p(4.21), Change: &reports.Change{Previous: p(3.0), Delta: p(1.21), Significant: true}},
				Daily:       daily(4, 4, 4, 0, 0, 9, 9)},
		},
		Where: []reports.WhereRow{
			{What: "retries", Kind: "model", Key: "anthropic/claude-sonnet-4-5", System: "orchestrator", Unit: "retried requests", Value: 30, Total: 50, Share: 0.6},
			{What: "failures", Kind: "stage", Key: "verify_failed", System: "factory", Unit: "failed attempts", Value: 4, Total: 10, Share: 0.4},
			{What: "cost_usd", Kind: "session", Key: "019c8a59-e9dd-71f0-9ae3-4079fe9726a9", System: "claude-code", Unit: "USD", Value: 3.5, Total: 4.21, Share: 3.5 / 4.21},
		},
	}
	return r
}

// TestHTMLSummary: the page leads with the summary's tiles and a chart,
// the tables follow, and the store, time and filters are a footer. A
// change within noise is neither marked nor coloured; one without a delta
// says so.
func TestHTMLSummary(t *testing.T) {
	page := htmlRender(t, HTMLSummaryReport())
	renderGolden(t, "report-summary.html.golden", []byte(page))
	tiles := regexp.MustCompile(`data-tile="([a-z]+)"`).FindAllStringSubmatch(page, -1)
	var kinds []string
	for _, m := range tiles {
		kinds = append(kinds, m[1])
	}
	if got := strings.Join(kinds, " "); got != "attention system system system where" {
		t.Errorf("tiles %q, want the attention tile, a tile per system, where", got)
	}
	order := []string{`data-tile="attention"`, `class="lead"`, `<nav`, `<main>`, `<footer>`}
	last := -1
	for _, s := range order {
		i := strings.Index(page, s)
		if i < last {
			t.Errorf("%s comes before what it follows (want %q in order)", s, order)
		}
		last = i
	}
	footer := page[strings.Index(page, "<footer>"):]
	if !strings.Contains(footer, "orchstat.duckdb") {
		t.Error("the footer does not name the store")
	}
	for _, want := range []string{"FIRING", "PENDING", "provider_retry_rate_high", "25.0%", "&gt; 20%", "(50/200)",
		"{system=&#34;claude-code&#34;}", "no change shown", "too few runs before", "▲+7.0 pts", "▼-16.7 pts", "+$1.21"} {
		if !strings.Contains(page, want) {
			t.Errorf("the summary lacks %q", want)
		}
	}
	// Within noise: the interval's mark, no arrow, the noise class.
	for _, m := range regexp.MustCompile(`<span class="chg[^"]*" title="[^"]*includes zero[^"]*">([^<]*)</span>`).FindAllStringSubmatch(page, -1) {
		if strings.ContainsAny(m[1], "▲▼") || !strings.Contains(m[0], "chg noise") {
			t.Errorf("a change within noise reads as a rise or fall: %s", m[0])
		}
	}
	if strings.Contains(page, "<script") {
		t.Error("the page has a script")
	}
}

// TestHTMLSummaryQuiet: nothing firing or pending says so with the time
// and the note, and no summary leaves the page as before, the field table
// in the footer.
func TestHTMLSummaryQuiet(t *testing.T) {
	r := HTMLSummaryReport()
	r.Summary.Attention.Alerts = nil
	r.Summary.Attention.Note = "2 rules need a longer window"
	page := htmlRender(t, r)
	for _, want := range []string{"Nothing firing or pending", "2026-01-30 00:00 UTC", "2 rules need a longer window"} {
		if !strings.Contains(page, want) {
			t.Errorf("the attention tile lacks %q", want)
		}
	}
	r.Summary = nil
	page = htmlRender(t, r)
	if strings.Contains(page, "data-tile") || strings.Contains(page, `class="lead"`) {
		t.Error("a report without a summary has tiles")
	}
	if i := strings.Index(page, "<footer>"); i < 0 || !strings.Contains(page[i:], "orchstat.duckdb") {
		t.Error("a report without a summary has no footer naming the store")
	}

}
