package render

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/reports"
)

// scopeLines say, above a table or markdown report, which store and which
// of its runs it covers, then what the overview's numbers leave out.
func scopeLines(r *reports.Report) []string {
	lines := []string{ScopeLine(r.Database, r.Scope)}
	var notes []string
	if n := r.Overview.Undated; n > 0 {
		notes = append(notes, fmt.Sprintf("%s undated (in no time window)", plural(n, "run")))
	}
	if n := r.Overview.QueuedTasks; n > 0 {
		notes = append(notes, fmt.Sprintf("%s never ran (not runs)", plural(n, "queued task")))
	}
	if len(notes) > 0 {
		lines = append(lines, strings.Join(notes, "; "))
	}
	return lines
}

// ScopeLine says which store and which of its runs an output covers, for
// every command that reads a scope (report, check, simulate).
func ScopeLine(db string, s reports.Scope) string {
	if s.Lake != "" {
		return "Lake: " + s.Lake + " — scope: every runner's runs (" + plural(s.RunsInStore, "run") + ")"
	}
	scope := fmt.Sprintf("the whole store (%s)", plural(s.RunsInStore, "run"))
	if len(s.Paths) > 0 {
		scope = fmt.Sprintf("runs under %s (%d of %s in the store; %d left out)",
			strings.Join(s.Paths, ", "), s.RunsInStore-s.RunsLeftOut, plural(s.RunsInStore, "run"), s.RunsLeftOut)
		if s.RunsLeftOut == 0 {
			scope = fmt.Sprintf("runs under %s (all %s in the store)", strings.Join(s.Paths, ", "), plural(s.RunsInStore, "run"))
		}
	}
	return "Store: " + db + " — scope: " + scope
}

// ScopeText is ScopeLine as a terminal shows it: control characters
// escaped, wrapped at width (0: not wrapped).
func ScopeText(db string, s reports.Scope, width int) string {
	return strings.Join(wrapText(escapeControls(ScopeLine(db, s)), width), "\n")
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatInt(n, 10) + " " + what + "s"
}

func have(n int64) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

// writeReportText writes the scope lines, the summary, then the report's
// sections with data (or those o names), for the table and markdown
// formats, and a line naming what was left out.
func writeReportText(buf *bytes.Buffer, r *reports.Report, f Format, o Options) error {
	g := unicodeGlyphs
	if o.ASCII {
		g = asciiGlyphs
	}
	lines := scopeLines(r)
	summary := r.Summary != nil && o.wants("summary")
	if summary {
		// The notes on undated runs and queued tasks explain the
		// overview's counts: they go with it, below the summary.
		lines = lines[:1]
	}
	writeHeadLines(buf, lines, f, o.Width)
	if summary {
		if f == FormatMarkdown {
			buf.WriteString("## Summary\n\n")
		}
		writeSummary(buf, r.Summary, f, o.Width, g)
	}
	shown, left := chooseSections(r, o)
	if len(shown) > 0 && summary {
		if f == FormatMarkdown {
			buf.WriteString("## Details\n\n")
		} else {
			buf.WriteString("Details\n\n")
		}
		if notes := scopeLines(r)[1:]; len(notes) > 0 {
			writeHeadLines(buf, notes, f, o.Width)
		}
	}
	if err := writeGrids(buf, grids(shown), f, o.Width); err != nil {
		return err
	}
	var tail []string
	if l := leftOutLine(left); l != "" {
		tail = append(tail, l)
	}
	tail = append(tail, footerLine(r))
	if len(tail) > 0 {
		if len(shown) > 0 {
			buf.WriteByte('\n')
		}
		for i, l := range tail {
			l = escapeControls(l)
			if f == FormatMarkdown {
				l = markdownEscaper.Replace(l)
			}
			for _, line := range wrapText(l, o.Width) {
				buf.WriteString(line + "\n")
			}
			if f == FormatMarkdown && i < len(tail)-1 {
				buf.WriteByte('\n')
			}
		}
	}
	return nil
}

