package render

import (
	"errors"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/reports/render/chart"
)

// The report page's charts. Each is a figure with a caption and its data
// table; a chart with nothing to draw is a line saying so.

// dayCharts are the metrics charted by day, with their captions: those
// the catalog gives a chart.
var dayCharts = func() []struct{ metric, title string } {
	var out []struct{ metric, title string }
	for _, s := range reports.Catalog {
		if s.Chart != "" {
			out = append(out, struct{ metric, title string }{s.Name, s.Chart})
		}
	}
	return out
}()

// thresholdNote says what a day chart's threshold line and marks mean.
const thresholdNote = "Dashed: the alert threshold alone; triangles: days that cross it. " +
	"The rule's minimum-sample guard applies to the overall value, so a marked day need not alert."

// figure draws a chart into a figure captioned caption, or says there is
// nothing to draw.
func figure(caption string, c interface{ SVG() ([]byte, error) }, table *htmlTable) htmlFigure {
	f := htmlFigure{Caption: caption, Table: table}
	svg, err := c.SVG()
	switch {
	case errors.Is(err, chart.ErrNoData):
		f.Empty = "No value to chart."
	case err != nil:
		f.Empty = "The chart could not be drawn: " + err.Error()
	default:
		// The chart package writes well-formed SVG whose text it escapes.
		f.SVG = template.HTML(svg)
	}
	return f
}

// value is a metric's value for a chart: NaN when it has none.
func value(m reports.Metric) float64 {
	if m.Value == nil {
		return math.NaN()
	}
	return *m.Value
}

// dayFigures chart the day metrics, each with the alert thresholds of
// its rules whose condition compares the value itself (the section says
// what they mean: thresholdNote).
func dayFigures(r *reports.Report) []htmlFigure {
	days := r.Breakdowns.ByDay
	if len(days) == 0 {
		return nil
	}
	// Every day from the first to the last, so that days apart are drawn
	// apart: a day without runs is a gap in the line.
	all := everyDay(days)
	cats, xlabel := dayLabels(all)
	var figs []htmlFigure
	for _, dc := range dayCharts {
		line := chart.Line{Title: dc.title, Categories: cats, XLabel: xlabel, Percent: isRate(dc.metric),
			Series: []chart.Series{{Name: strings.ReplaceAll(dc.metric, "_", " ")}}}
		for _, d := range all {
			line.Series[0].Values = append(line.Series[0].Values, value(d.Metrics[dc.metric]))
		}
		for _, t := range r.Thresholds {
			if th, ok := chartThreshold(t); ok && t.Metric == dc.metric {
				line.Thresholds = append(line.Thresholds, th)
			}
		}
		figs = append(figs, figure(dc.title, line, dayChartTable(dc.metric, days, line.Thresholds)))
	}
	return figs
}

// maxFilledDays bounds the days a chart fills in between its first and
// last: past it (years of days), the chart draws the days with data only.
const maxFilledDays = 1500

// everyDay is days with the days between them that have none, as rows
// without metrics; days as they are when they are not all dates or span
// more than maxFilledDays.
func everyDay(days []reports.DayRow) []reports.DayRow {
	if len(days) == 0 {
		return days
	}
	first, err1 := time.Parse(time.DateOnly, days[0].Day)
	last, err2 := time.Parse(time.DateOnly, days[len(days)-1].Day)
	if err1 != nil || err2 != nil || last.Sub(first) > maxFilledDays*24*time.Hour || last.Before(first) {
		return days
	}
	by := map[string]reports.DayRow{}
	for _, d := range days {
		by[d.Day] = d
	}
	var out []reports.DayRow
	for t := first; !t.After(last); t = t.AddDate(0, 0, 1) {
		k := t.Format(time.DateOnly)
		d, ok := by[k]
		if !ok {
			d = reports.DayRow{Day: k}
		}
		out = append(out, d)
	}
	if len(out) < len(days) {
		return days // not in order: draw them as they are
	}
	return out
}

// dayLabels are the days as a chart shows them: month and day when all
// are of one year, named on the axis.
func dayLabels(days []reports.DayRow) ([]string, string) {
	cats := make([]string, len(days))
	year := ""
	for i, d := range days {
		cats[i] = d.Day
		if len(d.Day) != len("2006-01-02") || (year != "" && d.Day[:4] != year) {
			return cats, "day (UTC)"
		}
		year = d.Day[:4]
	}
	for i := range cats {
		cats[i] = cats[i][5:]
	}
	return cats, "day (UTC), " + year
}

