package sqlviews

import (
	"slices"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/reports"
)

// The counts the catalog's metrics are made of (MetricSpec.Num, Den), as
// aggregates over relations: views that select the rows the report's
// queries count, as the union store would hold the lake's rows. Each
// relation is a template in SQL all four engines take; {{t "x"}} names
// the lake table x, {{v "x"}} another relation, {{q "x"}} quotes an
// identifier, and {{lag "x" "window"}} is x's previous value.

// Relation is a view the counts read.
type Relation struct {
	Name string // the view is orchstat_<Name>
	Doc  string // why it selects what it does: the view's comment
	SQL  string
}

// Agg is how a count aggregates its relation's rows.
type Agg int

const (
	// Rows counts the rows (where Where holds).
	Rows Agg = iota
	// Distinct counts the distinct non-NULL values of Expr (where Where holds).
	Distinct
	// Sum adds Expr up (where Where holds); no row or only NULLs give
	// NULL, "nothing recorded", unless Zero.
	Sum
	// Derived is an expression (Expr) over the family's other counts.
	Derived
)

// Count is one count a family's metrics name.
type Count struct {
	Name  string // the catalog's Num, Den or Unpriced
	From  string // the relation it aggregates; none for Derived
	Agg   Agg
	Expr  string
	Where string
	// Zero makes a Sum of nothing 0: a Count metric is 0 when there is
	// nothing to count.
	Zero bool
}

// Family is one catalog family's relations and counts.
type Family struct {
	Family    reports.Family
	Relations []Relation
	Counts    []Count
	// Groups are the label sets the family's metrics are also split by,
	// as the report splits them (each a view of its own): the metrics
	// whose catalog Labels hold the set's.
	Groups [][]string
	// SplitCounts, when set, are the counts the splits read in place of
	// Counts (the trace family's per-run counts cannot be split by a
	// request's provider and model).
	SplitCounts []Count
	// LeftOut names the catalog's counts these views cannot compute,
	// each with why; every metric that needs one is left out, and said.
	LeftOut map[string]string
}

// Families are the catalog's three families, each as the views compute it.
var Families = []Family{traceFamily, recordFamily, callFamily}

// The trace family is rendered from the declaration the store's query
// renders too (reports.RunCounts, reports.GroupCounts): each run's
// counts from each event table, then their folds over every run in the
// lake (a run is a run id of run_spans, on any runner).
var traceFamily = traceFamilyOf()

func traceFamilyOf() Family {
	f := Family{Family: reports.FamilyTrace, Relations: []Relation{
		{"trace_runs", "every run: a run id with at least one event, on any runner",
			`SELECT run_id, min(first_ts) AS start FROM {{t "run_spans"}} GROUP BY run_id`},
	}}
	cols := []string{"r.run_id"}
	joins := []string{`{{v "trace_runs"}} r`}
	for _, t := range reports.RunCountTables() {
		var aggs, names []string
		for _, c := range reports.RunCounts {
			if c.Table == t {
				aggs = append(aggs, runCountTemplate(c)+" AS "+c.Name)
				names = append(names, c.Name)
				col := "coalesce(" + c.Name + ", 0) AS " + c.Name
				if c.Agg == reports.MaxOf {
					col = c.Name // missing, not 0, when the run has none
				}
				cols = append(cols, col)
			}
		}
		rel := "trace_run_" + t
		f.Relations = append(f.Relations, Relation{rel, "per run, from " + t + ": " + strings.Join(names, ", "),
			"SELECT run_id,\n  " + strings.Join(aggs, ",\n  ") + "\nFROM {{t \"" + t + "\"}}\n" +
				`WHERE run_id IN (SELECT run_id FROM {{v "trace_runs"}}) GROUP BY run_id`})
		joins = append(joins, `LEFT JOIN {{v "`+rel+`"}} USING (run_id)`)
	}
	f.Relations = append(f.Relations, Relation{"trace_run_counts", "each run's counts; a run with no row of a table has 0 of its counts",
		"SELECT " + strings.Join(cols, ", ") + "\nFROM " + strings.Join(joins, "\n") + "{{joinNulls}}"})
	// The provider requests' counts, split by provider and model as the
	// report's by-provider table splits them: the ByProvider per-run
	// counts, over the requests themselves (a sum over runs of a count
	// over each run's requests is that count over the requests).
	f.Relations = append(f.Relations, Relation{"trace_requests", "the provider requests of the runs",
		`SELECT * FROM {{t "provider_request_finishes"}} WHERE run_id IN (SELECT run_id FROM {{v "trace_runs"}})`})
	f.Groups = [][]string{{reports.ProviderCol, "model"}}
	for _, c := range reports.RunCounts {
		if !c.ByProvider {
			continue
		}
		sc := Count{Name: c.Name, From: "trace_requests", Where: condTemplate(c)}
		if c.Agg == reports.SumOf {
			sc.Agg, sc.Expr, sc.Zero = Sum, `{{q "`+c.Col+`"}}`, true
		}
		f.SplitCounts = append(f.SplitCounts, sc)
	}
	for _, g := range reports.GroupCounts {
		c := Count{Name: g.Name, From: "trace_run_counts"}
		switch g.Fold {
		case reports.SumRuns:
			c.Agg, c.Expr, c.Zero = Sum, g.Of[0], true
		case reports.RunsWith:
			var or []string
			for _, n := range g.Of {
				rc, _ := reports.RunCountOf(n)
				or = append(or, rc.Present(n))
			}
			c.Where = strings.Join(or, " OR ")
		}
		f.Counts = append(f.Counts, c)
	}
	return f
}

