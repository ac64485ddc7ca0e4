package render

import (
	"bytes"
	"html/template"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
)

// writeReportHTML writes r as one HTML page: the scope, the summary as
// tiles with the chart that matters most under them (the first screen),
// then the sections with data (or those o names) in the table format's
// order, each a table, with charts in the sections they illustrate (see
// reportHTMLSection), and a footer with what was left out, the store, the
// time and the filters.
func writeReportHTML(buf *bytes.Buffer, r *reports.Report, o Options) error {
	p := htmlPage{Title: "orchstat report"}
	lines := scopeLines(r)
	summary := r.Summary != nil && o.wants("summary")
	if summary {
		p.Summary = summaryHTML(r.Summary)
		if f := leadFigure(r, dayFigures(r)); f != nil {
			p.Lead = f
		}
		p.Footer = append(p.Footer, lines[1:]...)
		lines = lines[:1]
	}
	for _, l := range lines {
		p.Lines = append(p.Lines, escapeControls(l))
	}
	o.Width = 0
	shown, left := chooseSections(r, o)
	for _, s := range shown {
		if s.name == "stop_reasons" {
			// Repair loops: how many iterations, then how they stopped.
			p.Sections = append(p.Sections, repairSection(r.Breakdowns.RepairIterations))
		}
		p.Sections = append(p.Sections, reportHTMLSection(r, s))
	}
	if l := leftOutLine(left); l != "" {
		p.Footer = append(p.Footer, l)
	}
	p.Footer = append(p.Footer, footerLine(r))
	for i := range p.Footer {
		p.Footer[i] = escapeControls(p.Footer[i])
	}
	return writeHTMLPage(buf, p)
}

// reportHTMLSection is one section of the table format as a table, with
// the numbers contract's attributes on the sections that carry them and
// the charts of those that have some.
func reportHTMLSection(r *reports.Report, s section) htmlSection {
	b := r.Breakdowns
	out := htmlSection{ID: s.name, Title: escapeControls(s.grid.title), Sub: strings.HasPrefix(s.name, "factory_audit_")}
	t := gridTable(*s.grid)
	var figs []htmlFigure
	switch s.name {
	case "overview":
		markOverview(t, overviewFields(r))
	case "metrics":
		t = metricsTable(r)
	case "by_provider":
		markProviders(t, b.ByProvider)
		figs = providerFigures(b.ByProvider)
	case "by_day":
		markDays(t, s.grid, b.ByDay)
		figs = dayFigures(r)
	case "worst_runs_by_retries":
		linkTraces(t, b.WorstByRetries)
	case "worst_runs_by_iterations":
		linkTraces(t, b.WorstByIterations)
	case "stop_reasons":
		figs = countFigures("Stop reasons", b.StopReasons)
	case "escalation_reasons":
		figs = countFigures("Escalation reasons", b.EscalationReasons)
	case "failures_by_stage":
		figs = stageFigures(r.Systems.StageFailures)
	}
	if s.name == "by_day" && len(figs) > 0 && hasDayThreshold(r.Thresholds) {
		out.Blocks = append(out.Blocks, htmlBlock{Text: thresholdNote})
	}
	if len(figs) > 0 {
		out.Blocks = append(out.Blocks, htmlBlock{Figures: figs})
	}
	out.Blocks = append(out.Blocks, htmlBlock{Table: t})
	return out
}

