package query

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/orchstat/orchstat/model/alerts"
	"github.com/orchstat/orchstat/model/reports"
)

// Agents' model calls (the calls table) are read through their runs: a
// call is in scope when its record run is, so time windows, --last, run
// ids and paths select calls as they select the other systems' runs. A
// provider filter, which selects no record run, selects the calls of that
// provider instead.

// callsOnce is every call once, priced (see pricing.go): a call copied into another file (a
// Claude Code sub-agent's file replaying its parent's messages, a
// resumed session, a copied collector file) has the same system,
// session and call id there. It counts once, in the session's own run
// when one copy is there (as Claude Code's parent, not the sub-agent
// that replayed it), else from the file read first.
// copies is how many rows the store holds of it (1 for a call with no id),
// so that a copy left out is counted, never dropped in silence.
const callsOnce = `SELECT *, CASE WHEN call_id IS NULL THEN 1 ELSE count(*) OVER (PARTITION BY system, session, call_id) END AS copies
  FROM priced_calls
  QUALIFY call_id IS NULL OR row_number() OVER (
    PARTITION BY system, session, call_id ORDER BY run_id IS DISTINCT FROM session, file_id, line) = 1`

// callScope renders the CTE "cs" of the calls in scope, with grp the
// group expression over a call c.
func (f Filter) callScope(group string) (string, []any) {
	g := f
	g.Provider = ""
	cte, args := g.recordScope("NULL")
	cond := "true"
	if f.Provider != "" {
		cond = "lower(c.provider) = lower(?)"
		args = append(args, f.Provider)
	}
	return cte + `,
cs AS (SELECT ` + group + ` AS grp, c.* FROM (` + callsOnce + `) c JOIN rs USING (system, run_id) WHERE ` + cond + `)`, args
}

// callAggregates are the sums one group of calls makes, in the order
// scanCallRow reads them: the call family's declared counts
// (reports.CallCounts, but the derived ones, which callCountsOf makes),
// then the costs, which need the prices (pricing.go), and the copies.
var callAggregates = callCounted() + `,
  sum(cost_usd),
  sum(failed_cost_usd),
  count(*) FILTER (WHERE no_price),
  count(*) FILTER (WHERE cost_usd IS NULL AND (input_tokens IS NOT NULL OR cache_read_tokens IS NOT NULL
    OR cache_write_tokens IS NOT NULL OR output_tokens IS NOT NULL)),
  count(*) FILTER (WHERE failed_cost_usd IS NULL AND (failed_input_tokens IS NOT NULL OR failed_output_tokens IS NOT NULL)),
  count(*) FILTER (WHERE copies > 1)`

// callCounted renders reports.CallCounts' aggregates, in their order.
func callCounted() string {
	var out []string
	for _, c := range reports.CallCounts {
		if c.Derived == "" {
			out = append(out, c.DuckDBAggregate())
		}
	}
	return strings.Join(out, ",\n  ")
}

// evidenceCounts renders, per group, how many calls each evidence covers.
const evidenceCounts = `SELECT grp, string_agg(evidence || ' ' || n, ', ' ORDER BY n DESC, evidence) FROM (
  SELECT grp, coalesce(evidence, 'none') AS evidence, count(*) AS n FROM cs GROUP BY ALL) GROUP BY grp`

// scanCallRow reads a group's key columns (lead), callAggregates and its
// evidence counts into a row, and computes its metrics.
func scanCallRow(rs *sql.Rows, lead []any, row *reports.CallRow) error {
	var n callCounts
	var evidence sql.NullString
	var backoff, tokens, in, read, write, out, reasoning, failedTokens, cost, failedCost sql.NullFloat64
	dest := append(lead, &row.Calls, &row.Failed, &n.known, &row.WithAttempts, &row.Attempts, &row.Retried,
		&backoff, &tokens, &in, &read, &write, &out, &reasoning, &failedTokens, &cost, &failedCost, &row.NoPriceCalls,
		&n.costUnknown, &n.failedCostUnknown, &row.CountedOnce, &evidence)
	if err := rs.Scan(dest...); err != nil {
		return err
	}
	row.Evidence = evidence.String
	row.BackoffMS, row.Tokens, row.FailedTokens = floatPtr(backoff), floatPtr(tokens), floatPtr(failedTokens)
	row.InputTokens, row.CacheReadTokens, row.CacheWriteTokens = floatPtr(in), floatPtr(read), floatPtr(write)
	row.OutputTokens, row.ReasoningTokens = floatPtr(out), floatPtr(reasoning)
	row.CostUSD, row.FailedCostUSD = floatPtr(cost), floatPtr(failedCost)
	row.Metrics = callMetricsOf(row, n)
	return nil
}

// callCounts are a group's counts that its CallRow does not keep.
type callCounts struct {
	known float64 // calls that say whether they succeeded
	// costUnknown counts the calls with tokens whose cost is unknown: no
	// recorded cost and no price for their model (priced_calls leaves
	// their cost NULL); failedCostUnknown the same for the tokens of
	// failed attempts. Cost sums leave them out and say how many.
	costUnknown, failedCostUnknown float64
}

// callMetricsOf computes the call metrics from a group's sums and counts.
func callMetricsOf(row *reports.CallRow, n callCounts) reports.Metrics {
	return reports.MetricsOf(reports.FamilyCall, callCountsOf(row, n))
}

