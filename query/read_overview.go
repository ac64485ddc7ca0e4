package query

import (
	"cmp"
	"context"
	"database/sql"
	"slices"

	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/reports"
)

// The overview and the scope line count runs the same way, so that their
// numbers add up: each run once, under the system that recorded it. exec
// writes orchestrator traces and a record run of its own for the same run
// id; the run is exec's. Queued work that never ran is no run.

// allRunsSQL renders every run in the store, once, as (system, run_id).
const allRunsSQL = `SELECT 'orchestrator' AS system, run_id FROM (SELECT DISTINCT run_id FROM run_spans)
	WHERE run_id NOT IN (SELECT run_id FROM record_runs WHERE system = '` + records.Exec + `')
	UNION ALL SELECT system, run_id FROM attempt_runs WHERE status IS DISTINCT FROM '` + records.StatusQueued + `'`

// recordRunsBySystem counts the selected record runs of each system by
// outcome, under f as the record metrics select them.
func recordRunsBySystem(ctx context.Context, q querier, f Filter) ([]reports.SystemRuns, error) {
	var out []reports.SystemRuns
	if ok, err := hasRecords(ctx, q); err != nil || !ok {
		return nil, err
	}
	cte, args := f.recordScope("''")
	err := eachRow(ctx, q, "counting runs by system", `WITH `+cte+` SELECT system, count(*),
		  count(*) FILTER (WHERE status = 'success'),
		  count(*) FILTER (WHERE status = 'failure'),
		  count(*) FILTER (WHERE status = 'cancelled'),
		  count(*) FILTER (WHERE status = 'unfinished'),
		  count(*) FILTER (WHERE status IS NULL OR status NOT IN ('success', 'failure', 'cancelled', 'unfinished'))
		FROM attempt_runs JOIN rs USING (system, run_id) GROUP BY system`, args, func(rs *sql.Rows) error {
		var r reports.SystemRuns
		if err := rs.Scan(&r.System, &r.Runs, &r.Success, &r.Failure, &r.Cancelled, &r.Unfinished, &r.OtherStatus); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// bySystem keeps the systems that have runs, in reports.SystemOrder.
func bySystem(rs []reports.SystemRuns) []reports.SystemRuns {
	rs = slices.DeleteFunc(rs, func(r reports.SystemRuns) bool { return r.Runs == 0 })
	rank := func(s string) int {
		if i := slices.Index(reports.SystemOrder, s); i >= 0 {
			return i
		}
		return len(reports.SystemOrder)
	}
	slices.SortStableFunc(rs, func(a, b reports.SystemRuns) int {
		return cmp.Or(cmp.Compare(rank(a.System), rank(b.System)), cmp.Compare(a.System, b.System))
	})
	if rs == nil {
		rs = []reports.SystemRuns{}
	}
	return rs
}

// quarantinedIn counts the lines quarantined from files at or under
// paths, or from any file when paths is empty: as the files' states count
// them, since a file of junk keeps only its first rows.
func quarantinedIn(ctx context.Context, q querier, paths []string) (int64, error) {
	// Each file's latest state, by aggregate: the files view's window
	// ranks every state of every file, at every report.
	where, args := "", []any(nil)
	if len(paths) > 0 {
		var cond string
		cond, args = pathsCond("path", paths)
		where = ` WHERE ` + cond
	}
	query := `SELECT coalesce(sum(q), 0)::BIGINT FROM (
		SELECT arg_max(quarantined, seq) AS q FROM file_states` + where + ` GROUP BY file_id)`
	var n int64
	err := eachRow(ctx, q, "counting quarantined lines", query, args, func(rs *sql.Rows) error { return rs.Scan(&n) })
	return n, err
}
