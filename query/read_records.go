package query

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/reports"
)

// recordRunsAll renders record runs with their start, their own start
// or else their first attempt's time, and whether they are queued work.
// A run whose record holds no time (a factory run summary) has a NULL
// start: the file's modification time is when it was copied or cloned, not
// when the run ran, so such a run is undated rather than dated today.
const recordRunsAll = `SELECT r.system, r.run_id, coalesce(r.started_at, t.first_ts) AS start,
	  coalesce(r.status = '` + records.StatusQueued + `', false) AS queued
	FROM attempt_runs r
	LEFT JOIN (SELECT system, run_id, min(ts) AS first_ts FROM attempts GROUP BY ALL) t USING (system, run_id)`

// recordRuns renders the record runs that ran: queued work (tasks waiting
// in a queue) never ran, so it is no run and is counted apart.
const recordRuns = `SELECT system, run_id, start FROM (` + recordRunsAll + `) WHERE NOT queued`

// recordScope renders the CTE "rs(system, run_id, start, grp)" of the
// selected record runs: the other systems' runs, under the same filter as
// orchestrator runs. Record runs name no provider, so a provider filter
// selects none.
func (f Filter) recordScope(group string) (string, []any) {
	where, args := f.window()
	if f.Provider != "" {
		where = append(where, "false")
	}
	last := ""
	if f.Last > 0 {
		// The last N runs of each system: systems' runs are not comparable.
		// Undated runs come after every dated one, by run id: a factory
		// whose summaries hold no time at all still has its last N runs
		// for the record rules, and a dated run is never pushed out by
		// an undated one.
		last = fmt.Sprintf(" QUALIFY row_number() OVER (PARTITION BY system ORDER BY start DESC NULLS LAST, run_id DESC) <= %d", f.Last)
	}
	cond := ""
	if len(where) > 0 {
		cond = "WHERE " + strings.Join(where, " AND ")
	}
	return fmt.Sprintf(`rs AS (
		SELECT system, run_id, start, %s AS grp FROM (%s) %s%s)`,
		group, recordRuns, cond, last), args
}

// deterministicClasses are the failure classes a retry cannot change
// (failure.DeterministicClasses), sorted. With F8a, which has no class of
// its own but is told by its text (failure.ShlexFailure, shlexFailureSQL),
// they are what wasted_attempt_rate counts.
func deterministicClasses() []string {
	var out []string
	for _, c := range failure.DeterministicClasses() {
		out = append(out, string(c))
	}
	slices.Sort(out)
	return out
}

func sqlList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quoteSQL(s)
	}
	if len(q) == 0 {
		return "NULL"
	}
	return strings.Join(q, ", ")
}

func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// recordMetricsSQL computes the record metrics per group of selected record
// runs (README, "Metrics of other systems").
func recordMetricsSQL() string {
	return `,
ar AS (SELECT rs.grp, r.* FROM attempt_runs r JOIN rs USING (system, run_id)),
att AS (
  SELECT rs.grp, a.attempt, a.passed, a.signature,
    lag(a.signature) OVER w AS prev_signature,
    coalesce(bool_or(a.passed = false AND (a.class IN (` + sqlList(deterministicClasses()) + `) OR ` + shlexFailureSQL + `))
      OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), false) AS after_deterministic
  FROM attempts a JOIN rs USING (system, run_id)
  WINDOW w AS (PARTITION BY a.system, a.run_id ORDER BY a.attempt)),
rn AS (SELECT grp, ` + recordAggregates(reports.RecordRunRows) + ` FROM ar GROUP BY grp),
an AS (SELECT grp, ` + recordAggregates(reports.RecordAttemptRows) + ` FROM att GROUP BY grp)
SELECT rn.grp, ` + recordColumns() + `
FROM rn LEFT JOIN an USING (grp) ORDER BY rn.grp`
}

// recordAggregates renders the record counts (reports.RecordCounts) of
// the relation rows: ar for record runs, att for their attempts.
func recordAggregates(rows string) string {
	var out []string
	for _, c := range reports.RecordCounts {
		if c.Rows == rows {
			out = append(out, c.DuckDBAggregate()+" AS "+c.Name)
		}
	}
	return strings.Join(out, ", ")
}

// recordColumns renders the record counts as the query's columns: every
// group has record runs (rn), not always attempts (an), whose counts are
// then 0.
func recordColumns() string {
	var out []string
	for _, c := range reports.RecordCounts {
		if c.Rows == reports.RecordRunRows {
			out = append(out, "rn."+c.Name+" AS "+c.Name)
		} else {
			out = append(out, "coalesce(an."+c.Name+", 0) AS "+c.Name)
		}
	}
	return strings.Join(out, ", ")
}