// runCountTemplate renders a per-run count as an aggregate over its
// table's rows of one run, in the template's terms (see Relation).
func runCountTemplate(c reports.RunCount) string {
	where := condTemplate(c)
	when := func(expr string) string {
		if where == "" {
			return expr
		}
		return "CASE WHEN " + where + " THEN " + expr + " END"
	}
	return aggTemplate(c, where, when)
}

// condTemplate renders a per-run count's conditions, "" for none.
func condTemplate(c reports.RunCount) string {
	var w []string
	for _, x := range c.Where {
		col := `{{q "` + x.Col + `"}}`
		if x.Op == reports.NotNull {
			w = append(w, col+" IS NOT NULL")
		} else {
			w = append(w, col+" "+string(x.Op)+" "+reports.SQLValue(x.Val))
		}
	}
	return strings.Join(w, " AND ")
}

// aggTemplate renders a per-run count's aggregate.
func aggTemplate(c reports.RunCount, where string, when func(string) string) string {
	col := `{{q "` + c.Col + `"}}`
	switch c.Agg {
	case reports.CountKeys:
		// "+ 0.0" folds -0 into 0; count(DISTINCT) leaves NULL out, so a
		// missing key adds one when any matching row lacks it.
		nullKey := col + " IS NULL"
		if where != "" {
			nullKey = where + " AND " + nullKey
		}
		return "count(DISTINCT " + when(col+" + 0.0") + ") + coalesce(max(CASE WHEN " + nullKey + " THEN 1 ELSE 0 END), 0)"
	case reports.SumOf:
		return "coalesce({{sum " + strconv.Quote(when(col)) + "}}, 0)"
	case reports.MaxOf:
		return "max(" + when(col) + ")"
	}
	if where == "" {
		return "count(*)"
	}
	return "coalesce({{countIf " + strconv.Quote(where) + "}}, 0)"
}

// The record family follows query/read_records.go and the store's views
// attempt_runs and attempts (query/schema.go). The union store numbers
// its files by runner, then by the runner's file id, so "the newest
// file" there is the highest (runner, file_id) here.
var recordFamily = Family{
	Family: reports.FamilyRecord,
	Relations: []Relation{
		{"record_runs_once", "one row per record run: the most complete source (anything but failure briefs), then the newest file",
			`SELECT * FROM (
  SELECT r.*, row_number() OVER (PARTITION BY {{q "system"}}, run_id
    ORDER BY CASE source WHEN 'brief' THEN 1 ELSE 0 END, runner DESC, file_id DESC) AS rank_
  FROM {{t "record_runs"}} r) x
WHERE rank_ = 1`},
		{"record_runs_ran", "record runs that ran: queued work never did",
			`SELECT * FROM {{v "record_runs_once"}} WHERE status IS NULL OR status <> '` + records.StatusQueued + `'`},
		{"record_attempts_once", "the attempts of the source each run was taken from; one recorded in two files counts once, from the newest",
			`SELECT * FROM (
  SELECT a.*, row_number() OVER (PARTITION BY a.{{q "system"}}, a.run_id, a.attempt ORDER BY a.runner DESC, a.file_id DESC) AS rank_
  FROM {{t "record_attempts"}} a
  JOIN {{v "record_runs_ran"}} r ON a.{{q "system"}} = r.{{q "system"}} AND a.run_id = r.run_id AND a.source = r.source) x
WHERE rank_ = 1`},
		{"record_attempts_scored", "each attempt with the signature before it and whether an earlier attempt failed in a way no retry changes",
			`SELECT {{q "system"}}, attempt, passed, signature,
  {{lag "signature" (print "PARTITION BY " (q "system") ", run_id ORDER BY attempt")}} AS prev_signature,
  coalesce(max(CASE WHEN passed = false AND (class IN (` + quotedList(deterministicClasses()) + `) OR ` + shlexFailure + `) THEN 1 ELSE 0 END)
    OVER (PARTITION BY {{q "system"}}, run_id ORDER BY attempt ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) = 1 AS after_deterministic
FROM {{v "record_attempts_once"}}`},
	},
	Counts: familyCounts(reports.RecordCounts),
	Groups: [][]string{{"system"}},
}

