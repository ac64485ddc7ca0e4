package render

import "github.com/orchstat/orchstat/model/reports"

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

// callCounts are the columns both call tables show after their keys.
func callCounts() []column[reports.CallRow] {
	return []column[reports.CallRow]{
		intCol("calls", func(r reports.CallRow) int64 { return r.Calls }),
		intCol("failed", func(r reports.CallRow) int64 { return r.Failed }),
		intCol("retried", func(r reports.CallRow) int64 { return r.Retried }),
		intCol("unknown", func(r reports.CallRow) int64 { return r.Calls - r.WithAttempts }),
		callGridCol("retry_rate", func(r reports.CallRow) string { return rateText(r.Metrics["call_retry_rate"]) }),
		callGridCol("failure_rate", func(r reports.CallRow) string { return rateText(r.Metrics["call_failure_rate"]) }),
	}
}

// callDetail are the columns only the by-system grid shows, so that the
// by-model one fits a terminal; the CSV has them for both (callMore).
func callDetail() []column[reports.CallRow] {
	return []column[reports.CallRow]{
		callGridCol("attempts_per_call", func(r reports.CallRow) string {
			return MetricText("attempts_per_call", r.Metrics["attempts_per_call"].Value)
		}),
		callGridCol("backoff", func(r reports.CallRow) string { return durationText(r.BackoffMS) }),
		callGridCol("failed_attempt_tokens", func(r reports.CallRow) string { return countPtrText(r.FailedTokens) }),
		callGridCol("failed_attempt_cost", func(r reports.CallRow) string { return costText(r.FailedCostUSD) }),
		{name: "evidence", text: func(r reports.CallRow) string { return r.Evidence }},
		// Copies left out are said: report --by device says where.
		callGridCol("counted_once", func(r reports.CallRow) string { return itoa(r.CountedOnce) }),
	}
}

// callGridCol is a numeric column of the grid only: the CSV writes the
// value with the others in callMore.
func callGridCol(name string, text func(reports.CallRow) string) column[reports.CallRow] {
	return column[reports.CallRow]{name: name, numeric: true, text: text}
}

// callMore are a row's values beyond its counts, then its metrics, for
// the CSV.
func callMore(r reports.CallRow) []field {
	return append([]field{
		{"with_attempts", r.WithAttempts}, {"attempts", r.Attempts}, {"backoff_ms", r.BackoffMS},
		{"tokens", r.Tokens}, {"input_tokens", r.InputTokens}, {"cache_read_tokens", r.CacheReadTokens},
		{"cache_write_tokens", r.CacheWriteTokens}, {"output_tokens", r.OutputTokens}, {"reasoning_tokens", r.ReasoningTokens},
		{"cost_usd", r.CostUSD}, {"no_price_calls", r.NoPriceCalls}, {"evidence", r.Evidence}, {"counted_once", r.CountedOnce},
	}, presentMetrics(r.Metrics, reports.CallMetricNames[1:])...) // calls is a column already
}

var callSystemTable = rowTable[reports.CallRow]{
	name: "calls", title: "Agents' model calls", key: func(r reports.CallRow) string { return r.System },
	columns: append(append([]column[reports.CallRow]{
		keyCol("system", func(r reports.CallRow) string { return r.System }),
	}, callCounts()...), callDetail()...),
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
	}, append(callCounts(), callTokens()...)...),
	more: callMore,
}

// callTokens are the by-model grid's token columns, the four kinds apart
// as the store keeps them, and their cost (the CSV has them in callMore).
func callTokens() []column[reports.CallRow] {
	return []column[reports.CallRow]{
		callGridCol("input", func(r reports.CallRow) string { return countPtrText(r.InputTokens) }),
		callGridCol("cache_read", func(r reports.CallRow) string { return countPtrText(r.CacheReadTokens) }),
		callGridCol("cache_write", func(r reports.CallRow) string { return countPtrText(r.CacheWriteTokens) }),
		callGridCol("output", func(r reports.CallRow) string { return countPtrText(r.OutputTokens) }),
		callGridCol("cost", callCostText),
	}
}

// callCostText is a row's cost, recorded or priced, marked "+?" when
// some of its calls have no price (docs/prices.md), so that a partial
// sum never reads as complete.
func callCostText(r reports.CallRow) string {
	if r.NoPriceCalls == 0 {
		return costText(r.CostUSD)
	}
	if r.CostUSD == nil {
		return "no price"
	}
	return costText(r.CostUSD) + "+?"
}