// emptyRecordMetrics are the record metrics of no record run.
func emptyRecordMetrics() reports.Metrics { return reports.MetricsOf(reports.FamilyRecord, nil) }

// recordMetricsBy computes the record metrics for each group of the
// filtered record runs.
func recordMetricsBy(ctx context.Context, q querier, f Filter, group string) ([]string, map[string]reports.Metrics, error) {
	cte, args := f.recordScope(group)
	rs, err := q.QueryContext(ctx, "WITH "+cte+recordMetricsSQL(), args...)
	if err != nil {
		return nil, nil, fmt.Errorf("computing record metrics: %w", err)
	}
	defer rs.Close()
	return groupMetrics(rs, reports.FamilyRecord, "computing record metrics")
}

// hasRecords reports whether the store holds any other system's run. A
// trace-only store skips the record queries: they join views that cost
// more than their empty result is worth on every check.
func hasRecords(ctx context.Context, q querier) (bool, error) {
	var n int64
	err := eachRow(ctx, q, "looking for record runs", `SELECT count(*) FROM (SELECT 1 FROM record_runs LIMIT 1)`, nil,
		func(rs *sql.Rows) error { return rs.Scan(&n) })
	return n > 0, err
}

// recordMetrics adds the record metrics over f to m.
func recordMetrics(ctx context.Context, q querier, f Filter, m reports.Metrics) error {
	if ok, err := hasRecords(ctx, q); err != nil || !ok {
		maps.Copy(m, emptyRecordMetrics())
		return err
	}
	_, by, err := recordMetricsBy(ctx, q, f, "'all'")
	if err != nil {
		return err
	}
	all, ok := by["all"]
	if !ok {
		all = emptyRecordMetrics()
	}
	maps.Copy(m, all)
	return nil
}

// systems fills the report's other-systems section.
func systems(ctx context.Context, q querier, f Filter, out *reports.Systems) error {
	cte, args := f.recordScope("system")
	run := func(query string, scan func(*sql.Rows) error) error {
		return eachRow(ctx, q, "computing the systems section", "WITH "+cte+" "+query, args, scan)
	}
	out.BySystem, out.StageFailures, out.Stages = []reports.SystemRow{}, []reports.StageFailureRow{}, []reports.StageRow{}
	if ok, err := hasRecords(ctx, q); err != nil || !ok {
		return err
	}
	_, metrics, err := recordMetricsBy(ctx, q, f, "system")
	if err != nil {
		return err
	}
	err = run(`, att AS (SELECT a.system, a.run_id, count(*) AS n, count(*) FILTER (WHERE a.passed = false) AS failed
		FROM attempts a JOIN rs USING (system, run_id) GROUP BY ALL)
		SELECT r.system, count(*),
		  count(*) FILTER (WHERE r.status = 'success'), count(*) FILTER (WHERE r.status = 'failure'),
		  count(*) FILTER (WHERE r.status = 'cancelled'), count(*) FILTER (WHERE r.status = 'unfinished'),
		  count(*) FILTER (WHERE r.status IS NULL OR r.status NOT IN ('success', 'failure', 'cancelled', 'unfinished')),
		  coalesce(sum(att.n), 0)::BIGINT, coalesce(sum(att.failed), 0)::BIGINT,
		  count(*) FILTER (WHERE greatest(r.attempts, att.n) > 1), min(rs.start), max(rs.start)
		FROM attempt_runs r JOIN rs USING (system, run_id) LEFT JOIN att USING (system, run_id)
		GROUP BY r.system ORDER BY r.system`, func(rs *sql.Rows) error {
		var s reports.SystemRow
		var first, last sql.NullTime
		if err := rs.Scan(&s.System, &s.Runs, &s.Success, &s.Failure, &s.Cancelled, &s.Unfinished, &s.OtherStatus, &s.Attempts, &s.FailedAttempts,
			&s.RetriedRuns, &first, &last); err != nil {
			return err
		}
		s.FirstRun, s.LastRun, s.Metrics = utcPtr(first), utcPtr(last), metrics[s.System]
		out.BySystem = append(out.BySystem, s)
		return nil
	})
	if err != nil {
		return err
	}
	err = run(`SELECT a.system, coalesce(a.stage, '(none)'), count(*), count(DISTINCT a.run_id)
		FROM attempts a JOIN rs USING (system, run_id) WHERE a.passed = false
		GROUP BY ALL ORDER BY 1, 3 DESC, 2`, func(rs *sql.Rows) error {
		var s reports.StageFailureRow
		if err := rs.Scan(&s.System, &s.Stage, &s.Failures, &s.Runs); err != nil {
			return err
		}
		out.StageFailures = append(out.StageFailures, s)
		return nil
	})
	if err != nil {
		return err
	}
	return run(`SELECT st.system, st.stage, count(*), count(*) FILTER (WHERE st.passed = false),
		  count(*) FILTER (WHERE st.passed IS NULL), count(*) FILTER (WHERE st.passed IS NOT NULL),
		  avg(st.duration_ms), sum(st.tokens), sum(st.cost_usd), min(st.seq)
		FROM attempt_stages st JOIN rs USING (system, run_id)
		GROUP BY ALL ORDER BY 1, 10, 2`, func(rs *sql.Rows) error {
		var s reports.StageRow
		var known float64
		var avg, tokens, cost sql.NullFloat64
		var seq sql.NullInt64
		if err := rs.Scan(&s.System, &s.Stage, &s.Runs, &s.Failed, &s.NotApplicable, &known, &avg, &tokens, &cost, &seq); err != nil {
			return err
		}
		s.FailureRate = ratio(float64(s.Failed), known)
		s.AvgDurationMS, s.Tokens, s.CostUSD = fOf(avg), fOf(tokens), fOf(cost)
		out.Stages = append(out.Stages, s)
		return nil
	})
}

