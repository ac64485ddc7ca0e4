package render

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/model/simulated"
)

// htmlTestReport is renderTestReport with what only the HTML page draws
// filled in: a week of days with every charted metric (one day over a
// threshold, one without a value), repair iterations with a gap, trace
// paths (one with characters a URL must escape), escalation reasons,
// other systems' records with failures by stage, agents' calls and the
// factory audit.
func htmlTestReport() *reports.Report {
	r := renderTestReport()
	b := &r.Breakdowns
	b.ByDay = nil
	for i, rate := range []float64{0.18, 0.22, 0.19, -1, 0.25, 0.2, 0.17} {
		m := reports.Metrics{"runs": renderCount(float64(50 + i)), "provider_requests": renderCount(200)}
		if rate >= 0 {
			m["provider_retry_rate"] = renderRatio(rate*200, 200)
			m["provider_failure_rate"] = renderRatio(float64(i), 200)
			m["l2_escalation_rate"] = renderRatio(float64(i%4), 6)
			m["avg_repair_iterations"] = renderRatio(float64(10+i), 6)
			m["l3_diagnosis_rate"] = renderRatio(0, float64(i%2))
		}
		b.ByDay = append(b.ByDay, reports.DayRow{Day: fmt.Sprintf("2026-01-%02d", 23+i), Metrics: m})
	}
	b.RepairIterations = []reports.CountRow{{Key: "1", Count: 21, Runs: 21}, {Key: "2", Count: 9, Runs: 9}, {Key: "4", Count: 3, Runs: 3}}
	b.WorstByRetries[0].Trace = "/var/lib/orchstat/traces/run 7f3a#1.jsonl"
	b.WorstByRetries[1].Trace = "relative/run-01bc.jsonl"
	b.WorstByIterations = []reports.RunRow{{RunID: "run-99aa", StartedAt: time.Date(2026, 1, 27, 8, 0, 0, 0, time.UTC), Status: "failure",
		ProviderRequests: 7, ProviderRetries: 1, RepairIterations: renderPtr(6.0), Escalated: true, StopReason: renderPtr("non_improving"),
		Trace: "/traces/run-99aa.jsonl"}}
	b.EscalationReasons = []reports.CountRow{{Key: "non_improving", Count: 9, Runs: 9}, {Key: "max_iterations", Count: 5, Runs: 5}}
	r.Metrics["record_runs"] = renderCount(12)
	r.Metrics["record_retry_rate"] = renderRatio(5, 12)
	r.Systems = reports.Systems{
		BySystem: []reports.SystemRow{{System: "factory", Runs: 12, Success: 7, Failure: 5, Attempts: 30, FailedAttempts: 18, RetriedRuns: 5,
			Metrics: reports.Metrics{"record_retry_rate": renderRatio(5, 12)}}},
		StageFailures: []reports.StageFailureRow{{System: "factory", Stage: "preflight", Failures: 6, Runs: 2}, {System: "factory", Stage: "verify_failed", Failures: 4, Runs: 3}},
		Stages:        []reports.StageRow{{System: "factory", Stage: "verify", Runs: 20, Failed: 4, FailureRate: renderRatio(4, 20), AvgDurationMS: renderPtr(5400.0)}},
	}
	r.Metrics["calls"] = renderCount(3)
	r.Calls = reports.Calls{BySystem: []reports.CallRow{{System: "claude-code", Calls: 3, Failed: 1, WithAttempts: 3, Attempts: 4, Retried: 1,
		Evidence: "http_spans 3", Metrics: reports.Metrics{"call_retry_rate": renderRatio(1, 3)}}}}
	r.FactoryAudit = sampleAudit()
	return r
}

