package render

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/reports/render/chart"
)

// The page's first screen: the summary as tiles (what needs attention, a
// tile per system with its sparkline and changes, where), then the chart
// that matters most, all above the fold of a 1280×800 window. Built as
// markup here, every text escaped, since its shape (a grid of tiles) is
// not the sections' tables.

// leadPoints is the most points the lead chart draws per series.
const leadPoints = 60

// sparkBars is the most bars a tile's sparkline draws; a longer window
// puts several days in a bar.
const sparkBars = 60

func summaryHTML(s *reports.Summary) template.HTML {
	if s == nil {
		return ""
	}
	var b strings.Builder
	esc := func(v string) string { return template.HTMLEscapeString(escapeControls(v)) }
	b.WriteString(`<section id="summary" class="summary" aria-label="Summary">` + "\n")
	b.WriteString(`<p class="window">` + esc(windowLine(s)) + "</p>\n")
	b.WriteString(`<div class="tiles">` + "\n")
	// What needs attention: one tile, first.
	a := s.Attention
	cls := "tile attention"
	if len(a.Alerts) > 0 {
		cls += " firing"
		for _, al := range a.Alerts {
			if al.State == alerts.StateFiring {
				cls += " hot"
				break
			}
		}
	}
	fmt.Fprintf(&b, `<div class="%s" data-tile="attention"><h3>Needs attention</h3>`, cls)
	fmt.Fprintf(&b, `<p class="at">at %s, as <code>check --at %s</code> sees it</p>`, esc(minuteText(a.At)), esc(a.At.UTC().Format(time.RFC3339)))
	if len(a.Alerts) == 0 {
		b.WriteString(`<p class="big">Nothing firing or pending</p><p class="small">` + esc(stateCounts(a)) + "</p>")
	} else {
		b.WriteString("<ul class=\"alerts\">")
		for _, al := range a.Alerts {
			name := al.Rule
			if l := alerts.LabelText(al.Labels); l != "" {
				name += " " + l
			}
			thr := ""
			if al.Threshold != nil {
				thr = " " + ThresholdShort(al.Metric, al.Condition, *al.Threshold)
			}
			counts := ""
			if al.Numerator != nil && al.Denominator != nil {
				counts = " (" + countText(*al.Numerator) + "/" + countText(*al.Denominator) + ")"
			}
			fmt.Fprintf(&b, `<li data-rule="%s" data-state="%s"><strong class="state">%s</strong> %s: %s%s%s %s</li>`,
				esc(al.Rule), esc(al.State), esc(strings.ToUpper(al.State)), esc(name), esc(MetricText(al.Metric, al.Value)),
				esc(thr), esc(counts), changeHTML(al.Metric, al.Change))
		}
		b.WriteString("</ul>")
	}
	if a.LatestData != nil && a.Counts["no data"] > 0 {
		next := a.LatestData.UTC().Truncate(time.Second).Add(time.Second)
		fmt.Fprintf(&b, `<p class="small">%s without data; <code>--until %s</code> takes in the latest run.</p>`,
			esc(plural(int64(a.Counts["no data"]), "rule")), esc(next.Format(time.RFC3339)))
	}
	if a.Note != "" {
		b.WriteString(`<p class="small">` + esc(a.Note) + "</p>")
	}
	b.WriteString("</div>\n")
	for _, sy := range s.Systems {
		// A figure: its sparkline is a chart, with its data table.
		fmt.Fprintf(&b, `<figure class="tile" data-tile="system" data-system="%s"><h3>%s</h3>`, esc(sy.System), esc(sy.System))
		fmt.Fprintf(&b, `<p class="big">%s %s %s</p>`, esc(countText(deref(sy.Count.Value))), esc(sy.Unit), changeHTML(sy.Count.Metric, sy.Count.Change))
		b.WriteString(sparkSVG(sy))
		b.WriteString(`<dl>`)
		fmt.Fprintf(&b, `<dt>failed</dt><dd>%s %s</dd>`, esc(MetricText(sy.FailureRate.Metric, sy.FailureRate.Value)), changeHTML(sy.FailureRate.Metric, sy.FailureRate.Change))
		fmt.Fprintf(&b, `<dt>retried</dt><dd>%s %s</dd>`, esc(MetricText(sy.RetryRate.Metric, sy.RetryRate.Value)), changeHTML(sy.RetryRate.Metric, sy.RetryRate.Change))
		cost := ""
		if c := sy.Cost.Change; c != nil && c.Delta != nil {
			cost = `<span class="chg">` + esc(costChangeText(c)) + "</span>"
		}
		fmt.Fprintf(&b, `<dt>cost</dt><dd>%s %s</dd>`, esc(costText(sy.Cost.Value)), cost)
		b.WriteString("</dl>")
		b.WriteString(sparkTable(sy))
		b.WriteString("</figure>\n")
	}
	if len(s.Where) > 0 {
		b.WriteString(`<div class="tile where" data-tile="where"><h3>Where</h3><ul>`)
		for _, w := range s.Where {
			what, key, of := whereText(w)
			fmt.Fprintf(&b, `<li><span class="what">%s</span> <span class="key" title="%s">%s</span> %s <strong>%s%%</strong></li>`,
				esc(what), esc(key), esc(key), esc(of), esc(strconv.FormatFloat(w.Share*100, 'f', 0, 64)))
		}
		b.WriteString("</ul></div>\n")
	}
	b.WriteString("</div>\n")
	if legend := changeLegend(s, unicodeGlyphs); legend != "" {
		b.WriteString(`<p class="small">` + esc(legend) + "</p>\n")
	}
	b.WriteString("</section>\n")
	return template.HTML(b.String())
}

