package render

import (
	"slices"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
)

// The report's sections, as the flat formats show them (see sections.go).
// A value added to the model is added here, once, for table, markdown and
// CSV alike.

// reportSections lays r out as the flat formats' sections, in their fixed
// order; the table and markdown formats draw the grids of those that have
// one, the CSV writes every section's rows.
//
// At a terminal (width > 0) threshold cells show only the comparison;
// elsewhere they show the whole condition.
func reportSections(r *reports.Report, width int) []section {
	b := r.Breakdowns
	s := []section{
		fieldsSection("overview", "Overview", overviewFields(r), false),
		fieldsSection("scope", "", scopeFields(r.Scope), false),
		metricsSection(r, width),
		providerTable.section(b.ByProvider),
		dayTable(b.ByDay).section(b.ByDay),
		runTable("worst_runs_by_retries", "Worst runs by retries").section(b.WorstByRetries),
		runTable("worst_runs_by_iterations", "Worst runs by iterations").section(b.WorstByIterations),
		countTable("stop_reasons", "Stop reasons").section(b.StopReasons),
		countTable("escalation_reasons", "Escalation reasons").section(b.EscalationReasons),
		countTable("judge_reasons", "Judge reasons").section(b.JudgeReasons),
		validityTable.section(b.CandidateValidity),
	}
	if noTraceRuns(r) {
		// Eight "(none)" tables would come before what the scope holds;
		// scopeLines says once what was left out.
		for i := range s {
			if orchestratorSections[s[i].name] {
				s[i].grid = nil
			}
		}
	}
	s = append(s, systemSections(r.Systems)...)
	s = append(s, callSections(r.Calls)...)
	s = append(s, auditSections(r.FactoryAudit)...)
	return append(s, thresholdTable.section(r.Thresholds))
}

// orchestratorSections are the breakdowns of orchestrator traces, which
// the table, markdown and HTML formats leave out when no trace run is in
// scope (noTraceRuns). The JSON and CSV keep them.
var orchestratorSections = map[string]bool{
	"by_provider": true, "by_day": true, "worst_runs_by_retries": true, "worst_runs_by_iterations": true,
	"stop_reasons": true, "escalation_reasons": true, "judge_reasons": true, "candidate_validity": true,
}

// noTraceRuns reports whether the report's scope holds no orchestrator
// (or exec) trace run but holds something else: other systems' runs or
// agents' calls. Its orchestrator sections would all be empty.
func noTraceRuns(r *reports.Report) bool {
	m := r.Metrics["runs"] // distinct run ids in the traces in scope
	return (m.Value == nil || *m.Value == 0) && (hasRecords(r) || len(r.Calls.BySystem) > 0)
}

// orchestratorMetric reports whether the metric is computed from
// orchestrator traces (METRICS.md's), not from records or calls.
func orchestratorMetric(n string) bool { return !reports.RecordMetric(n) && !reports.CallMetric(n) }

// overviewFields are the overview's named values, and the filters the
// report was computed over.
func overviewFields(r *reports.Report) []field {
	var runs any // nil: no run filter, which is not the same as an empty one
	if r.Filters.Runs != nil {
		runs = strings.Join(r.Filters.Runs, ",")
	}
	o := r.Overview
	fields := []field{
		{"database", r.Database},
		{"generated_at", r.GeneratedAt},
		{"filter_since", r.Filters.Since},
		{"filter_until", r.Filters.Until},
		{"filter_runs", runs},
		{"filter_provider", r.Filters.Provider},
		{"runs", o.Runs},
	}
	for _, sr := range o.RunsBySystem {
		fields = append(fields, field{"runs." + sr.System, sr.Runs})
	}
	return append(fields, []field{
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
	}...)
}

// scopeFields are the CSV's scope rows (table and markdown say the scope
// in a line above the sections): one path row per path named, none for
// the whole store.
func scopeFields(s reports.Scope) []field {
	var fields []field
	for _, p := range s.Paths {
		fields = append(fields, field{"path", p})
	}
	return append(fields, field{"runs_in_store", s.RunsInStore}, field{"runs_left_out", s.RunsLeftOut})
}