// htmlTestSimulation is a baseline and two policies, one estimated, with
// L2 loops and cost.
func htmlTestSimulation() SimulationPage {
	m := func(v, lo, hi float64) simulated.Metric { return simulated.Metric{Value: v, Lo: lo, Hi: hi} }
	x := func(v float64) simulated.Metric { return simulated.Metric{Value: v, Lo: v, Hi: v, Exact: true} }
	base := simulated.Result{Policy: "record", Episodes: 1921, L2Loops: 40, HasCost: true,
		SuccessRate: x(0.991), Attempts: x(2433), Wasted: x(512), BackoffSeconds: x(812.5), ResolutionP50: x(1.2), ResolutionP95: x(9.8),
		Halts: x(0), CostUSD: x(41.2), L2SuccessRate: x(0.65), L2Iterations: x(97), Escalations: x(14), NonImproving: x(6),
		Reproduced: 1950, Checked: 1955, NotCheckable: 6,
		Mismatches: []simulated.Note{{ID: "run-7f3a/3", Reason: "replay succeeded on attempt 2 <b>, record on 3"}}}
	aws := simulated.Result{Policy: "aws-standard", Episodes: 1921, L2Loops: 40, HasCost: true,
		SuccessRate: m(0.993, 0.989, 0.996), Attempts: m(2390, 2301, 2478), Wasted: m(470, 401, 533), BackoffSeconds: m(640, 590, 702),
		ResolutionP50: x(1.2), ResolutionP95: m(8.1, 7.0, 9.9), Halts: x(0), CostUSD: m(40.3, 38.9, 41.7),
		L2SuccessRate: x(0.65), L2Iterations: x(97), Escalations: x(14), NonImproving: x(6),
		Diff: map[string]simulated.Metric{"success_rate": m(0.002, -0.001, 0.005), "attempts": m(-43, -120, 30)}}
	none := simulated.Result{Policy: "no-retry", Episodes: 1921, Estimated: 380, L2Loops: 40, L2Estimated: 12, HasCost: true,
		SuccessRate: m(0.8, 0.78, 0.82), Attempts: m(1921, 1921, 1921), Wasted: m(0, 0, 0), BackoffSeconds: x(0),
		ResolutionP50: m(0.9, 0.8, 1.0), ResolutionP95: m(4, 3.5, 4.4), Halts: x(0), CostUSD: m(33, 31, 35),
		L2SuccessRate: m(0.5, 0.4, 0.6), L2Iterations: m(80, 70, 90), Escalations: m(20, 16, 24), NonImproving: m(math.NaN(), math.NaN(), math.NaN()),
		Diff: map[string]simulated.Metric{"success_rate": m(-0.191, -0.21, -0.17)}}
	return SimulationPage{DB: "/var/lib/orchstat/orchstat.duckdb", Scope: reports.Scope{RunsInStore: 400},
		Baseline: base, Policies: []simulated.Result{aws, none},
		Verdicts: []string{simulated.Verdict(base, aws), simulated.Verdict(base, none)}}
}

