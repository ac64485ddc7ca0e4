package reports

import (
	"fmt"
	"strconv"
	"strings"
)

// The trace metrics' counts, declared once as what each run contributes.
// Every count the catalog names for FamilyTrace (MetricSpec.Num, Den) is a
// fold over runs (GroupCounts) of counts kept per run (RunCounts), each an
// aggregate over one event table's rows of that run. The store renders
// both in DuckDB's SQL (the per-run figures it keeps at ingest, and the
// report's fold over them); other dialects' views render the same
// declarations, so the metric is never written twice.

// Agg is how a per-run count aggregates its table's rows of one run.
type Agg int

const (
	// CountRows counts the rows that match.
	CountRows Agg = iota
	// CountKeys counts the distinct values of Col among the rows that
	// match, a missing value (NULL) as one key of its own and -0 as 0:
	// METRICS.md's distinct (run, iteration) pairs.
	CountKeys
	// SumOf adds up Col over the rows that match: 0 when none, or none
	// states it.
	SumOf
	// MaxOf is the highest Col among the rows that match: missing (NULL)
	// when none states it.
	MaxOf
)

// Op is how a condition compares a column.
type Op string

const (
	Eq      Op = "="
	Gt      Op = ">"
	NotNull Op = "IS NOT NULL"
)

// Cond is one condition on a row: Col Op Val. Val is a string, a float64
// or a bool, and nil for NotNull. A NULL column matches no Eq or Gt, as in
// SQL.
type Cond struct {
	Col string
	Op  Op
	Val any
}

// RunCount declares one count kept per run.
type RunCount struct {
	// Name is the count's column in the per-run figures.
	Name string
	// Table is the event table counted, which has a run_id column.
	Table string
	// Where are the conditions a row must meet, all of them.
	Where []Cond
	Agg   Agg
	// Col is the column CountKeys, SumOf and MaxOf read.
	Col string
	// ByProvider marks a provider request count, which a provider filter
	// restricts to that provider's requests: it is also kept per run and
	// value of the table's provider column.
	ByProvider bool
}

// ProviderCol is the column ByProvider counts are split by.
const ProviderCol = "provider"

// Present is the condition, in SQL over the count's column name col, that
// a run has anything the count counts: a MaxOf that is not NULL, another
// count above 0.
func (c RunCount) Present(col string) string {
	if c.Agg == MaxOf {
		return col + " IS NOT NULL"
	}
	return col + " > 0"
}

// RunCounts are the counts kept per run, grouped by table in the order
// the per-run figures hold them.
var RunCounts = []RunCount{
	{Name: "requests", Table: "provider_request_finishes", Agg: CountRows, ByProvider: true},
	{Name: "requests_retried", Table: "provider_request_finishes", Where: []Cond{{"retries", Gt, 0.0}}, Agg: CountRows, ByProvider: true},
	{Name: "requests_failed", Table: "provider_request_finishes", Where: []Cond{{"success", Eq, false}}, Agg: CountRows, ByProvider: true},
	{Name: "request_retries", Table: "provider_request_finishes", Agg: SumOf, Col: "retries", ByProvider: true},
	{Name: "l2_iterations", Table: "l2_events", Where: []Cond{{"type", Eq, "IterationStarted"}}, Agg: CountRows},
	{Name: "repair_max_iteration", Table: "l2_events", Where: []Cond{{"type", Eq, "RepairAttempted"}, {"iteration", NotNull, nil}}, Agg: MaxOf, Col: "iteration"},
	{Name: "l2_escalations", Table: "escalations", Where: []Cond{{"from_level", Eq, "L2"}}, Agg: CountRows},
	{Name: "l3_steps", Table: "l3_candidates", Agg: CountKeys, Col: "iteration"},
	{Name: "candidates", Table: "l3_candidates", Agg: CountRows},
	{Name: "valid_candidates", Table: "l3_candidates", Where: []Cond{{"valid", Eq, true}}, Agg: CountRows},
	{Name: "diagnosed_steps", Table: "diagnoses", Where: []Cond{{"type", Eq, "DiagnosisStarted"}}, Agg: CountKeys, Col: "iteration"},
	{Name: "diagnoses", Table: "diagnoses", Where: []Cond{{"type", Eq, "DiagnosisStarted"}}, Agg: CountRows},
	{Name: "judge_invocations", Table: "judge_calls", Where: []Cond{{"type", Eq, "JudgeInvoked"}}, Agg: CountRows},
	{Name: "failures_finished", Table: "run_events", Where: []Cond{{"type", Eq, "RunFinished"}, {"status", Eq, "failure"}}, Agg: CountRows},
}