// metricsSection is the report's overall metrics. The grid also lists a
// metric only a threshold names, with the thresholds beside their metric,
// and leaves out the other systems' metrics in a store that has none; the
// CSV has a row for each metric the report carries (thresholds have their
// own section).
func metricsSection(r *reports.Report, width int) section {
	names := metricNames(r.Metrics)
	for _, t := range r.Thresholds {
		names = append(names, t.Metric)
	}
	s := section{name: "metrics", grid: &grid{
		title:   "Metrics",
		columns: []string{"metric", "value", "numerator", "denominator", "threshold"},
		numeric: []bool{false, true, true, true, false},
	}}
	noRecords, noCalls, noTraces := !hasRecords(r), len(r.Calls.BySystem) == 0, noTraceRuns(r)
	for _, n := range metricOrder(names) {
		m, ok := r.Metrics[n]
		if ok {
			s.csv = append(s.csv, csvRow{"", field{n, m}})
		}
		if noRecords && reports.RecordMetric(n) || noCalls && reports.CallMetric(n) || noTraces && orchestratorMetric(n) {
			continue
		}
		s.grid.rows = append(s.grid.rows, []string{
			n, MetricText(n, m.Value), partText(m.Numerator), partText(m.Denominator), thresholdsText(r.Thresholds, n, width > 0),
		})
	}
	return s
}

// thresholdsText shows the thresholds on the metric named n.
func thresholdsText(ts []reports.Threshold, n string, short bool) string {
	var rules []string
	for _, t := range ts {
		if t.Metric == n {
			rules = append(rules, thresholdText(t, short))
		}
	}
	return strings.Join(rules, "; ")
}

// hasRecords reports whether the report covers any other system's run.
func hasRecords(r *reports.Report) bool {
	m := r.Metrics["record_runs"]
	return m.Value != nil && *m.Value > 0 || len(r.Systems.BySystem) > 0
}

var providerTable = rowTable[reports.ProviderRow]{
	name: "by_provider", title: "By provider and model", key: providerKey,
	columns: []column[reports.ProviderRow]{
		keyCol("provider", func(p reports.ProviderRow) string { return p.Provider }),
		keyCol("model", func(p reports.ProviderRow) string { return stringPtrText(p.Model) }),
		intCol("requests", func(p reports.ProviderRow) int64 { return p.Requests }),
		intCol("retried", func(p reports.ProviderRow) int64 { return p.Retried }),
		intCol("failed", func(p reports.ProviderRow) int64 { return p.Failed }),
		numCol("retries_total", func(p reports.ProviderRow) float64 { return p.RetriesTotal }, countText),
		rateCol("retry_rate", func(p reports.ProviderRow) reports.Metric { return p.RetryRate }),
		rateCol("failure_rate", func(p reports.ProviderRow) reports.Metric { return p.FailureRate }),
		titled(numCol("avg_duration_ms", func(p reports.ProviderRow) *float64 { return p.AvgDuration }, durationText), "avg_duration"),
	},
}

// dayTable has a grid column for each metric some day carries, but for the
// other systems' and agents' (days are orchestrator runs' days; record
// and call metrics are not split by day); the CSV has each day's own metrics.
func dayTable(days []reports.DayRow) rowTable[reports.DayRow] {
	var names []string
	for _, d := range days {
		names = append(names, metricNames(d.Metrics)...)
	}
	t := rowTable[reports.DayRow]{
		name: "by_day", title: "By day", key: func(d reports.DayRow) string { return d.Day },
		columns: []column[reports.DayRow]{keyCol("day", func(d reports.DayRow) string { return d.Day })},
		more: func(d reports.DayRow) []field {
			return presentMetrics(d.Metrics, metricOrder(metricNames(d.Metrics)))
		},
	}
	notByDay := func(n string) bool { return reports.RecordMetric(n) || reports.CallMetric(n) }
	for _, n := range slices.DeleteFunc(metricOrder(names), notByDay) {
		t.columns = append(t.columns, column[reports.DayRow]{name: n, numeric: true,
			text: func(d reports.DayRow) string { return MetricText(n, d.Metrics[n].Value) }})
	}
	return t
}