// changeHTML is a change as the terminal shows it, in a span that says in
// words what the mark means.
func changeHTML(metric string, c *reports.Change) string {
	t := changeText(metric, c, unicodeGlyphs, false)
	if t == "" {
		if c != nil && c.Reason != "" {
			return `<span class="chg none" title="` + template.HTMLEscapeString(c.Reason) + `">no change shown</span>`
		}
		return ""
	}
	title := "change against the previous window"
	cls := "chg"
	switch {
	case c.Low != nil && c.High != nil:
		title = fmt.Sprintf("change in points; 95%% interval %s to %s", strconv.FormatFloat(*c.Low*100, 'f', 1, 64), strconv.FormatFloat(*c.High*100, 'f', 1, 64))
		if !c.Significant {
			title += ": includes zero, within noise"
			cls += " noise"
		}
	case isRate(metric):
		title = "change in points"
	}
	if isRate(metric) {
		t += " pts"
	}
	return `<span class="` + cls + `" title="` + template.HTMLEscapeString(title) + `">` + template.HTMLEscapeString(t) + `</span>`
}

// sparkBuckets sums a system's days into at most sparkBars runs of per
// days each: the sparkline's bars and its data table's rows.
func sparkBuckets(days []reports.DayPoint) (sums []int64, per int) {
	per = (len(days) + sparkBars - 1) / sparkBars
	for i := 0; i < len(days); i += per {
		var n int64
		for _, d := range days[i:min(i+per, len(days))] {
			n += d.Count
		}
		sums = append(sums, n)
	}
	return sums, per
}

// sparkSVG draws a system's days as bars, a stretch with nothing as no
// bar, with the days it covers as its title.
func sparkSVG(sy reports.SystemSummary) string {
	days := sy.Daily
	if len(days) == 0 {
		return ""
	}
	sums, per := sparkBuckets(days)
	var top int64
	for _, n := range sums {
		top = max(top, n)
	}
	var b strings.Builder
	title := fmt.Sprintf("%s per day, %s to %s", sy.Unit, days[0].Day, days[len(days)-1].Day)
	if per > 1 {
		title = fmt.Sprintf("%s per %d days, %s to %s", sy.Unit, per, days[0].Day, days[len(days)-1].Day)
	}
	fmt.Fprintf(&b, `<svg class="spark" viewBox="0 0 %d 24" preserveAspectRatio="none" role="img" aria-label="%s"><title>%s</title>`,
		len(sums)*4, template.HTMLEscapeString(title), template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<line x1="0" y1="23.5" x2="%d" y2="23.5" stroke="#bbb" stroke-width="1"/>`, len(sums)*4)
	for i, n := range sums {
		if n == 0 || top == 0 {
			continue
		}
		h := math.Max(2, 22*float64(n)/float64(top))
		fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="3" height="%.1f" fill="#0b4f8a"/>`, i*4, 23-h, h)
	}
	b.WriteString("</svg>")
	return b.String()
}