// callCountsOf names a group's sums and counts as the catalog's call
// metrics do (MetricSpec.Num, Den and Unpriced).
func callCountsOf(row *reports.CallRow, n callCounts) map[string]*float64 {
	f := func(v float64) *float64 { return &v }
	withAttempts := float64(row.WithAttempts)
	var backoff *float64
	if row.BackoffMS != nil {
		backoff = f(*row.BackoffMS / 1000)
	}
	return map[string]*float64{
		"calls":                f(float64(row.Calls)),
		"retried":              f(float64(row.Retried)),
		"with_attempts":        f(withAttempts),
		"failed":               f(float64(row.Failed)),
		"known":                f(n.known),
		"attempts":             f(float64(row.Attempts)),
		"retries":              f(float64(row.Attempts) - withAttempts),
		"attempts_unknown":     f(float64(row.Calls) - withAttempts),
		"backoff_seconds":      backoff,
		"failed_tokens":        row.FailedTokens,
		"failed_cost":          row.FailedCostUSD,
		"failed_cost_unpriced": f(n.failedCostUnknown),
		"cost":                 row.CostUSD,
		"cost_unpriced":        f(n.costUnknown),
		"input_tokens":         row.InputTokens,
		"cache_read_tokens":    row.CacheReadTokens,
		"cache_write_tokens":   row.CacheWriteTokens,
		"output_tokens":        row.OutputTokens,
	}
}

func floatPtr(v sql.NullFloat64) *float64 {
	if !v.Valid {
		return nil
	}
	return &v.Float64
}

// hasCalls reports whether the store holds any agent's model call.
func hasCalls(ctx context.Context, q querier) (bool, error) {
	var n int64
	err := eachRow(ctx, q, "looking for calls", `SELECT count(*) FROM (SELECT 1 FROM calls LIMIT 1)`, nil,
		func(rs *sql.Rows) error { return rs.Scan(&n) })
	return n > 0, err
}

// callGroups computes a CallRow per group of the calls f selects,
// grouped by the calls table's columns keys (system, provider, model),
// with each group's key values in keys' order ("" for NULL).
func callGroups(ctx context.Context, q querier, f Filter, keys ...string) ([][]string, []reports.CallRow, error) {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = "coalesce(" + k + ", '')"
	}
	cols := strings.Join(parts, ", ")
	cte, args := f.callScope("concat_ws(chr(0), " + cols + ")")
	query := "WITH " + cte + ", ev(grp, evidence) AS (" + evidenceCounts + `)
SELECT ` + cols + `, ` + callAggregates + `, any_value(ev.evidence)
FROM cs LEFT JOIN ev USING (grp) GROUP BY ` + cols + ` ORDER BY ` + cols
	var labels [][]string
	var out []reports.CallRow
	err := eachRow(ctx, q, "computing agents' calls", query, args, func(rs *sql.Rows) error {
		vals := make([]string, len(keys))
		lead := make([]any, len(keys))
		for i := range vals {
			lead[i] = &vals[i]
		}
		var row reports.CallRow
		if err := scanCallRow(rs, lead, &row); err != nil {
			return err
		}
		labels, out = append(labels, vals), append(out, row)
		return nil
	})
	return labels, out, err
}

// emptyCallMetrics are the call metrics of no call.
func emptyCallMetrics() reports.Metrics { return callMetricsOf(&reports.CallRow{}, callCounts{}) }

// callMetrics adds the call metrics over f to m.
func callMetrics(ctx context.Context, q querier, f Filter, m reports.Metrics) error {
	maps.Copy(m, emptyCallMetrics())
	if ok, err := hasCalls(ctx, q); err != nil || !ok {
		return err
	}
	_, rows, err := callGroups(ctx, q, f, "'all'")
	if err == nil && len(rows) == 1 {
		maps.Copy(m, rows[0].Metrics)
	}
	return err
}

// callsSection fills the report's calls section.
func callsSection(ctx context.Context, q querier, f Filter, out *reports.Calls) error {
	out.BySystem, out.ByModel = []reports.CallRow{}, []reports.CallRow{}
	if ok, err := hasCalls(ctx, q); err != nil || !ok {
		return err
	}
	keys, rows, err := callGroups(ctx, q, f, "system")
	if err != nil {
		return err
	}
	for i := range rows {
		rows[i].System = keys[i][0]
	}
	out.BySystem = rows
	keys, rows, err = callGroups(ctx, q, f, "system", "provider", "model")
	if err != nil {
		return err
	}
	for i := range rows {
		p, m := keys[i][1], keys[i][2]
		rows[i].System, rows[i].Provider, rows[i].Model = keys[i][0], &p, &m
	}
	out.ByModel = rows
	return nil
}

// CallSeries splits a call metric of the calls f selects by the labels by
// names (system, provider and/or model).
func (st *Store) CallSeries(ctx context.Context, f Filter, metric string, by []string) ([]alerts.Series, error) {
	labels := reports.LabelsOf(metric)
	for _, l := range by {
		if !slices.Contains(labels, l) {
			return nil, fmt.Errorf("%s cannot be split by %q (only by %s)", metric, l, strings.Join(labels, ", "))
		}
	}
	if ok, err := hasCalls(ctx, st.conn); err != nil || !ok {
		return nil, err // no call, no sample: no data
	}
	if err := st.priced(ctx); err != nil {
		return nil, err
	}
	keys, rows, err := callGroups(ctx, st.conn, f, by...)
	if err != nil {
		return nil, err
	}
	out := make([]alerts.Series, 0, len(rows))
	for i, r := range rows {
		s := alerts.Series{Labels: map[string]string{}, Metric: r.Metrics[metric]}
		for j, l := range by {
			s.Labels[l] = keys[i][j]
		}
		out = append(out, s)
	}
	return out, nil
}