// The call family follows query/read_calls.go: each call once (a call two
// files or two runners hold counts once, from its session's own run when
// one copy is there, else from the file read first), in scope when its
// record run ran.
var callFamily = Family{
	Family: reports.FamilyCall,
	Relations: []Relation{
		{"calls_once", "each call once, by system, session and call id; calls without an id each count",
			`SELECT * FROM (
  SELECT c.*, row_number() OVER (PARTITION BY {{q "system"}}, session, call_id
    ORDER BY CASE WHEN run_id = session OR (run_id IS NULL AND session IS NULL) THEN 0 ELSE 1 END, runner, file_id, line) AS rank_
  FROM {{t "calls"}} c) x
WHERE call_id IS NULL OR rank_ = 1`},
		{"calls_in_scope", "the calls whose record run ran",
			`SELECT c.* FROM {{v "calls_once"}} c
JOIN (SELECT DISTINCT {{q "system"}}, run_id FROM {{v "record_runs_ran"}}) r ON c.{{q "system"}} = r.{{q "system"}} AND c.run_id = r.run_id`},
	},
	Counts: familyCounts(reports.CallCounts),
	Groups: [][]string{{"system"}, {"system", "provider", "model"}},
	LeftOut: map[string]string{
		"cost": "a call's cost is its recorded cost, else its tokens priced by orchstat's price table (LiteLLM's, " +
			"matched to the model's name in Go); the lake holds only recorded costs, so a sum over it would leave the priced calls out",
		"failed_cost": "a failed attempt's cost, as a call's, is priced by orchstat's price table where none is recorded, " +
			"and the lake holds only recorded costs",
		"cost_unpriced":        "which calls have no price is decided by the same price table",
		"failed_cost_unpriced": "which failed attempts have no price is decided by the same price table",
	},
}

// rowsOf are the relations that hold the rows reports.FamilyCount names.
var rowsOf = map[string]string{
	reports.RecordRunRows:     "record_runs_ran",
	reports.RecordAttemptRows: "record_attempts_scored",
	reports.CallRows:          "calls_in_scope",
}

// familyCounts are the record or call family's declared counts
// (model/reports/familycounts.go), which the store renders too, over the
// relations above.
func familyCounts(decl []reports.FamilyCount) []Count {
	var out []Count
	for _, c := range decl {
		switch {
		case c.Derived != "":
			out = append(out, Count{Name: c.Name, Agg: Derived, Expr: c.Derived})
		case c.Sum != "":
			out = append(out, Count{Name: c.Name, From: rowsOf[c.Rows], Agg: Sum, Expr: c.Sum, Where: c.Where, Zero: c.Zero})
		default:
			out = append(out, Count{Name: c.Name, From: rowsOf[c.Rows], Where: c.Where})
		}
	}
	return out
}

// shlexFailure tells F8a by its text (failure.ShlexFailure), as
// query's shlexFailureSQL does; substr rather than starts_with, which
// Spark and ClickHouse spell otherwise.
var shlexFailure = "(stage = " + quoteString(failure.ShlexFailureStage) + " AND substr(trim(coalesce(error, '')), 1, " +
	strconv.Itoa(len(failure.ShlexFailurePrefix)) + ") = " + quoteString(failure.ShlexFailurePrefix) + ")"

// deterministicClasses are the failure classes a retry cannot change.
func deterministicClasses() []string {
	var out []string
	for _, c := range failure.DeterministicClasses() {
		out = append(out, string(c))
	}
	slices.Sort(out)
	return out
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func quotedList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quoteString(s)
	}
	if len(q) == 0 {
		return "NULL"
	}
	return strings.Join(q, ", ")
}
