package render

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/model/reports"
)

// The summary a report leads with, as the table and Markdown formats show
// it: plain aligned lines rather than bordered tables, so that the scope,
// what needs attention, a line per system and where the retries, failures
// and cost come from fit the first 24 lines of an 80-column terminal.

// glyphs are the marks the summary draws with: Unicode, or ASCII under
// --ascii or a locale that is not UTF-8.
type glyphs struct {
	spark    []string // lowest to highest; a day with nothing is a space
	up, down string
	noise    string // a change whose interval includes zero
	ellipsis string
}

var unicodeGlyphs = glyphs{
	spark: []string{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"},
	up:    "▲", down: "▼", noise: "~", ellipsis: "…",
}

var asciiGlyphs = glyphs{
	spark: []string{".", ":", "-", "=", "+", "*", "#", "@"},
	up:    "^", down: "v", noise: "~", ellipsis: "...",
}

// sparkWidth is how many characters a system's daily sparkline takes at
// most; longer windows put several days in a character.
const sparkWidth = 14

// writeSummary writes the summary under the scope lines.
func writeSummary(buf *bytes.Buffer, s *reports.Summary, f Format, width int, g glyphs) {
	md := f == FormatMarkdown
	line := func(l string) {
		buf.WriteString(l + "\n")
	}
	wrapped := func(l string) {
		for _, w := range wrapText(escapeControls(l), width) {
			line(w)
		}
		if md {
			line("")
		}
	}
	wrapped(windowLine(s))
	writeAttention(buf, s, f, width, g, wrapped)
	if !md {
		line("")
	}
	if len(s.Systems) > 0 {
		writeSystems(buf, s, f, width, g)
		if !md {
			line("")
		}
	}
	if len(s.Where) > 0 {
		writeWhere(buf, s, f, width, g)
		if !md {
			line("")
		}
	}
	if legend := changeLegend(s, g); legend != "" {
		wrapped(legend)
		if !md {
			line("")
		}
	}
}

// windowLine says which window the summary covers and what it is compared
// with.
func windowLine(s *reports.Summary) string {
	w := s.Window
	l := "Window: all data to " + minuteText(w.Until)
	if w.Since != nil {
		l = "Window: " + minuteText(*w.Since) + " to " + minuteText(w.Until)
	}
	if n := len(w.Days); n > 0 {
		l += " (" + plural(int64(n), "day") + ")"
	}
	switch {
	case s.Previous != nil && s.CompareNote == "":
		l += "; changes against " + periodText(*s.Previous)
	case s.Previous != nil:
		l += "; against " + periodText(*s.Previous) + " (" + s.CompareNote + ")"
	case s.CompareNote != "":
		l += "; " + s.CompareNote
	}
	return l
}

func periodText(p reports.Period) string {
	from := "the first data"
	if p.Since != nil {
		from = minuteText(*p.Since)
	}
	return from + " to " + minuteText(p.Until)
}

// minuteText is a time to the minute, in UTC, as people read it; seconds
// when it has any, so that a window's edge is not rounded across data.
func minuteText(t time.Time) string {
	t = t.UTC()
	if t.Second() != 0 || t.Nanosecond() != 0 {
		return t.Format("2006-01-02 15:04:05") + " UTC"
	}
	return t.Format("2006-01-02 15:04") + " UTC"
}

func writeAttention(buf *bytes.Buffer, s *reports.Summary, f Format, width int, g glyphs, wrapped func(string)) {
	a := s.Attention
	head := "Needs attention (check --at " + a.At.UTC().Format(time.RFC3339) + ")"
	noData := ""
	if n := int64(a.Counts["no data"]); n > 0 && a.LatestData != nil {
		next := a.LatestData.UTC().Truncate(time.Second).Add(time.Second)
		noData = "  " + plural(n, "rule") + " without data; --until " + next.Format(time.RFC3339) + " takes in the latest run"
	} else if n > 0 && len(a.Alerts) > 0 {
		noData = "  " + plural(n, "rule") + " without data: none of what they count in their windows"
	}
	if len(a.Alerts) == 0 {
		l := head + ": nothing firing or pending, " + stateCounts(a)
		if a.Note != "" {
			l += ". " + a.Note
		}
		wrapped(l)
		if noData != "" {
			wrapped(noData)
		}
		for _, fl := range a.Failed {
			wrapped("  rule " + fl.Rule + " failed: " + fl.Error)
		}
		return
	}
	firing, pending := 0, 0
	for _, al := range a.Alerts {
		if al.State == alerts.StateFiring {
			firing++
		} else {
			pending++
		}
	}
	var parts []string
	if firing > 0 {
		parts = append(parts, strconv.Itoa(firing)+" firing")
	}
	if pending > 0 {
		parts = append(parts, strconv.Itoa(pending)+" pending")
	}
	wrapped(head + ": " + strings.Join(parts, ", ") + " of " + plural(int64(a.Rules), "rule"))
	defer func() {
		if noData != "" {
			wrapped(noData)
		}
		if a.Note != "" {
			wrapped("  " + a.Note)
		}
	}()
	rows := make([][]string, 0, len(a.Alerts))
	for _, al := range a.Alerts {
		name := al.Rule
		if l := alerts.LabelText(al.Labels); l != "" {
			name += " " + l
		}
		counts := ""
		if al.Numerator != nil && al.Denominator != nil {
			counts = countText(*al.Numerator) + "/" + countText(*al.Denominator)
		}
		thr := ""
		if al.Threshold != nil {
			thr = ThresholdShort(al.Metric, al.Condition, *al.Threshold)
		}
		rows = append(rows, []string{strings.ToUpper(al.State), name, MetricText(al.Metric, al.Value), thr, counts, changeText(al.Metric, al.Change, g, true)})
	}
	writeAligned(buf, f, width, g, []string{"state", "rule", "value", "threshold", "n", "change"}, rows, []bool{false, false, true, false, true, false}, 1, false)
	for _, fl := range a.Failed {
		wrapped("  rule " + fl.Rule + " failed: " + fl.Error)
	}
}

// stateCounts is "12 rules: 3 inactive, 9 no data".
func stateCounts(a reports.Attention) string {
	var keys []string
	for k := range a.Counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, strconv.Itoa(a.Counts[k])+" "+k)
	}
	s := plural(int64(a.Rules), "rule")
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s
}

