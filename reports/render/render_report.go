package render

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"github.com/orchstat/orchstat/reports"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// overviewField is one named value of the overview. The same list feeds the
// table and the CSV, so the two cannot drift.
type overviewField struct {
	name  string
	value any // anything plainCell accepts
}

func overviewFields(r *reports.Report) []overviewField {
	var runs any // nil: no run filter, which is not the same as an empty one
	if r.Filters.Runs != nil {
		runs = strings.Join(r.Filters.Runs, ",")
	}
	o := r.Overview
	return []overviewField{
		{"database", r.Database},
		{"generated_at", r.GeneratedAt},
		{"filter_since", r.Filters.Since},
		{"filter_until", r.Filters.Until},
		{"filter_runs", runs},
		{"filter_provider", r.Filters.Provider},
		{"runs", o.Runs},
		{"first_event", o.FirstEvent},
		{"last_event", o.LastEvent},
		{"success", o.Success},
		{"failure", o.Failure},
		{"cancelled", o.Cancelled},
		{"unfinished", o.Unfinished},
		{"other_status", o.OtherStatus},
		{"events", o.Events},
		{"quarantined", o.Quarantined},
		{"undated", o.Undated},
		{"queued_tasks", o.QueuedTasks},
	}
}

// scopeLines say, above a table or markdown report, which store and which
// of its runs it covers, then what the overview's numbers leave out.
func scopeLines(r *reports.Report) []string {
	lines := []string{ScopeLine(r.Database, r.Scope)}
	if n := r.Overview.Undated; n > 0 {
		lines = append(lines, fmt.Sprintf("%s %s no recorded time (left out of --since, --until and time windows)", plural(n, "run"), have(n)))
	}
	if n := r.Overview.QueuedTasks; n > 0 {
		lines = append(lines, fmt.Sprintf("%s never ran (not counted as runs)", plural(n, "queued task")))
	}
	return lines
}