// gridTable is a grid as an HTML table: the same cells as the table
// format, control characters escaped the same way.
func gridTable(g grid) *htmlTable {
	t := &htmlTable{}
	for j, c := range g.columns {
		t.Head = append(t.Head, htmlHead{Text: escapeControls(c), Numeric: g.numeric[j]})
	}
	for _, row := range g.rows {
		var r htmlRow
		for j, c := range row {
			r.Cells = append(r.Cells, htmlCell{Text: escapeControls(c), Numeric: g.numeric[j]})
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// metricData are the numbers contract's attributes of a metric.
func metricData(m reports.Metric) []dataAttr {
	return []dataAttr{
		{"value", exactPtr(m.Value)}, {"numerator", exactPtr(m.Numerator)}, {"denominator", exactPtr(m.Denominator)},
	}
}

// markOverview marks the overview's counts; its rows are fields'. The
// runs of each system ("runs.factory") are the JSON's runs_by_system
// list, not overview fields, and are left unmarked.
func markOverview(t *htmlTable, fields []field) {
	for _, f := range fields {
		n, ok := f.value.(int64)
		if !ok || strings.Contains(f.name, ".") {
			continue
		}
		// The rows are the fields the view keeps (see chooseSections).
		for i := range t.Rows {
			if t.Rows[i].Cells[0].Text == f.name {
				t.Rows[i].Cells[1].Data = []dataAttr{{"overview", f.name}, {"value", strconv.FormatInt(n, 10)}}
			}
		}
	}
}

// metricsTable is the metrics section's table with every metric the
// report carries, marked, and those only a threshold names, bare. The
// table format leaves out the other systems' and the calls' metrics when
// the scope has none, to fit a terminal; the page keeps them, so that it
// holds every number the JSON does.
func metricsTable(r *reports.Report) *htmlTable {
	names := metricNames(r.Metrics)
	for _, t := range r.Thresholds {
		names = append(names, t.Metric)
	}
	g := metricsSection(r, 0).grid
	g.rows = nil
	for _, n := range metricOrder(names) {
		m := r.Metrics[n]
		g.rows = append(g.rows, []string{n, MetricText(n, m.Value), partText(m.Numerator), partText(m.Denominator), thresholdsText(r.Thresholds, n, false)})
	}
	t := gridTable(*g)
	for i, row := range g.rows {
		if m, ok := r.Metrics[row[0]]; ok {
			t.Rows[i].Cells[1].Data = append([]dataAttr{{"metric", row[0]}}, metricData(m)...)
		}
		last := &t.Rows[i].Cells[len(t.Rows[i].Cells)-1]
		last.HTML, last.Title, t.Rows[i].Alert = thresholdsHTML(r.Thresholds, row[0])
	}
	return t
}

// alertMark is what a crossed threshold shows beside it: a word in a box
// with the triangle the charts mark crossing days with, not a colour
// alone. Its text reads "ALERT" to a screen reader and in a copied table.
const alertMark = `<strong class="alert-mark"><span aria-hidden="true">▲ </span>ALERT</strong>`

// thresholdsHTML is metric n's thresholds as the terminal shows them
// ("> 20%", not "value > 0.2 && denominator >= 20 (…)"), each crossed one
// marked, with the rules' whole conditions as the cell's title; alert
// says that one is crossed.
func thresholdsHTML(ts []reports.Threshold, n string) (cell template.HTML, title string, alert bool) {
	var parts, whole []string
	for _, t := range ts {
		if t.Metric != n {
			continue
		}
		part := template.HTMLEscapeString(escapeControls(ThresholdShort(t.Metric, t.Condition, t.Threshold)))
		if t.Crossed {
			part += " " + alertMark
			alert = true
		}
		parts = append(parts, part)
		whole = append(whole, escapeControls(thresholdText(t, false)))
	}
	return template.HTML(strings.Join(parts, "; ")), strings.Join(whole, "; "), alert
}

// markProviders marks each provider row and its two rates; the rows are
// ps's, in order, and the columns providerTable's.
func markProviders(t *htmlTable, ps []reports.ProviderRow) {
	for i, p := range ps {
		row := &t.Rows[i]
		var model string
		if p.Model != nil {
			model = *p.Model
		}
		row.Data = []dataAttr{{"provider", p.Provider}, {"model", model}, {"requests", strconv.FormatInt(p.Requests, 10)}}
		for j, h := range t.Head {
			switch h.Text {
			case "retry_rate":
				row.Cells[j].Data = append([]dataAttr{{"field", "retry_rate"}}, metricData(p.RetryRate)...)
			case "failure_rate":
				row.Cells[j].Data = append([]dataAttr{{"field", "failure_rate"}}, metricData(p.FailureRate)...)
			}
		}
	}
}

// markDays marks every metric of every day; the grid's columns after the
// day are metric names, its rows days', in order.
func markDays(t *htmlTable, g *grid, days []reports.DayRow) {
	for i, d := range days {
		for j, name := range g.columns[1:] {
			if m, ok := d.Metrics[name]; ok {
				t.Rows[i].Cells[j+1].Data = append([]dataAttr{{"day", d.Day}, {"metric", name}}, metricData(m)...)
			}
		}
	}
}

// linkTraces links each run id to its trace file, when the run has one
// named by an absolute path (a relative one depends on where the page
// is opened).
func linkTraces(t *htmlTable, runs []reports.RunRow) {
	for i, r := range runs {
		if u := traceURL(r.Trace); u != "" {
			t.Rows[i].Cells[0].Href = u
		}
	}
}

// traceURL is a file:// URL of an absolute path, its odd characters
// escaped by net/url; "" for any other path. html/template would refuse
// the file scheme from a string: the URL built here is safe to trust.
func traceURL(path string) template.URL {
	if path == "" || !filepath.IsAbs(path) {
		return ""
	}
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // C:/x on Windows
	}
	return template.URL((&url.URL{Scheme: "file", Path: p}).String())
}

// hasDayThreshold reports whether a day chart draws a threshold.
func hasDayThreshold(ts []reports.Threshold) bool {
	for _, t := range ts {
		for _, dc := range dayCharts {
			if _, ok := chartThreshold(t); ok && t.Metric == dc.metric {
				return true
			}
		}
	}
	return false
}