func writeSystems(buf *bytes.Buffer, s *reports.Summary, f Format, width int, g glyphs) {
	compare := s.Previous != nil
	cols := []string{"system", "runs/calls"}
	num := []bool{false, true}
	if compare {
		cols, num = append(cols, "±"), append(num, true)
	}
	cols, num = append(cols, "failed"), append(num, true)
	if compare {
		cols, num = append(cols, "±pts"), append(num, false)
	}
	cols, num = append(cols, "retried"), append(num, true)
	if compare {
		cols, num = append(cols, "±pts"), append(num, false)
	}
	cols, num = append(cols, "cost"), append(num, true)
	if compare {
		cols, num = append(cols, "±"), append(num, true)
	}
	cols, num = append(cols, "daily"), append(num, false)
	var rows [][]string
	for _, sy := range s.Systems {
		row := []string{sy.System, countText(deref(sy.Count.Value)) + " " + sy.Unit}
		if compare {
			row = append(row, changeText(sy.Count.Metric, sy.Count.Change, g, false))
		}
		row = append(row, MetricText(sy.FailureRate.Metric, sy.FailureRate.Value))
		if compare {
			row = append(row, changeText(sy.FailureRate.Metric, sy.FailureRate.Change, g, false))
		}
		row = append(row, MetricText(sy.RetryRate.Metric, sy.RetryRate.Value))
		if compare {
			row = append(row, changeText(sy.RetryRate.Metric, sy.RetryRate.Change, g, false))
		}
		row = append(row, costText(sy.Cost.Value))
		if compare {
			row = append(row, costChangeText(sy.Cost.Change))
		}
		row = append(row, sparkline(sy.Daily, g))
		rows = append(rows, row)
	}
	writeAligned(buf, f, width, g, cols, rows, num, 0, true)
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

func writeWhere(buf *bytes.Buffer, s *reports.Summary, f Format, width int, g glyphs) {
	if f == FormatMarkdown {
		buf.WriteString("**Where**\n\n")
	} else {
		buf.WriteString("Where\n")
	}
	var rows [][]string
	for _, w := range s.Where {
		what, key, of := whereText(w)
		rows = append(rows, []string{what, key, of, strconv.FormatFloat(w.Share*100, 'f', 0, 64) + "%"})
	}
	writeAligned(buf, f, width, g, []string{"what", "where", "how much", "share"}, rows, []bool{false, false, true, true}, 1, false)
}

// whereText is a "where" row's words: what it counts ("retried calls",
// "cost"), the key with its kind and system, and how much of the total.
// The orchestrator's system goes unsaid: its units (requests) say it.
func whereText(w reports.WhereRow) (what, key, of string) {
	key = w.Kind + " " + w.Key
	if w.Kind == "stage" && w.Key == "(none)" {
		key = "attempts naming no stage"
	}
	if w.System != "" && w.Kind != "run" && w.System != "orchestrator" {
		key += " (" + w.System + ")"
	}
	if w.Unit == "USD" {
		return "cost", key, costText(&w.Value) + " of " + costText(&w.Total)
	}
	return w.Unit, key, countText(w.Value) + " of " + countText(w.Total)
}

// writeAligned writes rows under cols: a Markdown table, or for the
// table format plain columns two spaces apart, indented by indent
// spaces, a header in lower case above them. Cut to width: the widest
// cell of the column given by cutCol shortens in the middle.
func writeAligned(buf *bytes.Buffer, f Format, width int, g glyphs, cols []string, rows [][]string, numeric []bool, cutCol int, header bool) {
	if f == FormatMarkdown {
		esc := func(s string) string { return markdownEscaper.Replace(escapeControls(s)) }
		buf.WriteString("|")
		for _, c := range cols {
			buf.WriteString(" " + esc(c) + " |")
		}
		buf.WriteString("\n|")
		for j := range cols {
			if numeric[j] {
				buf.WriteString("---:|")
			} else {
				buf.WriteString("---|")
			}
		}
		buf.WriteString("\n")
		for _, r := range rows {
			buf.WriteString("|")
			for _, c := range r {
				buf.WriteString(" " + esc(c) + " |")
			}
			buf.WriteString("\n")
		}
		buf.WriteString("\n")
		return
	}
	indent := 2
	widths := make([]int, len(cols))
	all := rows
	if header {
		all = append([][]string{cols}, rows...)
	}
	for i, r := range all {
		for j, c := range r {
			c = escapeControls(c)
			all[i][j] = c
			widths[j] = max(widths[j], utf8.RuneCountInString(c))
		}
	}
	// Empty columns (no change anywhere) are dropped; their header alone
	// says nothing.
	keep := make([]bool, len(cols))
	for j := range cols {
		for _, r := range rows {
			if r[j] != "" {
				keep[j] = true
			}
		}
	}
	total := func() int {
		n := indent
		for j, w := range widths {
			if keep[j] {
				n += w + 2
			}
		}
		return n - 2
	}
	if width > 0 && total() > width {
		over := total() - width
		widths[cutCol] = max(8, widths[cutCol]-over)
	}
	for _, r := range all {
		var b strings.Builder
		b.WriteString(strings.Repeat(" ", indent))
		for j, c := range r {
			if !keep[j] {
				continue
			}
			c = cutMiddleText(c, widths[j], g.ellipsis)
			pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c))
			if numeric[j] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
			b.WriteString("  ")
		}
		buf.WriteString(strings.TrimRight(b.String(), " ") + "\n")
	}
}