// RecordedRuns is what a replay of record runs reads, per system.
type RecordedRuns struct {
	Runs map[string][]episode.AttemptRun
	// Unknown counts, per system, runs left out because an attempt's
	// outcome is not in the record.
	Unknown map[string]int
}

// AttemptRuns reads the selected record runs with their attempts, for
// replay: by system, then batch, then start, so a batch's runs come in the
// order they ran.
func (s *Store) AttemptRuns(ctx context.Context, f Filter) (*RecordedRuns, error) {
	cte, args := f.recordScope("''")
	rs, err := s.conn.QueryContext(ctx, "WITH "+cte+`
		SELECT r.system, r.run_id, coalesce(r.batch, ''), coalesce(r.max_attempts, 0),
		  a.passed, coalesce(a.class, ''), coalesce(a.signature, ''), coalesce(a.stage, ''), coalesce(a.error, '')
		FROM attempt_runs r JOIN rs USING (system, run_id) JOIN attempts a USING (system, run_id)
		ORDER BY r.system, coalesce(r.batch, ''), rs.start, r.run_id, a.attempt`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading recorded attempts: %w", err)
	}
	defer rs.Close()
	out := &RecordedRuns{Runs: map[string][]episode.AttemptRun{}, Unknown: map[string]int{}}
	unknown := map[[2]string]bool{}
	for rs.Next() {
		var system, runID, batch, class, sig, stage, msg string
		var maxAttempts int
		var passed sql.NullBool
		if err := rs.Scan(&system, &runID, &batch, &maxAttempts, &passed, &class, &sig, &stage, &msg); err != nil {
			return nil, fmt.Errorf("reading recorded attempts: %w", err)
		}
		runs := out.Runs[system]
		if n := len(runs); n == 0 || runs[n-1].RunID != runID {
			runs = append(runs, episode.AttemptRun{System: system, RunID: runID, Batch: batch, MaxAttempts: maxAttempts})
		}
		if !passed.Valid {
			unknown[[2]string{system, runID}] = true
		}
		r := &runs[len(runs)-1]
		r.Attempts = append(r.Attempts, episode.RecordedAttempt{Passed: passed.Bool, Class: failure.Class(class),
			Signature: sig, Stage: stage, Message: msg})
		out.Runs[system] = runs
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	// A run with an attempt whose outcome the record omits cannot be
	// replayed exactly, so it is left out and counted.
	for system, runs := range out.Runs {
		out.Runs[system] = slices.DeleteFunc(runs, func(r episode.AttemptRun) bool {
			if unknown[[2]string{system, r.RunID}] {
				out.Unknown[system]++
				return true
			}
			return false
		})
	}
	return out, nil
}

// recordCounts counts, under f's conditions but its time bounds and Last,
// the record runs with no recorded time and the queued tasks: neither can
// fall in a time window, and the overview says how many there are so a
// window's report does not hide them.
func recordCounts(ctx context.Context, q querier, f Filter) (undated, queued int64, err error) {
	if ok, err := hasRecords(ctx, q); err != nil || !ok {
		return 0, 0, err
	}
	f.Since, f.Until, f.Last = nil, nil, 0
	where, args := f.window()
	if f.Provider != "" {
		where = append(where, "false") // record runs name no provider
	}
	cond := ""
	if len(where) > 0 {
		cond = "WHERE " + strings.Join(where, " AND ")
	}
	err = eachRow(ctx, q, "counting undated runs and queued tasks", `SELECT
		  count(*) FILTER (WHERE start IS NULL AND NOT queued), count(*) FILTER (WHERE queued)
		FROM (`+recordRunsAll+`) `+cond, args, func(rs *sql.Rows) error { return rs.Scan(&undated, &queued) })
	return undated, queued, err
}