// ScopeLine says which store and which of its runs an output covers, for
// every command that reads a scope (report, check, simulate).
func ScopeLine(db string, s reports.Scope) string {
	scope := fmt.Sprintf("the whole store (%s)", plural(s.RunsInStore, "run"))
	if len(s.Paths) > 0 {
		scope = fmt.Sprintf("runs under %s (%d of %s in the store; %d left out)",
			strings.Join(s.Paths, ", "), s.RunsInStore-s.RunsLeftOut, plural(s.RunsInStore, "run"), s.RunsLeftOut)
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

// writeReportText writes the scope lines, then the report's sections, for
// the table and markdown formats.
func writeReportText(buf *bytes.Buffer, r *reports.Report, f Format, width int) error {
	for _, l := range scopeLines(r) {
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
	return writeGrids(buf, reportGrids(r, width), f, width)
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

// averageMetrics are the ratios that are averages (per run, per loop), not
// shares: 3.33 iterations, not 333.3%.
var averageMetrics = map[string]bool{
	"avg_repair_iterations":        true,
	"diagnoses_per_l3_run":         true,
	"judge_invocations_per_l3_run": true,
}

// isRate reports whether the metric is a share shown as a percentage.
func isRate(name string) bool { return strings.HasSuffix(name, "_rate") }

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
	case averageMetrics[name]:
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

func providerKey(p reports.ProviderRow) string {
	model := "-"
	if p.Model != nil {
		model = *p.Model
	}
	return p.Provider + "/" + model
}

func stringPtrText(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// reportGrids lays r out as the table and markdown sections, in their fixed
// order.
//
// At a terminal (width > 0) threshold cells show only the comparison;
// elsewhere they show the whole condition.
func reportGrids(r *reports.Report, width int) []grid {
	overview := grid{title: "Overview", columns: []string{"field", "value"}, numeric: []bool{false, false}}
	for _, f := range overviewFields(r) {
		overview.rows = append(overview.rows, []string{f.name, displayCell(plainCell(f.value), "-")})
	}

	names := make([]string, 0, len(r.Metrics)+len(r.Thresholds))
	for n := range r.Metrics {
		names = append(names, n)
	}
	for _, t := range r.Thresholds {
		names = append(names, t.Metric)
	}
	metrics := grid{
		title:   "Metrics",
		columns: []string{"metric", "value", "numerator", "denominator", "threshold"},
		numeric: []bool{false, true, true, true, false},
	}
	noRecords := !hasRecords(r)
	for _, n := range metricOrder(names) {
		if noRecords && reports.RecordMetric(n) {
			continue // other systems' metrics, in a store that has none
		}
		m := r.Metrics[n]
		var rules []string
		for _, t := range r.Thresholds {
			if t.Metric == n {
				rules = append(rules, thresholdText(t, width > 0))
			}
		}
		metrics.rows = append(metrics.rows, []string{
			n, MetricText(n, m.Value), partText(m.Numerator), partText(m.Denominator), strings.Join(rules, "; "),
		})
	}

	b := r.Breakdowns
	byProvider := grid{
		title:   "By provider and model",
		columns: []string{"provider", "model", "requests", "retried", "failed", "retries_total", "retry_rate", "failure_rate", "avg_duration_ms"},
		numeric: []bool{false, false, true, true, true, true, true, true, true},
	}
	for _, p := range b.ByProvider {
		byProvider.rows = append(byProvider.rows, []string{
			p.Provider, stringPtrText(p.Model),
			strconv.FormatInt(p.Requests, 10), strconv.FormatInt(p.Retried, 10), strconv.FormatInt(p.Failed, 10),
			countText(p.RetriesTotal), rateText(p.RetryRate), rateText(p.FailureRate), durationText(p.AvgDuration),
		})
	}

	var dayNames []string
	for _, d := range b.ByDay {
		for n := range d.Metrics {
			dayNames = append(dayNames, n)
		}
	}
	// Days are orchestrator runs' days; record metrics are not split by day.
	dayOrder := slices.DeleteFunc(metricOrder(dayNames), reports.RecordMetric)
	byDay := grid{title: "By day", columns: append([]string{"day"}, dayOrder...)}
	byDay.numeric = make([]bool, len(byDay.columns))
	for i := 1; i < len(byDay.numeric); i++ {
		byDay.numeric[i] = true
	}
	for _, d := range b.ByDay {
		row := []string{d.Day}
		for _, n := range dayOrder {
			row = append(row, MetricText(n, d.Metrics[n].Value))
		}
		byDay.rows = append(byDay.rows, row)
	}

	grids := []grid{overview, metrics, byProvider, byDay,
		runGrid("Worst runs by retries", b.WorstByRetries),
		runGrid("Worst runs by iterations", b.WorstByIterations),
		countGrid("Stop reasons", b.StopReasons),
		countGrid("Escalation reasons", b.EscalationReasons),
		countGrid("Judge reasons", b.JudgeReasons),
	}

	validity := grid{
		title:   "Candidate validity",
		columns: []string{"provider_id", "candidates", "valid", "rate"},
		numeric: []bool{false, true, true, true},
	}
	for _, v := range b.CandidateValidity {
		validity.rows = append(validity.rows, []string{
			v.ProviderID, strconv.FormatInt(v.Candidates, 10), strconv.FormatInt(v.Valid, 10), rateText(v.Rate),
		})
	}
	grids = append(append(grids, validity), systemGrids(r.Systems)...)
	if r.FactoryAudit != nil {
		grids = append(grids, auditGrids(r.FactoryAudit)...)
	}
	return grids
}

// hasRecords reports whether the report covers any other system's run.
func hasRecords(r *reports.Report) bool {
	m := r.Metrics["record_runs"]
	return m.Value != nil && *m.Value > 0 || len(r.Systems.BySystem) > 0
}

// systemGrids are the other systems' sections, shown only when some
// system's records are in scope so an orchestrator-only report stays as
// it was.
func systemGrids(s reports.Systems) []grid {
	if len(s.BySystem) == 0 {
		return nil
	}
	by := grid{
		title: "Other systems",
		columns: []string{"system", "runs", "success", "failure", "other_status", "attempts", "failed_attempts", "retried_runs",
			"retry_rate", "wasted_attempt_rate", "signature_repeat_rate", "first_run", "last_run"},
		numeric: []bool{false, true, true, true, true, true, true, true, true, true, true, false, false},
	}
	for _, r := range s.BySystem {
		by.rows = append(by.rows, []string{r.System, itoa(r.Runs), itoa(r.Success), itoa(r.Failure), itoa(r.OtherStatus),
			itoa(r.Attempts), itoa(r.FailedAttempts), itoa(r.RetriedRuns), rateText(r.Metrics["record_retry_rate"]),
			rateText(r.Metrics["wasted_attempt_rate"]), rateText(r.Metrics["signature_repeat_rate"]),
			timePtrText(r.FirstRun), timePtrText(r.LastRun)})
	}
	failures := grid{title: "Failed attempts by system and stage", columns: []string{"system", "stage", "failures", "runs"},
		numeric: []bool{false, false, true, true}}
	for _, r := range s.StageFailures {
		failures.rows = append(failures.rows, []string{r.System, r.Stage, itoa(r.Failures), itoa(r.Runs)})
	}
	stages := grid{title: "Stages",
		columns: []string{"system", "stage", "runs", "failed", "not_applicable", "failure_rate", "avg_duration_ms", "tokens", "cost_usd"},
		numeric: []bool{false, false, true, true, true, true, true, true, true}}
	for _, r := range s.Stages {
		stages.rows = append(stages.rows, []string{r.System, r.Stage, itoa(r.Runs), itoa(r.Failed), itoa(r.NotApplicable),
			rateText(r.FailureRate), durationText(r.AvgDurationMS), countPtrText(r.Tokens), costText(r.CostUSD)})
	}
	return []grid{by, failures, stages}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func timePtrText(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return timeText(*t)
}

func runGrid(title string, runs []reports.RunRow) grid {
	g := grid{
		title:   title,
		columns: []string{"run_id", "started_at", "status", "provider_requests", "provider_retries", "repair_iterations", "escalated", "stop_reason"},
		numeric: []bool{false, false, false, true, true, true, false, false},
	}
	for _, r := range runs {
		g.rows = append(g.rows, []string{
			r.RunID, timeText(r.StartedAt), r.Status,
			strconv.FormatInt(r.ProviderRequests, 10), countText(r.ProviderRetries), countPtrText(r.RepairIterations),
			strconv.FormatBool(r.Escalated), stringPtrText(r.StopReason),
		})
	}
	return g
}

func countGrid(title string, rows []reports.CountRow) grid {
	g := grid{title: title, columns: []string{"reason", "count", "runs"}, numeric: []bool{false, true, true}}
	for _, c := range rows {
		g.rows = append(g.rows, []string{c.Key, strconv.FormatInt(c.Count, 10), strconv.FormatInt(c.Runs, 10)})
	}
	return g
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
	if c.Metrics == nil {
		c.Metrics = reports.Metrics{}
	}
	c.Thresholds = nonNil(c.Thresholds)
	b := &c.Breakdowns
	b.ByProvider = nonNil(b.ByProvider)
	b.ByDay = nonNil(b.ByDay)
	b.WorstByRetries = utcRuns(b.WorstByRetries)
	b.WorstByIterations = utcRuns(b.WorstByIterations)
	b.StopReasons = nonNil(b.StopReasons)
	b.EscalationReasons = nonNil(b.EscalationReasons)
	b.JudgeReasons = nonNil(b.JudgeReasons)
	b.CandidateValidity = nonNil(b.CandidateValidity)
	c.Systems.BySystem = nonNil(c.Systems.BySystem)
	c.Systems.StageFailures = nonNil(c.Systems.StageFailures)
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
// field. Sections, in order:
//
//   - overview: key empty; metric is database, generated_at, filter_since,
//     filter_until, filter_runs (comma-separated), filter_provider, runs,
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
//     other_status, attempts, failed_attempts, retried_runs, first_run,
//     last_run, then the system's record metrics.
//   - failures_by_stage: key "system/stage"; metric is failures and runs.
//   - stages: key "system/stage"; metric is runs, failed, not_applicable,
//     failure_rate, avg_duration_ms, tokens and cost_usd.
//   - factory_audit and its sections: see AuditCSV.
//   - thresholds: key the rule; metric is metric (value: the metric's name),
//     severity, condition, threshold, value (the metric's value) and crossed
//     (true or false).
func writeReportCSV(buf *bytes.Buffer, r *reports.Report) error {
	cw := csv.NewWriter(buf)
	cw.Write([]string{"section", "key", "metric", "value", "numerator", "denominator"})
	value := func(section, key, name string, v any) {
		cw.Write([]string{section, key, name, csvCell(plainCell(v)), "", ""})
	}
	metric := func(section, key, name string, m reports.Metric) {
		cw.Write([]string{section, key, name,
			csvCell(plainCell(m.Value)), csvCell(plainCell(m.Numerator)), csvCell(plainCell(m.Denominator))})
	}

	for _, f := range overviewFields(r) {
		value("overview", "", f.name, f.value)
	}
	for _, p := range r.Scope.Paths {
		value("scope", "", "path", p)
	}
	value("scope", "", "runs_in_store", r.Scope.RunsInStore)
	value("scope", "", "runs_left_out", r.Scope.RunsLeftOut)
	names := make([]string, 0, len(r.Metrics))
	for n := range r.Metrics {
		names = append(names, n)
	}
	// A metric the report lacks gets no row, rather than a row claiming a
	// null value.
	for _, n := range metricOrder(names) {
		if m, ok := r.Metrics[n]; ok {
			metric("metrics", "", n, m)
		}
	}

	b := r.Breakdowns
	for _, p := range b.ByProvider {
		k := providerKey(p)
		value("by_provider", k, "requests", p.Requests)
		value("by_provider", k, "retried", p.Retried)
		value("by_provider", k, "failed", p.Failed)
		value("by_provider", k, "retries_total", p.RetriesTotal)
		metric("by_provider", k, "retry_rate", p.RetryRate)
		metric("by_provider", k, "failure_rate", p.FailureRate)
		value("by_provider", k, "avg_duration_ms", p.AvgDuration)
	}
	for _, d := range b.ByDay {
		names := make([]string, 0, len(d.Metrics))
		for n := range d.Metrics {
			names = append(names, n)
		}
		for _, n := range metricOrder(names) {
			if m, ok := d.Metrics[n]; ok {
				metric("by_day", d.Day, n, m)
			}
		}
	}
	for _, s := range []struct {
		section string
		runs    []reports.RunRow
	}{{"worst_runs_by_retries", b.WorstByRetries}, {"worst_runs_by_iterations", b.WorstByIterations}} {
		for _, run := range s.runs {
			value(s.section, run.RunID, "started_at", run.StartedAt)
			value(s.section, run.RunID, "status", run.Status)
			value(s.section, run.RunID, "provider_requests", run.ProviderRequests)
			value(s.section, run.RunID, "provider_retries", run.ProviderRetries)
			value(s.section, run.RunID, "repair_iterations", run.RepairIterations)
			value(s.section, run.RunID, "escalated", run.Escalated)
			value(s.section, run.RunID, "stop_reason", run.StopReason)
		}
	}
	for _, s := range []struct {
		section string
		rows    []reports.CountRow
	}{{"stop_reasons", b.StopReasons}, {"escalation_reasons", b.EscalationReasons}, {"judge_reasons", b.JudgeReasons}} {
		for _, c := range s.rows {
			value(s.section, c.Key, "count", c.Count)
			value(s.section, c.Key, "runs", c.Runs)
		}
	}
	for _, v := range b.CandidateValidity {
		value("candidate_validity", v.ProviderID, "candidates", v.Candidates)
		value("candidate_validity", v.ProviderID, "valid", v.Valid)
		metric("candidate_validity", v.ProviderID, "rate", v.Rate)
	}
	for _, sr := range r.Systems.BySystem {
		k := sr.System
		value("systems", k, "runs", sr.Runs)
		value("systems", k, "success", sr.Success)
		value("systems", k, "failure", sr.Failure)
		value("systems", k, "other_status", sr.OtherStatus)
		value("systems", k, "attempts", sr.Attempts)
		value("systems", k, "failed_attempts", sr.FailedAttempts)
		value("systems", k, "retried_runs", sr.RetriedRuns)
		value("systems", k, "first_run", sr.FirstRun)
		value("systems", k, "last_run", sr.LastRun)
		for _, n := range metricOrder(nil) {
			if m, ok := sr.Metrics[n]; ok {
				metric("systems", k, n, m)
			}
		}
	}
	for _, f := range r.Systems.StageFailures {
		k := f.System + "/" + f.Stage
		value("failures_by_stage", k, "failures", f.Failures)
		value("failures_by_stage", k, "runs", f.Runs)
	}
	for _, st := range r.Systems.Stages {
		k := st.System + "/" + st.Stage
		value("stages", k, "runs", st.Runs)
		value("stages", k, "failed", st.Failed)
		value("stages", k, "not_applicable", st.NotApplicable)
		metric("stages", k, "failure_rate", st.FailureRate)
		value("stages", k, "avg_duration_ms", st.AvgDurationMS)
		value("stages", k, "tokens", st.Tokens)
		value("stages", k, "cost_usd", st.CostUSD)
	}
	for _, row := range AuditCSV(r.FactoryAudit) {
		cw.Write(row)
	}
	for _, t := range r.Thresholds {
		value("thresholds", t.Rule, "metric", t.Metric)
		value("thresholds", t.Rule, "severity", t.Severity)
		value("thresholds", t.Rule, "condition", t.Condition)
		value("thresholds", t.Rule, "threshold", t.Threshold)
		value("thresholds", t.Rule, "value", t.Value)
		value("thresholds", t.Rule, "crossed", t.Crossed)
	}
	cw.Flush()
	return cw.Error()
}