func runTable(name, title string) rowTable[reports.RunRow] {
	return rowTable[reports.RunRow]{
		name: name, title: title, key: func(r reports.RunRow) string { return r.RunID },
		columns: []column[reports.RunRow]{
			keyCol("run_id", func(r reports.RunRow) string { return r.RunID }),
			{name: "started_at", text: func(r reports.RunRow) string { return timeText(r.StartedAt) },
				value: func(r reports.RunRow) any { return r.StartedAt }},
			textCol("status", func(r reports.RunRow) string { return r.Status }),
			intCol("provider_requests", func(r reports.RunRow) int64 { return r.ProviderRequests }),
			numCol("provider_retries", func(r reports.RunRow) float64 { return r.ProviderRetries }, countText),
			numCol("repair_iterations", func(r reports.RunRow) *float64 { return r.RepairIterations }, countPtrText),
			{name: "escalated", text: func(r reports.RunRow) string { return strconv.FormatBool(r.Escalated) },
				value: func(r reports.RunRow) any { return r.Escalated }},
			{name: "stop_reason", text: func(r reports.RunRow) string { return stringPtrText(r.StopReason) },
				value: func(r reports.RunRow) any { return r.StopReason }},
		},
	}
}

func countTable(name, title string) rowTable[reports.CountRow] {
	return rowTable[reports.CountRow]{
		name: name, title: title, key: func(c reports.CountRow) string { return c.Key },
		columns: []column[reports.CountRow]{
			keyCol("reason", func(c reports.CountRow) string { return c.Key }),
			intCol("count", func(c reports.CountRow) int64 { return c.Count }),
			intCol("runs", func(c reports.CountRow) int64 { return c.Runs }),
		},
	}
}

var validityTable = rowTable[reports.ValidityRow]{
	name: "candidate_validity", title: "Candidate validity", key: func(v reports.ValidityRow) string { return v.ProviderID },
	columns: []column[reports.ValidityRow]{
		keyCol("provider_id", func(v reports.ValidityRow) string { return v.ProviderID }),
		intCol("candidates", func(v reports.ValidityRow) int64 { return v.Candidates }),
		intCol("valid", func(v reports.ValidityRow) int64 { return v.Valid }),
		rateCol("rate", func(v reports.ValidityRow) reports.Metric { return v.Rate }),
	},
}

// systemSections are the other systems' sections. Table and markdown show
// them only when some system's records are in scope, so an
// orchestrator-only report stays as it was.
func systemSections(s reports.Systems) []section {
	out := []section{
		systemTable.section(s.BySystem),
		stageFailureTable.section(s.StageFailures),
		stageTable.section(s.Stages),
	}
	if len(s.BySystem) == 0 {
		for i := range out {
			out[i].grid = nil
		}
	}
	return out
}

// systemTable's grid shows three of a system's record metrics; the CSV has
// every one it carries, after the counts.
var systemTable = rowTable[reports.SystemRow]{
	name: "systems", title: "Other systems", key: func(r reports.SystemRow) string { return r.System },
	columns: []column[reports.SystemRow]{
		keyCol("system", func(r reports.SystemRow) string { return r.System }),
		intCol("runs", func(r reports.SystemRow) int64 { return r.Runs }),
		intCol("success", func(r reports.SystemRow) int64 { return r.Success }),
		intCol("failure", func(r reports.SystemRow) int64 { return r.Failure }),
		intCol("cancelled", func(r reports.SystemRow) int64 { return r.Cancelled }),
		intCol("unfinished", func(r reports.SystemRow) int64 { return r.Unfinished }),
		intCol("other_status", func(r reports.SystemRow) int64 { return r.OtherStatus }),
		attemptCol("attempts", func(r reports.SystemRow) int64 { return r.Attempts }),
		attemptCol("failed_attempts", func(r reports.SystemRow) int64 { return r.FailedAttempts }),
		attemptCol("retried_runs", func(r reports.SystemRow) int64 { return r.RetriedRuns }),
		systemMetricCol("retry_rate", "record_retry_rate"),
		systemMetricCol("wasted_attempt_rate", "wasted_attempt_rate"),
		systemMetricCol("signature_repeat_rate", "signature_repeat_rate"),
		{name: "first_run", text: func(r reports.SystemRow) string { return timePtrText(r.FirstRun) },
			value: func(r reports.SystemRow) any { return r.FirstRun }},
		{name: "last_run", text: func(r reports.SystemRow) string { return timePtrText(r.LastRun) },
			value: func(r reports.SystemRow) any { return r.LastRun }},
	},
	more: func(r reports.SystemRow) []field {
		return presentMetrics(r.Metrics, metricOrder(metricNames(r.Metrics)))
	},
}