func htmlRender(t *testing.T, r *reports.Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, r, FormatHTML); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func htmlSimulate(t *testing.T, p SimulationPage) string {
	t.Helper()
	var buf bytes.Buffer
	if err := SimulationHTML(&buf, p); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestHTMLGolden(t *testing.T) {
	page := htmlRender(t, htmlTestReport())
	renderGolden(t, "report-full.html.golden", []byte(page))
	if page != htmlRender(t, htmlTestReport()) {
		t.Error("two renders of one report differ")
	}
	sim := htmlSimulate(t, htmlTestSimulation())
	renderGolden(t, "simulate.html.golden", []byte(sim))
	if sim != htmlSimulate(t, htmlTestSimulation()) {
		t.Error("two renders of one simulation differ")
	}
}

// htmlElements are the page's elements that carry data-* attributes,
// each as its attributes by name (data- cut off, values unescaped).
func htmlElements(t *testing.T, page string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, tag := range htmlTag.FindAllString(page, -1) {
		attrs := map[string]string{}
		for _, m := range htmlDataAttr.FindAllStringSubmatch(tag, -1) {
			if _, dup := attrs[m[1]]; dup {
				t.Errorf("data-%s twice in %s", m[1], tag)
			}
			attrs[m[1]] = html.UnescapeString(m[2])
		}
		if len(attrs) > 0 {
			out = append(out, attrs)
		}
	}
	return out
}

var (
	htmlTag      = regexp.MustCompile(`<[a-z]+\b[^>]*>`)
	htmlDataAttr = regexp.MustCompile(`\bdata-([a-z]+)="([^"]*)"`)
)

func htmlExact(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

// TestHTMLNumbersContract reads every number back from the page's data-*
// attributes and compares it with the report: each overall metric, each
// day's metric and each provider row once, exactly.
func TestHTMLNumbersContract(t *testing.T) {
	r := htmlTestReport()
	els := htmlElements(t, htmlRender(t, r))
	overall, daily, providers, overview := map[string]map[string]string{}, map[string]map[string]string{}, 0, map[string]string{}
	for _, e := range els {
		switch {
		case e["overview"] != "":
			overview[e["overview"]] = e["value"]
		case e["day"] != "":
			key := e["day"] + "/" + e["metric"]
			if daily[key] != nil {
				t.Errorf("%s shown twice with attributes", key)
			}
			daily[key] = e
		case e["metric"] != "":
			if overall[e["metric"]] != nil {
				t.Errorf("metric %s shown twice with attributes", e["metric"])
			}
			overall[e["metric"]] = e
		case e["provider"] != "":
			p := r.Breakdowns.ByProvider[providers]
			if e["provider"] != p.Provider || e["model"] != stringOr(p.Model, "") || e["requests"] != itoa(p.Requests) {
				t.Errorf("provider row %d = %v, want %+v", providers, e, p)
			}
			providers++
		}
	}
	for name, m := range r.Metrics {
		e := overall[name]
		if e == nil {
			t.Errorf("metric %s has no element", name)
			continue
		}
		if e["value"] != htmlExact(m.Value) || e["numerator"] != htmlExact(m.Numerator) || e["denominator"] != htmlExact(m.Denominator) {
			t.Errorf("metric %s = %v, want %v/%v/%v", name, e, htmlExact(m.Value), htmlExact(m.Numerator), htmlExact(m.Denominator))
		}
	}
	if len(overall) != len(r.Metrics) {
		t.Errorf("%d metric elements, want %d", len(overall), len(r.Metrics))
	}
	if overall["provider_retry_rate"]["value"] != "0.1993753253513795" {
		t.Errorf("provider_retry_rate = %q, want the float in full", overall["provider_retry_rate"]["value"])
	}
	for _, d := range r.Breakdowns.ByDay {
		for name, m := range d.Metrics {
			e := daily[d.Day+"/"+name]
			if e == nil || e["value"] != htmlExact(m.Value) || e["denominator"] != htmlExact(m.Denominator) {
				t.Errorf("day %s %s = %v, want %v", d.Day, name, e, htmlExact(m.Value))
			}
		}
	}
	if providers != len(r.Breakdowns.ByProvider) {
		t.Errorf("%d provider rows, want %d", providers, len(r.Breakdowns.ByProvider))
	}
	// The overview's zero counts are left out of the view (the footer
	// names them), as the table format leaves them out.
	if overview["runs"] != "400" || overview["events"] != "48213" || overview["queued_tasks"] != "" || len(overview) != 8 {
		t.Errorf("overview = %v", overview)
	}
}

// TestHTMLMetricsTheTableLeavesOut checks that the page has the other
// systems' and calls' metrics even when the scope has none, which the
// table format leaves out to fit a terminal.
func TestHTMLMetricsTheTableLeavesOut(t *testing.T) {
	r := renderTestReport()
	r.Metrics["record_failure_rate"] = renderRatio(0, 0)
	r.Metrics["calls"] = renderCount(0)
	page := htmlRender(t, r)
	for _, want := range []string{
		`data-metric="record_failure_rate" data-value="" data-numerator="0" data-denominator="0"`,
		`data-metric="calls" data-value="0" data-numerator="" data-denominator=""`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}

func stringOr(s *string, or string) string {
	if s == nil {
		return or
	}
	return *s
}

// TestHTMLSimulationContract reads each policy's figures back.
func TestHTMLSimulationContract(t *testing.T) {
	p := htmlTestSimulation()
	els := htmlElements(t, htmlSimulate(t, p))
	got := map[string]map[string]string{}
	for _, e := range els {
		got[e["policy"]+"/"+e["metric"]] = e
	}
	figs := p.figures()
	if len(figs) != 12 { // 7 request figures, cost, 4 L2
		t.Errorf("%d figures, want 12", len(figs))
	}
	for _, r := range p.results() {
		for _, f := range figs {
			m := f.Of(r)
			e := got[r.Policy+"/"+f.Key]
			if e == nil || e["value"] != exactFloat(m.Value) || e["low"] != exactFloat(m.Lo) || e["high"] != exactFloat(m.Hi) {
				t.Errorf("%s %s = %v, want %v", r.Policy, f.Key, e, m)
			}
		}
	}
	if len(got) != 3*len(figs) {
		t.Errorf("%d elements, want %d", len(got), 3*len(figs))
	}
	if got["no-retry/l2_non_improving_stops"]["value"] != "NaN" {
		t.Errorf("NaN figure = %v", got["no-retry/l2_non_improving_stops"])
	}
}

// TestHTMLSelfContained checks that the pages need nothing outside
// themselves and run nothing.
func TestHTMLSelfContained(t *testing.T) {
	pages := map[string]string{
		"report":     htmlRender(t, htmlTestReport()),
		"empty":      htmlRender(t, &reports.Report{}),
		"simulation": htmlSimulate(t, htmlTestSimulation()),
	}
	for name, page := range pages {
		for _, u := range regexp.MustCompile(`[a-zA-Z+.-]+://`).FindAllString(page, -1) {
			if u != "file://" {
				t.Errorf("%s page refers to %s", name, u)
			}
		}
		for _, bad := range []string{"http:", "https:", "<script", "@import", "<link", "<img", "<iframe", " src=", "javascript:", "<object", "<embed"} {
			if strings.Contains(strings.ToLower(page), bad) {
				t.Errorf("%s page holds %q", name, bad)
			}
		}
		for _, u := range regexp.MustCompile(`url\(([^)]*)\)`).FindAllStringSubmatch(page, -1) {
			if !strings.HasPrefix(u[1], "#") {
				t.Errorf("%s page refers to %s", name, u[0])
			}
		}
		for _, want := range []string{"<!DOCTYPE html>\n<html lang=\"en\">", "@media print", "@page { size: A4; margin: 15mm; }", "<meta charset=\"utf-8\">"} {
			if !strings.Contains(page, want) {
				t.Errorf("%s page lacks %q", name, want)
			}
		}
	}
}

// TestHTMLFigures checks that each figure has a caption, a chart or a line
// saying why not, and its data table; and the charts the report must
// have.
func TestHTMLFigures(t *testing.T) {
	page := htmlRender(t, htmlTestReport())
	figures := regexp.MustCompile(`(?s)<figure>.*?</figure>`).FindAllString(page, -1)
	// 5 by day, 2 by provider, repair iterations, stop and escalation
	// reasons, failures by stage.
	if len(figures) != 11 {
		t.Errorf("%d figures, want 11", len(figures))
	}
	for _, f := range figures {
		if !strings.Contains(f, "<figcaption>") || !strings.Contains(f, "<table>") {
			t.Errorf("figure without caption or data table:\n%.300s", f)
		}
		if !strings.Contains(f, `<svg viewBox=`) || !strings.Contains(f, `role="img"`) || !strings.Contains(f, "<title>") {
			t.Errorf("figure without an accessible chart:\n%.300s", f)
		}
	}
	for _, want := range []string{
		`aria-label="Provider retry rate by day"`, `aria-label="L3 diagnosis rate by day"`,
		`aria-label="Repair iterations per loop"`, `aria-label="Failed attempts by system and stage"`,
		"&gt; 20% (provider_retry_rate_high)", "&gt; 30% (l2_escalation_high)", "crosses a threshold",
		"minimum-sample guard", // the day charts' note
		`<a href="file:///var/lib/orchstat/traces/run%207f3a%231.jsonl">run-7f3a</a>`,
		"<h2 id=\"factory_audit-h\">Factory retry audit</h2>", "<h3 id=\"factory_audit_stages-h\">Failures by stage</h3>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, "relative/run-01bc") {
		t.Error("a relative trace path is linked")
	}
}

// TestHTMLEveryTable checks that the page holds every table the table
// format prints, under its title.
func TestHTMLEveryTable(t *testing.T) {
	r := htmlTestReport()
	page := htmlRender(t, r)
	shown, _ := chooseSections(r, Options{})
	for _, g := range grids(shown) {
		if !strings.Contains(page, ">"+html.EscapeString(g.title)+"</h") {
			t.Errorf("no heading %q", g.title)
		}
		for _, row := range g.rows {
			for j, c := range row {
				if g.title == "Metrics" && g.columns[j] == "threshold" && c != "" {
					// The cell reads as at a terminal ("> 20%"); the whole
					// condition is its title.
					if !strings.Contains(page, ` title="`+html.EscapeString(c)+`"`) {
						t.Errorf("%s: no cell titled %q", g.title, c)
					}
					continue
				}
				if !strings.Contains(page, ">"+html.EscapeString(c)+"<") {
					t.Errorf("%s: no cell %q", g.title, c)
				}
			}
		}
	}
}

// TestHTMLHostile puts markup where the report holds text from traces:
// it must show as text, never as markup.
func TestHTMLHostile(t *testing.T) {
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`
	r := htmlTestReport()
	r.Database = evil
	r.Breakdowns.WorstByRetries[0].RunID = evil
	r.Breakdowns.WorstByRetries[0].Trace = "/tmp/" + evil
	r.Breakdowns.StopReasons[0].Key = evil
	r.Breakdowns.ByProvider[0].Provider = evil
	r.Breakdowns.ByDay[0].Day = evil
	r.Thresholds[0].Rule = evil
	r.Systems.StageFailures[0].Stage = evil
	r.FactoryAudit.RepeatedSignatures.Worst[0].RunID = evil
	page := htmlRender(t, r)
	p := htmlTestSimulation()
	p.Baseline.Policy, p.Verdicts[0], p.Baseline.Mismatches[0].ID = evil, evil, evil
	sim := htmlSimulate(t, p)
	for name, out := range map[string]string{"report": page, "simulation": sim} {
		for _, bad := range []string{"<script", "<img", "onerror=alert(2)>"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s page holds %s", name, bad)
			}
		}
		if !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s page does not show the text escaped", name)
		}
	}
	if !strings.Contains(page, `href="file:///tmp/%3Cscript%3Ealert%281%29%3C/script%3E%3Cimg%20src=x%20onerror=alert%282%29%3E%22%27&amp;"`) {
		t.Errorf("trace link not escaped:\n%s", regexp.MustCompile(`href="file:[^"]*"`).FindAllString(page, -1))
	}
}

// TestHTMLEmpty checks that a report with nothing in it says so rather
// than drawing empty charts.
func TestHTMLEmpty(t *testing.T) {
	page := htmlRender(t, &reports.Report{})
	if strings.Contains(page, "<figure>") || strings.Contains(page, "<svg") {
		t.Error("an empty report draws charts")
	}
	if n := strings.Count(page, `<p class="none">None.</p>`); n != 0 || !strings.Contains(page, "Left out, with no data in scope: sections: the orchestrator&#39;s breakdowns") {
		t.Errorf("%d sections say None., want none and the footer to name them", n)
	}

	// Days without a value for a metric say so in its figure.
	r := htmlTestReport()
	for _, d := range r.Breakdowns.ByDay {
		delete(d.Metrics, "l3_diagnosis_rate")
	}
	if !regexp.MustCompile(`<figcaption>L3 diagnosis rate by day</figcaption>\n<p class="none">No value to chart.</p>`).MatchString(htmlRender(t, r)) {
		t.Error("a metric with no value by day does not say so")
	}
}

// TestHTMLNonFinite checks that values a chart cannot draw leave the
// chart out of their point but keep the page.
func TestHTMLNonFinite(t *testing.T) {
	r := htmlTestReport()
	r.Breakdowns.ByDay[0].Metrics["provider_retry_rate"] = renderCount(math.Inf(1))
	r.Breakdowns.ByProvider[0].RetryRate.Value = renderPtr(math.NaN())
	r.Thresholds[0].Threshold = math.NaN()
	page := htmlRender(t, r)
	if strings.Contains(page, "could not be drawn") {
		t.Error("a non-finite value broke a chart")
	}
	if !strings.Contains(page, `data-day="2026-01-23" data-metric="provider_retry_rate" data-value="&#43;Inf"`) {
		t.Error("+Inf not in the numbers contract")
	}
}

func TestRenderTableHTML(t *testing.T) {
	tbl := reports.Table{Title: "Quarantine <1>", Columns: []string{"id", "raw"},
		Rows: [][]any{{1, `{"a":"<b>&"}`}, {2, nil}, {3, []any{"x"}}}}
	var buf bytes.Buffer
	if err := RenderTable(&buf, tbl, FormatHTML); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"<title>Quarantine &lt;1&gt;</title>",
		`<th scope="row" class="n">1</th><td>{"a":"&lt;b&gt;&amp;"}</td>`,
		`<th scope="row" class="n">2</th><td>-</td>`,
		`<td>["x"]</td>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table page lacks %s:\n%s", want, out)
		}
	}
	buf.Reset()
	if err := RenderTable(&buf, reports.Table{Columns: []string{"a"}}, FormatHTML); err != nil || !strings.Contains(buf.String(), "(none)") {
		t.Errorf("empty table page: %v\n%s", err, buf.String())
	}
}