// cutMiddleText shortens s to w characters by cutting its middle, so
// that a model id keeps its family and its version.
func cutMiddleText(s string, w int, ellipsis string) string {
	r := []rune(s)
	if len(r) <= w {
		return s
	}
	e := utf8.RuneCountInString(ellipsis)
	if w <= e {
		return string(r[:w])
	}
	head := (w - e + 1) / 2
	tail := w - e - head
	return string(r[:head]) + ellipsis + string(r[len(r)-tail:])
}

// changeText shows a change in the figure's units: counts as +7, rates
// in percentage points (+3.0), a rise or fall that its interval supports
// marked ▲ or ▼, one whose interval includes zero marked ~ and nothing
// else. withInterval adds the interval, in points. A change not shown is
// blank, its reason in the JSON.
func changeText(metric string, c *reports.Change, g glyphs, withInterval bool) string {
	if c == nil || c.Delta == nil {
		return ""
	}
	d := *c.Delta
	rate := isRate(metric)
	num := func(v float64) string {
		if rate {
			return strconv.FormatFloat(v*100, 'f', 1, 64)
		}
		if reports.AverageMetric(metric) {
			return strconv.FormatFloat(v, 'f', 2, 64)
		}
		return countText(v)
	}
	signed := num(math.Abs(d))
	if d == 0 && c.Low == nil && !rate {
		return "±0"
	}
	if d < 0 {
		signed = "-" + signed
	} else {
		signed = "+" + signed
	}
	var s string
	switch {
	case c.Low == nil && c.High == nil && !rate:
		// A total: what happened, not an estimate.
		s = signed
	case c.Significant && d > 0:
		s = g.up + signed
	case c.Significant && d < 0:
		s = g.down + signed
	default:
		s = g.noise + signed
	}
	if withInterval && c.Low != nil && c.High != nil {
		s += " [" + num(*c.Low) + ", " + num(*c.High) + "]"
	}
	if withInterval && rate {
		s += " pts"
	}
	return s
}

