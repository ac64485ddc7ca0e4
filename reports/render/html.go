package render

// The HTML format: one self-contained HTML5 page per report (RenderReport
// with FormatHTML), per simulation (SimulationHTML) and per table
// (RenderTable). A page holds its CSS in one <style> element and its
// charts as inline SVG (see reports/render/chart); it has no script, no
// font, no image file and no link outside itself but file:// links to
// trace files, so it opens from disk with no network. It holds every
// table the table format prints, escaped by html/template, and prints on
// A4.
//
// The numbers contract. Tests and tools read the numbers back from a
// rendered page through data-* attributes on the element (a <td>) that
// shows them, never from the text, which is rounded for people. Numbers
// are exact: a float is written as strconv.FormatFloat(v, 'g', -1, 64)
// ("0.19937532535137948", "1921", "1e+21"; "NaN", "+Inf" and "-Inf" where
// JSON has null), an integer in decimal, and "" means no value (JSON's
// null). Each value has one such element, in its section's table: the
// charts' data tables repeat the numbers as text only.
//
// Report page (RenderReport with FormatHTML):
//   - data-overview="<JSON field of overview>" data-value: the overview's
//     counts (runs, success, failure, cancelled, unfinished,
//     other_status, events, quarantined, undated, queued_tasks).
//   - data-metric="<metric name>" data-value data-numerator
//     data-denominator, with no data-day: the overall metrics table, one
//     element per metric of Report.Metrics (a metric only a threshold
//     names has a row but no attributes). numerator and denominator are
//     "" for counts.
//   - data-day="YYYY-MM-DD" data-metric data-value data-numerator
//     data-denominator: a metric of Breakdowns.ByDay on one day, for each
//     metric that day carries and the by-day table shows.
//   - data-provider data-model data-requests on the <tr> of each
//     Breakdowns.ByProvider row (data-model="" for an unknown model,
//     JSON's null); in that row, data-field="retry_rate" and
//     data-field="failure_rate" with data-value data-numerator
//     data-denominator.
//
// Simulation page (SimulationHTML): data-policy="<Result.Policy>"
// data-metric="<JSON field of simulated.Result>" ("success_rate",
// "attempts", ..., "diagnoses") data-value data-low data-high, one
// element per policy and figure shown, the baseline included; NaN is
// written "NaN" (JSON's null).

import (
	"bytes"
	"html/template"
	"strconv"
)

// exactFloat is a float as the numbers contract writes it.
func exactFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// exactPtr is exactFloat, or "" for no value.
func exactPtr(v *float64) string {
	if v == nil {
		return ""
	}
	return exactFloat(*v)
}

// htmlPage is what the page template draws.
type htmlPage struct {
	Title    string
	Lines    []string // under the title: the scope
	Sections []htmlSection
	// Summary is the report's first screen, as tiles, and Lead the chart
	// under them; Footer the lines after every section.
	Summary template.HTML
	Lead    *htmlFigure
	Footer  []string
}

// htmlSection is a headed part of a page: figures, tables and lines in
// order.
type htmlSection struct {
	ID, Title string
	Sub       bool // a level-3 heading, under the previous section
	Blocks    []htmlBlock
}

// htmlBlock is one of a figure, a table or a line of text.
type htmlBlock struct {
	Figures []htmlFigure // drawn side by side when there is room
	Table   *htmlTable
	Text    string
}

// htmlFigure is a chart with its caption and data table; Empty, when
// set, replaces the chart with a line saying why there is none.
type htmlFigure struct {
	Caption, Note string
	SVG           template.HTML
	Empty         string
	Table         *htmlTable
}

// htmlTable is a table: a header row, then rows whose first cell heads
// the row.
type htmlTable struct {
	Caption string
	Head    []htmlHead
	Rows    []htmlRow
	None    string // shown instead of a table without rows
}

type htmlHead struct {
	Text    string
	Numeric bool
}

type htmlRow struct {
	Data  []dataAttr
	Cells []htmlCell
	// Alert marks a row whose value crosses an alert threshold.
	Alert bool
}

// htmlCell is a cell's text, and a link and data-* attributes when set.
// HTML is set instead of Text by RenderTable only (see htmlText).
type htmlCell struct {
	Text    string
	HTML    template.HTML
	Href    template.URL
	Numeric bool
	Data    []dataAttr
	// Title is said on hover: what the cell shortens (a rule's whole
	// condition).
	Title string
}

// dataAttr is one data-* attribute of the numbers contract; the page
// template writes only the names it lists, so that html/template knows
// every attribute's name and escapes its value.
type dataAttr struct{ Name, Value string }

// writeHTMLPage draws p.
func writeHTMLPage(buf *bytes.Buffer, p htmlPage) error {
	return pageTemplate.Execute(buf, p)
}

var pageTemplate = template.Must(template.New("page").Parse(pageHTML))