// sparkTable is a sparkline's data, folded away as the charts' are.
func sparkTable(sy reports.SystemSummary) string {
	if len(sy.Daily) == 0 {
		return ""
	}
	sums, per := sparkBuckets(sy.Daily)
	head := "day"
	if per > 1 {
		head = fmt.Sprintf("%d days from", per)
	}
	var b strings.Builder
	b.WriteString(`<details><summary>Data table<span class="vh"> of ` + template.HTMLEscapeString(sy.System) + `</span></summary><table><thead><tr><th scope="col">` +
		template.HTMLEscapeString(head) + `</th><th scope="col" class="n">` + template.HTMLEscapeString(sy.Unit) + `</th></tr></thead><tbody>`)
	for i, n := range sums {
		fmt.Fprintf(&b, `<tr><th scope="row">%s</th><td class="n">%d</td></tr>`, template.HTMLEscapeString(sy.Daily[i*per].Day), n)
	}
	b.WriteString("</tbody></table></details>")
	return b.String()
}

// leadFigure is the chart that matters most, drawn under the tiles: the
// day chart of the first alert that needs attention, when the report
// draws one; else the runs and calls of every system per day.
func leadFigure(r *reports.Report, dayFigs []htmlFigure) *htmlFigure {
	s := r.Summary
	if s == nil {
		return nil
	}
	for _, al := range s.Attention.Alerts {
		for i, dc := range dayCharts {
			if dc.metric == al.Metric && i < len(dayFigs) && dayFigs[i].SVG != "" {
				f := dayFigs[i]
				return &f
			}
		}
	}
	if len(s.Window.Days) == 0 || len(s.Systems) == 0 {
		return nil
	}
	// A long window is drawn a few days a point, at most leadPoints of
	// them, so that its markers do not run into a bar.
	days := s.Window.Days
	per := (len(days) + leadPoints - 1) / leadPoints
	var starts []string
	for i := 0; i < len(days); i += per {
		starts = append(starts, days[i])
	}
	cats, xlabel := dayNames(starts)
	title, unit := "Runs and calls per day", "day"
	if per > 1 {
		title, unit = fmt.Sprintf("Runs and calls per %d days", per), fmt.Sprintf("%d days from", per)
		xlabel = strings.Replace(xlabel, "day (UTC)", fmt.Sprintf("%d days from (UTC)", per), 1)
	}
	line := chart.Line{Title: title, Categories: cats, XLabel: xlabel}
	t := &htmlTable{Head: []htmlHead{{Text: unit}}}
	sums := make([][]int64, len(s.Systems))
	for j, sy := range s.Systems {
		t.Head = append(t.Head, htmlHead{Text: sy.System + " (" + sy.Unit + ")", Numeric: true})
		ser := chart.Series{Name: sy.System + " " + sy.Unit}
		for i := 0; i < len(sy.Daily); i += per {
			var n int64
			for _, d := range sy.Daily[i:min(i+per, len(sy.Daily))] {
				n += d.Count
			}
			sums[j] = append(sums[j], n)
			ser.Values = append(ser.Values, float64(n))
		}
		line.Series = append(line.Series, ser)
	}
	for i, d := range starts {
		row := htmlRow{Cells: []htmlCell{{Text: d}}}
		for j := range s.Systems {
			row.Cells = append(row.Cells, htmlCell{Text: strconv.FormatInt(sums[j][i], 10), Numeric: true})
		}
		t.Rows = append(t.Rows, row)
	}
	caption := title + " (UTC), every day of the window"
	f := figure(caption, line, t)
	return &f
}

// dayNames are days as a chart's categories: month and day when all are
// of one year, named on the axis.
func dayNames(days []string) ([]string, string) {
	rows := make([]reports.DayRow, len(days))
	for i, d := range days {
		rows[i] = reports.DayRow{Day: d}
	}
	return dayLabels(rows)
}