// writeHeadLines writes the lines above a model's tables, wrapped to the
// width: a paragraph each in Markdown, a block with a blank line after it
// in a table.
func writeHeadLines(buf *bytes.Buffer, lines []string, f Format, width int) {
	for _, l := range lines {
		for _, line := range wrapText(escapeControls(l), width) {
			buf.WriteString(line + "\n")
		}
		if f == FormatMarkdown {
			buf.WriteByte('\n')
		}
	}
	if f != FormatMarkdown {
		buf.WriteByte('\n')
	}
}

// metricOrder is MetricNames followed by any other of names, sorted, so that
// a metric the model carries but MetricNames does not yet list still shows.
func metricOrder(names []string) []string {
	order := slices.Clone(reports.MetricNames)
	var extra []string
	for _, n := range names {
		if !slices.Contains(order, n) && !slices.Contains(extra, n) {
			extra = append(extra, n)
		}
	}
	slices.Sort(extra)
	return append(order, extra...)
}

// Values as people read them: rates as percentages with one decimal,
// averages with two, counts as integers, durations with a unit. JSON and
// CSV keep full precision; these are for table and markdown output, and
// for check's lines.

// isRate reports whether the metric is a share shown as a percentage: a
// Share in the catalog, and a figure outside it (the summary's run failure
// rate, an SQL rule's value) by its name.
func isRate(name string) bool {
	if s, ok := reports.Spec(name); ok {
		return s.Kind == reports.Share
	}
	return strings.HasSuffix(name, "_rate")
}

// MetricText shows a value of the metric named name as a person reads it:
// "28.1%" for a rate, "3.33" for an average, "7" for a count; "-" when
// there is no value. A name that is no metric (an SQL rule's value) shows
// as a count.
func MetricText(name string, v *float64) string {
	if v == nil {
		return "-"
	}
	switch {
	case isRate(name):
		return percentText(*v)
	case reports.AverageMetric(name):
		return strconv.FormatFloat(*v, 'f', 2, 64)
	}
	return countText(*v)
}

// percentText shows a share as a percentage with one decimal.
func percentText(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return formatFloat(v)
	}
	return strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
}

// rateText shows a ratio metric that is a share.
func rateText(m reports.Metric) string {
	if m.Value == nil {
		return "-"
	}
	return percentText(*m.Value)
}