// Fold is how a group's count is made of its runs' counts.
type Fold int

const (
	// AllRuns counts the group's runs.
	AllRuns Fold = iota
	// SumRuns adds up one per-run count over the group's runs.
	SumRuns
	// RunsWith counts the runs that have any of the per-run counts Of
	// (RunCount.Present).
	RunsWith
)

// GroupCount declares one count of a group of runs: a column of the
// catalog's FamilyTrace Num or Den.
type GroupCount struct {
	Name string
	Fold Fold
	// Of names the RunCounts folded: one for SumRuns, one or more for
	// RunsWith.
	Of []string
}

// GroupCounts are every count FamilyTrace metrics are made of, in the
// order the report's query returns them.
var GroupCounts = []GroupCount{
	{Name: "runs", Fold: AllRuns},
	{Name: "requests", Fold: SumRuns, Of: []string{"requests"}},
	{Name: "requests_retried", Fold: SumRuns, Of: []string{"requests_retried"}},
	{Name: "requests_failed", Fold: SumRuns, Of: []string{"requests_failed"}},
	{Name: "request_retries", Fold: SumRuns, Of: []string{"request_retries"}},
	{Name: "l2_runs", Fold: RunsWith, Of: []string{"l2_iterations"}},
	{Name: "l2_escalated", Fold: RunsWith, Of: []string{"l2_escalations"}},
	{Name: "l2_or_escalated", Fold: RunsWith, Of: []string{"l2_iterations", "l2_escalations"}},
	{Name: "repair_runs", Fold: RunsWith, Of: []string{"repair_max_iteration"}},
	{Name: "repair_iterations", Fold: SumRuns, Of: []string{"repair_max_iteration"}},
	{Name: "l3_steps", Fold: SumRuns, Of: []string{"l3_steps"}},
	{Name: "diagnosed_steps", Fold: SumRuns, Of: []string{"diagnosed_steps"}},
	{Name: "diagnoses", Fold: SumRuns, Of: []string{"diagnoses"}},
	{Name: "judge_invocations", Fold: SumRuns, Of: []string{"judge_invocations"}},
	{Name: "l3_runs", Fold: RunsWith, Of: []string{"candidates"}},
	{Name: "candidates", Fold: SumRuns, Of: []string{"candidates"}},
	{Name: "valid_candidates", Fold: SumRuns, Of: []string{"valid_candidates"}},
	{Name: "failed_runs", Fold: RunsWith, Of: []string{"failures_finished"}},
}

// RunCountOf is the per-run count named name.
func RunCountOf(name string) (RunCount, bool) {
	for _, c := range RunCounts {
		if c.Name == name {
			return c, true
		}
	}
	return RunCount{}, false
}

// RunCountTables are the tables RunCounts read, once each, in order.
func RunCountTables() []string {
	var out []string
	for _, c := range RunCounts {
		if len(out) == 0 || out[len(out)-1] != c.Table {
			out = append(out, c.Table)
		}
	}
	return out
}

// DuckDB renders the declarations in DuckDB's SQL.

// SQLValue renders a condition's value as an SQL literal.
func SQLValue(v any) string {
	switch x := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	panic(fmt.Sprintf("reports: no SQL literal for %T", v))
}

// SQL renders the condition over its column.
func (c Cond) SQL() string {
	if c.Op == NotNull {
		return c.Col + " IS NOT NULL"
	}
	return c.Col + " " + string(c.Op) + " " + SQLValue(c.Val)
}