// attemptCol is a count of a system's attempts, "-" in the grid for a
// system whose records hold no attempts (agents, whose attempts are their
// calls', in their own section): 0 there would read as "never tried".
// The CSV keeps the 0.
func attemptCol(name string, v func(reports.SystemRow) int64) column[reports.SystemRow] {
	c := intCol(name, v)
	c.text = func(r reports.SystemRow) string {
		if r.Attempts == 0 {
			return "-"
		}
		return strconv.FormatInt(v(r), 10)
	}
	return c
}

// titled is c with its grid heading set to title.
func titled[T any](c column[T], title string) column[T] {
	c.title = title
	return c
}

// systemMetricCol shows a system's record metric in the grid only: the
// CSV writes all of them after the counts.
func systemMetricCol(name, metric string) column[reports.SystemRow] {
	return column[reports.SystemRow]{name: name, numeric: true,
		text: func(r reports.SystemRow) string { return rateText(r.Metrics[metric]) }}
}

var stageFailureTable = rowTable[reports.StageFailureRow]{
	name: "failures_by_stage", title: "Failed attempts by system and stage",
	key: func(r reports.StageFailureRow) string { return joinKey(r.System, r.Stage) },
	columns: []column[reports.StageFailureRow]{
		keyCol("system", func(r reports.StageFailureRow) string { return r.System }),
		keyCol("stage", func(r reports.StageFailureRow) string { return r.Stage }),
		intCol("failures", func(r reports.StageFailureRow) int64 { return r.Failures }),
		intCol("runs", func(r reports.StageFailureRow) int64 { return r.Runs }),
	},
}

var stageTable = rowTable[reports.StageRow]{
	name: "stages", title: "Stages",
	key: func(r reports.StageRow) string { return joinKey(r.System, r.Stage) },
	columns: []column[reports.StageRow]{
		keyCol("system", func(r reports.StageRow) string { return r.System }),
		keyCol("stage", func(r reports.StageRow) string { return r.Stage }),
		intCol("runs", func(r reports.StageRow) int64 { return r.Runs }),
		intCol("failed", func(r reports.StageRow) int64 { return r.Failed }),
		intCol("not_applicable", func(r reports.StageRow) int64 { return r.NotApplicable }),
		rateCol("failure_rate", func(r reports.StageRow) reports.Metric { return r.FailureRate }),
		titled(numCol("avg_duration_ms", func(r reports.StageRow) *float64 { return r.AvgDurationMS }, durationText), "avg_duration"),
		numCol("tokens", func(r reports.StageRow) *float64 { return r.Tokens }, countPtrText),
		numCol("cost_usd", func(r reports.StageRow) *float64 { return r.CostUSD }, costText),
	},
}

// thresholdTable is CSV only: table and markdown show thresholds beside
// their metric.
var thresholdTable = rowTable[reports.Threshold]{
	name: "thresholds", key: func(t reports.Threshold) string { return t.Rule },
	columns: []column[reports.Threshold]{
		csvCol("metric", func(t reports.Threshold) any { return t.Metric }),
		csvCol("severity", func(t reports.Threshold) any { return t.Severity }),
		csvCol("condition", func(t reports.Threshold) any { return t.Condition }),
		csvCol("threshold", func(t reports.Threshold) any { return t.Threshold }),
		csvCol("value", func(t reports.Threshold) any { return t.Value }),
		csvCol("crossed", func(t reports.Threshold) any { return t.Crossed }),
	},
}