// countText shows an integral number without decimals and any other to 2.
func countText(v float64) string {
	if v == math.Trunc(v) && !math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func countPtrText(v *float64) string {
	if v == nil {
		return "-"
	}
	return countText(*v)
}

// durationText shows milliseconds with a unit: "950 ms", "4.6 s",
// "3.2 min".
func durationText(ms *float64) string {
	if ms == nil {
		return "-"
	}
	switch v := *ms; {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return formatFloat(v)
	case math.Abs(v) < 1000:
		return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
	case math.Abs(v) < 60_000:
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s"
	case math.Abs(v) < 3_600_000:
		return strconv.FormatFloat(v/60_000, 'f', 1, 64) + " min"
	default:
		return strconv.FormatFloat(v/3_600_000, 'f', 1, 64) + " h"
	}
}

// costText shows dollars: cents, or four decimals under a cent.
func costText(v *float64) string {
	if v == nil {
		return "-"
	}
	if math.Abs(*v) < 0.01 && *v != 0 {
		return "$" + strconv.FormatFloat(*v, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(*v, 'f', 2, 64)
}

// partText shows a numerator or denominator; counts have none, shown blank
// so that "-" keeps meaning "no value".
func partText(v *float64) string {
	if v == nil {
		return ""
	}
	return countText(*v)
}

// thresholdText shows a rule as its condition with the threshold filled in,
// e.g. "value > 0.2 && denominator >= 20 (provider_retry_rate_high)",
// marked ALERT when crossed: the number is what a reader compares the value
// with, and the rest of the condition (the minimum-sample guard) explains why
// a high value may not alert. At a terminal (short) it is only the
// comparison, as the value is shown: "> 20% ALERT".
func thresholdText(t reports.Threshold, short bool) string {
	if short {
		s := ThresholdShort(t.Metric, t.Condition, t.Threshold)
		if t.Crossed {
			s += " ALERT"
		}
		return s
	}
	s := formatFloat(t.Threshold)
	if t.Condition != "" {
		s = thresholdWord.ReplaceAllLiteralString(t.Condition, s)
	}
	s += " (" + t.Rule + ")"
	if t.Crossed {
		s += " ALERT"
	}
	return s
}

// comparison finds the part of a condition that compares with the
// threshold: "value > threshold", "numerator >= threshold", or reversed.
var comparison = regexp.MustCompile(`\b(value|numerator|denominator)\s*(>=|<=|==|!=|>|<)\s*threshold\b|\bthreshold\s*(>=|<=|==|!=|>|<)\s*(value|numerator|denominator)\b`)

// ThresholdShort is a rule's threshold as the comparison a value is
// measured against, in the value's own units: "> 20%" for a rate rule
// whose condition says value > threshold, "numerator >= 3" when the
// condition compares something else. A condition without such a
// comparison shows whole, with the threshold filled in.
func ThresholdShort(metric, condition string, threshold float64) string {
	m := comparison.FindStringSubmatch(condition)
	if m == nil {
		if condition == "" {
			if isRate(metric) {
				return strings.Replace(percentText(threshold), ".0%", "%", 1)
			}
			return formatFloat(threshold)
		}
		return thresholdWord.ReplaceAllLiteralString(condition, formatFloat(threshold))
	}
	subject, op := m[1], m[2]
	if subject == "" { // threshold OP subject: turn it round
		subject, op = m[4], map[string]string{">": "<", "<": ">", ">=": "<=", "<=": ">=", "==": "==", "!=": "!="}[m[3]]
	}
	if subject == "value" {
		// A threshold is written by a person: "20%", not "20.0%"; "3",
		// not "3.00".
		t := formatFloat(threshold)
		if isRate(metric) {
			t = strings.Replace(percentText(threshold), ".0%", "%", 1)
		}
		return op + " " + t
	}
	return subject + " " + op + " " + countText(threshold)
}

// thresholdWord is the rule-condition variable holding the threshold.
var thresholdWord = regexp.MustCompile(`\bthreshold\b`)

// providerKey is "provider/model", "-" for an unknown model.
func providerKey(p reports.ProviderRow) string { return joinKey(p.Provider, stringPtrText(p.Model)) }

func stringPtrText(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func timePtrText(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return timeText(*t)
}

// jsonReport returns a copy of r for JSON output whose lists are [] rather
// than null and whose times are UTC, so consumers see one shape whatever
// the producer did. r itself is not modified.
func jsonReport(r *reports.Report) reports.Report {
	c := *r
	c.GeneratedAt = c.GeneratedAt.UTC()
	c.Filters.Since = utcPtr(c.Filters.Since)
	c.Filters.Until = utcPtr(c.Filters.Until)
	c.Overview.FirstEvent = utcPtr(c.Overview.FirstEvent)
	c.Overview.LastEvent = utcPtr(c.Overview.LastEvent)
	c.Overview.RunsBySystem = nonNil(c.Overview.RunsBySystem)
	if c.Metrics == nil {
		c.Metrics = reports.Metrics{}
	}
	c.Thresholds = nonNil(c.Thresholds)
	b := &c.Breakdowns
	b.ByProvider = nonNil(b.ByProvider)
	b.ByDay = nonNil(b.ByDay)
	b.WorstByRetries = utcRuns(b.WorstByRetries)
	b.WorstByIterations = utcRuns(b.WorstByIterations)
	b.RepairIterations = nonNil(b.RepairIterations)
	b.StopReasons = nonNil(b.StopReasons)
	b.EscalationReasons = nonNil(b.EscalationReasons)
	b.JudgeReasons = nonNil(b.JudgeReasons)
	b.CandidateValidity = nonNil(b.CandidateValidity)
	c.Systems.BySystem = nonNil(c.Systems.BySystem)
	c.Systems.StageFailures = nonNil(c.Systems.StageFailures)
	c.Calls.BySystem = nonNil(c.Calls.BySystem)
	c.Calls.ByModel = nonNil(c.Calls.ByModel)
	c.Systems.Stages = nonNil(c.Systems.Stages)
	return c
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func utcRuns(runs []reports.RunRow) []reports.RunRow {
	out := make([]reports.RunRow, len(runs))
	for i, r := range runs {
		r.StartedAt = r.StartedAt.UTC()
		out[i] = r
	}
	return out
}

// writeReportCSV writes r as one long ("tidy") table, so a whole report
// loads into a spreadsheet or dataframe as a single sheet. Header:
//
//	section,key,metric,value,numerator,denominator
//
// One row per value; numerator and denominator are filled only for ratios.
// Floats have full precision, times are RFC 3339 in UTC, nil is an empty
// field. The rows come from reportSections, as the table's do. Sections,
// in order:
//
//   - overview: key empty; metric is database, generated_at, filter_since,
//     filter_until, filter_runs (comma-separated), filter_provider, runs,
//     runs.SYSTEM for each system with runs in scope (reports.SystemOrder),
//     first_event, last_event, success, failure, cancelled, unfinished,
//     other_status, events, quarantined, undated, queued_tasks.
//   - scope: key empty; metric is path (one row per path named; none for
//     the whole store), runs_in_store and runs_left_out.
//   - metrics: key empty; metric is each metric name in MetricNames order,
//     then any others sorted; a metric the report lacks has no row.
//   - by_provider: key "provider/model" ("-" for an unknown model); metric
//     is requests, retried, failed, retries_total, retry_rate, failure_rate,
//     avg_duration_ms.
//   - by_day: key the day (2006-01-02); metric is each metric name of that
//     day, in the same order.
//   - worst_runs_by_retries, worst_runs_by_iterations: key the run id;
//     metric is started_at, status, provider_requests, provider_retries,
//     repair_iterations, escalated, stop_reason.
//   - stop_reasons, escalation_reasons, judge_reasons: key the reason;
//     metric is count and runs.
//   - candidate_validity: key the provider id; metric is candidates, valid
//     and rate.
//   - systems: key the system; metric is runs, success, failure,
//     cancelled, unfinished, other_status, attempts, failed_attempts, retried_runs, first_run,
//     last_run, then the system's record metrics.
//   - failures_by_stage: key "system/stage"; metric is failures and runs.
//   - stages: key "system/stage"; metric is runs, failed, not_applicable,
//     failure_rate, avg_duration_ms, tokens and cost_usd.
//   - factory_audit: key empty; metric is each total of the overview
//     table (runs, attempts, ..., command_timeouts_retried).
//   - factory_audit_stages: key the audit's id, or the stage for a stage
//     outside the taxonomy; metric is stage, failed_attempts, runs,
//     retry_helps and classification.
//   - factory_audit_deterministic: key the audit's id; metric is stage,
//     failures, runs and wasted_attempts.
//   - factory_audit_repeats: key the run id; metric is item, stage,
//     attempts and repeated_attempts.
//   - factory_audit_exceptions: key the class and kind
//     ("rate_limit/transient"); metric is attempts and runs.
//   - factory_audit_timeouts: key the stage; metric is attempts, runs and
//     retried.
//   - thresholds: key the rule; metric is metric (value: the metric's name),
//     severity, condition, threshold, value (the metric's value) and crossed
//     (true or false).
func writeReportCSV(buf *bytes.Buffer, r *reports.Report) error {
	sections := reportSections(r, 0)
	if r.Summary != nil {
		sections = append(sections, section{name: "summary", csv: summaryFields(r.Summary)})
	}
	return writeCSV(buf, sections)
}

// WrapText is prose for a terminal width columns wide (0: as it is): s,
// its control characters escaped, broken at spaces into lines of at most
// width columns, as the scope lines and titles are.
func WrapText(s string, width int) string {
	return strings.Join(wrapText(escapeControls(s), width), "\n")
}