// whereSQL is the conjunction of the conditions, "" when there are none.
func (c RunCount) whereSQL() string {
	var w []string
	for _, x := range c.Where {
		w = append(w, x.SQL())
	}
	return strings.Join(w, " AND ")
}

// DuckDBExpr renders the count as a DuckDB aggregate over its table's rows
// of one group (a run, or a run and provider).
func (c RunCount) DuckDBExpr() string {
	filter := ""
	if w := c.whereSQL(); w != "" {
		filter = " FILTER (WHERE " + w + ")"
	}
	switch c.Agg {
	case CountKeys:
		// "+ 0.0" folds -0 into 0; count(DISTINCT) leaves NULL out, so a
		// missing key adds one when any row lacks it.
		return "(count(DISTINCT " + c.Col + " + 0.0)" + filter + " + coalesce(max(CASE WHEN " + c.Col + " IS NULL THEN 1 ELSE 0 END)" + filter + ", 0))"
	case SumOf:
		return "coalesce(sum(" + c.Col + ")" + filter + ", 0)"
	case MaxOf:
		return "max(" + c.Col + ")" + filter
	}
	return "count(*)" + filter
}

// DuckDBFold renders a group count as a DuckDB aggregate over per-run
// figures whose columns are named as RunCounts, read through alias (e.g.
// "f." or "").
func (g GroupCount) DuckDBFold(alias string) string {
	switch g.Fold {
	case SumRuns:
		return "coalesce(sum(" + alias + g.Of[0] + "), 0)"
	case RunsWith:
		var or []string
		for _, n := range g.Of {
			c, _ := RunCountOf(n)
			or = append(or, c.Present(alias+n))
		}
		return "count(*) FILTER (WHERE " + strings.Join(or, " OR ") + ")"
	}
	return "count(*)"
}

// DuckDBRunCounts renders a query of each run's counts from the event
// tables: one row per run of runs (a table, or a parenthesised query, with
// a run_id column), its columns run_id and then RunCounts' in order. Each
// event table is read once, its rows and runs' restricted by where when
// it is set (a condition on columns every event table has, run_id and
// file_id, such as "run_id IN (SELECT run_id FROM touched)").
// With byProvider it is ByProvider counts only, one row per run and
// provider that has requests, the provider column after run_id.
func DuckDBRunCounts(runs, where string, byProvider bool) string {
	cond := ""
	if where != "" {
		cond = " WHERE " + where
	}
	key := "run_id"
	if byProvider {
		key = "run_id, " + ProviderCol
	}
	var ctes, cols, joins, aliases []string
	for i, t := range RunCountTables() {
		var aggs []string
		for _, c := range RunCounts {
			if c.Table == t && (!byProvider || c.ByProvider) {
				aggs = append(aggs, c.DuckDBExpr()+" AS "+c.Name)
			}
		}
		if len(aggs) == 0 {
			continue
		}
		alias := fmt.Sprintf("t%d", i)
		ctes = append(ctes, alias+" AS (SELECT "+key+", "+strings.Join(aggs, ", ")+" FROM "+t+cond+" GROUP BY ALL)")
		joins = append(joins, "LEFT JOIN "+alias+" USING (run_id)")
		aliases = append(aliases, alias)
	}
	for _, c := range RunCounts {
		if byProvider && !c.ByProvider {
			continue
		}
		if c.Agg == MaxOf {
			cols = append(cols, c.Name)
		} else {
			cols = append(cols, "coalesce("+c.Name+", 0) AS "+c.Name)
		}
	}
	if byProvider {
		// ByProvider counts all read the provider requests' table, whose
		// rows give each run's providers.
		return "WITH " + strings.Join(ctes, ",\n") + "\nSELECT run_id, " + ProviderCol + ", " + strings.Join(cols, ", ") + " FROM " + aliases[0]
	}
	return "WITH r AS (SELECT DISTINCT run_id FROM " + runs + cond + "),\n" + strings.Join(ctes, ",\n") +
		"\nSELECT r.run_id, " + strings.Join(cols, ", ") + "\nFROM r " + strings.Join(joins, " ")
}
