package render

import "github.com/orchstat/orchstat/reports"

// callSections are agents' model calls (OpenTelemetry, Claude Code,
// Codex): by system, then by provider and model. Table and markdown show
// them only when the report covers some call, so a report without agents
// stays as it was. Attempts, retries and their rates count only the calls
// whose attempts the record shows; "unknown" counts the others.
func callSections(c reports.Calls) []section {
	out := []section{
		callSystemTable.section(c.BySystem),
		callModelTable.section(c.ByModel),
	}
	if len(c.BySystem) == 0 {
		for i := range out {
			out[i].grid = nil
		}
	}
	return out
}

// callCommon are the columns both call tables show after their keys.
func callCommon() []column[reports.CallRow] {
	return []column[reports.CallRow]{
		intCol("calls", func(r reports.CallRow) int64 { return r.Calls }),
		intCol("failed", func(r reports.CallRow) int64 { return r.Failed }),
		intCol("retried", func(r reports.CallRow) int64 { return r.Retried }),
		intCol("unknown", func(r reports.CallRow) int64 { return r.Calls - r.WithAttempts }),
		callMetricCol("retry_rate", "call_retry_rate"),
		callMetricCol("failure_rate", "call_failure_rate"),
		{name: "attempts_per_call", numeric: true, text: func(r reports.CallRow) string {
			return MetricText("attempts_per_call", r.Metrics["attempts_per_call"].Value)
		}},
		numCol("backoff", func(r reports.CallRow) *float64 { return r.BackoffMS }, durationText),
		numCol("failed_attempt_tokens", func(r reports.CallRow) *float64 { return r.FailedTokens }, countPtrText),
		numCol("failed_attempt_cost", func(r reports.CallRow) *float64 { return r.FailedCostUSD }, costText),
		textCol("evidence", func(r reports.CallRow) string { return r.Evidence }),
	}
}

// callMore are a row's CSV-only values, then its metrics.
func callMore(r reports.CallRow) []field {
	return append([]field{
		{"with_attempts", r.WithAttempts}, {"attempts", r.Attempts}, {"tokens", r.Tokens}, {"cost_usd", r.CostUSD},
	}, presentMetrics(r.Metrics, reports.CallMetricNames)...)
}

// callMetricCol shows a call metric in the grid only: the CSV writes all
// of them after the counts.
func callMetricCol(name, metric string) column[reports.CallRow] {
	return column[reports.CallRow]{name: name, numeric: true,
		text: func(r reports.CallRow) string { return rateText(r.Metrics[metric]) }}
}

var callSystemTable = rowTable[reports.CallRow]{
	name: "calls", title: "Agents' model calls", key: func(r reports.CallRow) string { return r.System },
	columns: append([]column[reports.CallRow]{
		keyCol("system", func(r reports.CallRow) string { return r.System }),
	}, callCommon()...),
	more: callMore,
}

var callModelTable = rowTable[reports.CallRow]{
	name: "calls_by_provider_model", title: "Agents' model calls by provider and model",
	key: func(r reports.CallRow) string {
		return joinKey(r.System, stringPtrText(r.Provider), stringPtrText(r.Model))
	},
	columns: append([]column[reports.CallRow]{
		keyCol("system", func(r reports.CallRow) string { return r.System }),
		keyCol("provider", func(r reports.CallRow) string { return stringPtrText(r.Provider) }),
		keyCol("model", func(r reports.CallRow) string { return stringPtrText(r.Model) }),
	}, callCommon()...),
	more: callMore,
}