// chartThreshold is a rule's threshold as a line on its metric's chart,
// when the rule compares the value with it.
func chartThreshold(t reports.Threshold) (chart.Threshold, bool) {
	short := ThresholdShort(t.Metric, t.Condition, t.Threshold)
	op, _, _ := strings.Cut(short, " ")
	if t.Condition != "" && !comparison.MatchString(t.Condition) || strings.HasPrefix(short, "numerator") || strings.HasPrefix(short, "denominator") {
		return chart.Threshold{}, false
	}
	if math.IsNaN(t.Threshold) || math.IsInf(t.Threshold, 0) {
		return chart.Threshold{}, false
	}
	return chart.Threshold{Label: short + " (" + t.Rule + ")", Value: t.Threshold, Below: op == "<" || op == "<="}, true
}

// dayChartTable is a day chart's data table.
func dayChartTable(metric string, days []reports.DayRow, ths []chart.Threshold) *htmlTable {
	t := &htmlTable{Head: []htmlHead{{Text: "day"}, {Text: "value", Numeric: true}, {Text: "numerator", Numeric: true}, {Text: "denominator", Numeric: true}}}
	if len(ths) > 0 {
		t.Head = append(t.Head, htmlHead{Text: "crosses a threshold"})
	}
	for _, d := range days {
		m := d.Metrics[metric]
		row := htmlRow{Cells: []htmlCell{{Text: escapeControls(d.Day)}, {Text: MetricText(metric, m.Value), Numeric: true},
			{Text: partText(m.Numerator), Numeric: true}, {Text: partText(m.Denominator), Numeric: true}}}
		if len(ths) > 0 {
			row.Cells = append(row.Cells, htmlCell{Text: crossedText(ths, m.Value)})
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// crossedText is "yes" when v crosses one of ths.
func crossedText(ths []chart.Threshold, v *float64) string {
	for _, t := range ths {
		if v != nil && t.Crossed(*v) {
			return "yes"
		}
	}
	return ""
}

// firstBars cuts a bar chart's categories to chart.MaxBars, with a note
// saying so.
func firstBars(n int) (int, string) {
	if n <= chart.MaxBars {
		return n, ""
	}
	return chart.MaxBars, fmt.Sprintf("The first %d of %d are drawn; the table has all.", chart.MaxBars, n)
}

// providerFigures chart requests, and retry and failure rates, by
// provider and model.
func providerFigures(ps []reports.ProviderRow) []htmlFigure {
	if len(ps) == 0 {
		return nil
	}
	n, note := firstBars(len(ps))
	reqs := chart.Bars{Title: "Provider requests by provider and model", Horizontal: true,
		Series: []chart.Series{{Name: "requests"}}}
	rates := chart.Bars{Title: "Retry and failure rates by provider and model", Horizontal: true, Percent: true,
		Series: []chart.Series{{Name: "retry rate"}, {Name: "failure rate"}}}
	rt := &htmlTable{Head: []htmlHead{{Text: "provider/model"}, {Text: "requests", Numeric: true},
		{Text: "retry_rate", Numeric: true}, {Text: "failure_rate", Numeric: true}}}
	for i, p := range ps {
		key := escapeControls(providerKey(p))
		rt.Rows = append(rt.Rows, htmlRow{Cells: []htmlCell{{Text: key}, {Text: itoa(p.Requests), Numeric: true},
			{Text: rateText(p.RetryRate), Numeric: true}, {Text: rateText(p.FailureRate), Numeric: true}}})
		if i >= n {
			continue
		}
		reqs.Categories = append(reqs.Categories, key)
		rates.Categories = append(rates.Categories, key)
		reqs.Series[0].Values = append(reqs.Series[0].Values, float64(p.Requests))
		rates.Series[0].Values = append(rates.Series[0].Values, value(p.RetryRate))
		rates.Series[1].Values = append(rates.Series[1].Values, value(p.FailureRate))
	}
	a, b := figure(reqs.Title, reqs, rt), figure(rates.Title, rates, rt)
	a.Note, b.Note = note, note
	return []htmlFigure{a, b}
}

// countFigures chart counts by reason.
func countFigures(title string, rows []reports.CountRow) []htmlFigure {
	if len(rows) == 0 {
		return nil
	}
	n, note := firstBars(len(rows))
	bars := chart.Bars{Title: title, Horizontal: true, Series: []chart.Series{{Name: "count"}}}
	for _, r := range rows[:n] {
		bars.Categories = append(bars.Categories, escapeControls(r.Key))
		bars.Series[0].Values = append(bars.Series[0].Values, float64(r.Count))
	}
	f := figure(title, bars, countTableHTML("reason", "count", rows))
	f.Note = note
	return []htmlFigure{f}
}

// countTableHTML is a table of counts by key.
func countTableHTML(key, what string, rows []reports.CountRow) *htmlTable {
	t := &htmlTable{Head: []htmlHead{{Text: key}, {Text: what, Numeric: true}, {Text: "runs", Numeric: true}}}
	for _, r := range rows {
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{{Text: escapeControls(r.Key)},
			{Text: itoa(r.Count), Numeric: true}, {Text: itoa(r.Runs), Numeric: true}}})
	}
	return t
}

// stageFigures chart the other systems' failed attempts by stage.
func stageFigures(rows []reports.StageFailureRow) []htmlFigure {
	if len(rows) == 0 {
		return nil
	}
	n, note := firstBars(len(rows))
	bars := chart.Bars{Title: "Failed attempts by system and stage", Horizontal: true, Series: []chart.Series{{Name: "failed attempts"}}}
	t := &htmlTable{Head: []htmlHead{{Text: "system/stage"}, {Text: "failures", Numeric: true}, {Text: "runs", Numeric: true}}}
	for i, r := range rows {
		key := escapeControls(joinKey(r.System, r.Stage))
		t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{{Text: key}, {Text: itoa(r.Failures), Numeric: true}, {Text: itoa(r.Runs), Numeric: true}}})
		if i < n {
			bars.Categories = append(bars.Categories, key)
			bars.Series[0].Values = append(bars.Series[0].Values, float64(r.Failures))
		}
	}
	f := figure(bars.Title, bars, t)
	f.Note = note
	return []htmlFigure{f}
}