func costChangeText(c *reports.Change) string {
	if c == nil || c.Delta == nil {
		return ""
	}
	if *c.Delta == 0 {
		return "±0"
	}
	if *c.Delta < 0 {
		v := -*c.Delta
		return "-" + costText(&v)
	}
	return "+" + costText(c.Delta)
}

// changeLegend explains the marks the summary used, when it used any.
func changeLegend(s *reports.Summary, g glyphs) string {
	noise, marked := false, false
	check := func(metric string, c *reports.Change) {
		if c == nil || c.Delta == nil || (!isRate(metric) && c.Low == nil) {
			return
		}
		if c.Significant {
			marked = true
		} else {
			noise = true
		}
	}
	for _, sy := range s.Systems {
		check(sy.FailureRate.Metric, sy.FailureRate.Change)
		check(sy.RetryRate.Metric, sy.RetryRate.Change)
	}
	for _, a := range s.Attention.Alerts {
		check(a.Metric, a.Change)
	}
	var parts []string
	if marked || noise {
		parts = append(parts, "rates change in percentage points")
	}
	if marked {
		parts = append(parts, g.up+"/"+g.down+" a change whose 95% interval excludes zero")
	}
	if noise {
		parts = append(parts, g.noise+" one whose interval includes zero (noise)")
	}
	if len(parts) == 0 {
		return ""
	}
	return "Changes: " + strings.Join(parts, "; ") + ". --format json has both windows and the intervals."
}

// sparkline draws a system's daily counts in at most sparkWidth
// characters: each character a run of days, its height the busiest
// day's share of the busiest run's; a space where nothing happened, so
// that gaps show.
func sparkline(days []reports.DayPoint, g glyphs) string {
	if len(days) == 0 {
		return ""
	}
	per := (len(days) + sparkWidth - 1) / sparkWidth
	var sums []int64
	for i := 0; i < len(days); i += per {
		var n int64
		for _, d := range days[i:min(i+per, len(days))] {
			n += d.Count
		}
		sums = append(sums, n)
	}
	top := slices.Max(sums)
	var b strings.Builder
	for _, n := range sums {
		if n == 0 || top == 0 {
			b.WriteString(" ")
			continue
		}
		level := int(math.Ceil(float64(n)/float64(top)*float64(len(g.spark)))) - 1
		b.WriteString(g.spark[max(0, min(level, len(g.spark)-1))])
	}
	return strings.TrimRight(b.String(), " ")
}

// summaryFields are the summary's CSV rows: each system's figures and
// their changes, each alert needing attention.
func summaryFields(s *reports.Summary) []csvRow {
	if s == nil {
		return nil
	}
	var out []csvRow
	fig := func(key, name string, f reports.Figure) {
		out = append(out, csvRow{key, field{name, reports.Metric{Value: f.Value, Numerator: f.Numerator, Denominator: f.Denominator}}})
		if f.Change != nil {
			out = append(out, csvRow{key, field{name + ".previous", f.Change.Previous}})
			out = append(out, csvRow{key, field{name + ".delta", f.Change.Delta}})
			if f.Change.Low != nil {
				out = append(out, csvRow{key, field{name + ".delta_low", f.Change.Low}})
				out = append(out, csvRow{key, field{name + ".delta_high", f.Change.High}})
			}
		}
	}
	for _, sy := range s.Systems {
		fig(sy.System, "count", sy.Count)
		fig(sy.System, "failure_rate", sy.FailureRate)
		fig(sy.System, "retry_rate", sy.RetryRate)
		fig(sy.System, "cost_usd", sy.Cost)
	}
	for _, a := range s.Attention.Alerts {
		k := a.Rule
		if l := alerts.LabelText(a.Labels); l != "" {
			k += " " + l
		}
		out = append(out, csvRow{k, field{"state", a.State}})
		out = append(out, csvRow{k, field{a.Metric, reports.Metric{Value: a.Value, Numerator: a.Numerator, Denominator: a.Denominator}}})
	}
	return out
}