// repairSection is the histogram of repair iterations per L2 loop, which
// the table format does not show: its chart and its table.
func repairSection(rows []reports.CountRow) htmlSection {
	s := htmlSection{ID: "repair_iterations", Title: "Repair iterations per loop"}
	t := countTableHTML("iterations", "loops", rows)
	if len(rows) == 0 {
		s.Blocks = []htmlBlock{{Table: t}}
		return s
	}
	cats, counts := histogram(rows)
	bars := chart.Bars{Title: "Repair iterations per loop", XLabel: "repair iterations",
		Categories: cats, Series: []chart.Series{{Name: "loops", Values: counts}}}
	var note string
	if len(cats) > chart.MaxBars {
		bars.Categories, bars.Series[0].Values = cats[:chart.MaxBars], counts[:chart.MaxBars]
		note = fmt.Sprintf("The first %d of %d counts are drawn; the table has all.", chart.MaxBars, len(cats))
	}
	f := figure(bars.Title, bars, t)
	f.Note = note
	s.Blocks = []htmlBlock{{Figures: []htmlFigure{f}}}
	return s
}

// histogram fills the gaps between the iteration counts rows name with
// zeros, so the bars keep their scale; keys that are not counts are
// kept as they are, after.
func histogram(rows []reports.CountRow) ([]string, []float64) {
	byN := map[int64]float64{}
	var other []reports.CountRow
	lo, hi := int64(math.MaxInt64), int64(-1)
	for _, r := range rows {
		n, err := strconv.ParseInt(r.Key, 10, 64)
		if err != nil || n < 0 {
			other = append(other, r)
			continue
		}
		byN[n] += float64(r.Count)
		lo, hi = min(lo, n), max(hi, n)
	}
	var cats []string
	var counts []float64
	dense := hi >= 0 && hi-lo < 2*chart.MaxBars
	for n := lo; dense && n <= hi; n++ {
		cats, counts = append(cats, strconv.FormatInt(n, 10)), append(counts, byN[n])
	}
	if hi >= 0 && !dense { // too sparse to fill: the counts seen
		for _, r := range rows {
			if _, err := strconv.ParseInt(r.Key, 10, 64); err == nil {
				cats, counts = append(cats, r.Key), append(counts, float64(r.Count))
			}
		}
	}
	for _, r := range other {
		cats, counts = append(cats, escapeControls(r.Key)), append(counts, float64(r.Count))
	}
	return cats, counts
}
