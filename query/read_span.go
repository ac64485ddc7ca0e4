package query

import (
	"context"
	"database/sql"
	"strings"
	"time"
)

// DataSpan is when the first and the last of the runs found under paths
// (every run when paths is empty) started: orchestrator runs and other
// systems' dated runs alike, by the start alert rules' windows select
// runs by. Both are nil when there is no dated run.
func (s *Store) DataSpan(ctx context.Context, paths []string) (first, last *time.Time, err error) {
	where, args := Filter{Paths: paths}.window()
	cond := ""
	if len(where) > 0 {
		cond = " AND " + strings.Join(where, " AND ")
	}
	q := `SELECT min(start), max(start) FROM (
		` + s.runStarts() + `
		UNION ALL SELECT run_id, start FROM (` + recordRuns + `)) WHERE start IS NOT NULL` + cond
	err = eachRow(ctx, s.conn, "finding the span of the data", q, args, func(rs *sql.Rows) error {
		var lo, hi sql.NullTime
		if err := rs.Scan(&lo, &hi); err != nil {
			return err
		}
		first, last = utcPtr(lo), utcPtr(hi)
		return nil
	})
	return first, last, err
}

// RunStarts is when each of the runs found under paths (every run when
// paths is empty) started, in order, once each instant: rules backtest
// evaluates at the data's own times.
func (s *Store) RunStarts(ctx context.Context, paths []string) ([]time.Time, error) {
	where, args := Filter{Paths: paths}.window()
	cond := ""
	if len(where) > 0 {
		cond = " AND " + strings.Join(where, " AND ")
	}
	q := `SELECT DISTINCT start FROM (
		` + s.runStarts() + `
		UNION ALL SELECT run_id, start FROM (` + recordRuns + `)) WHERE start IS NOT NULL` + cond + ` ORDER BY start`
	var out []time.Time
	err := eachRow(ctx, s.conn, "finding when the runs started", q, args, func(rs *sql.Rows) error {
		var t time.Time
		if err := rs.Scan(&t); err != nil {
			return err
		}
		out = append(out, t.UTC())
		return nil
	})
	return out, err
}

// runStarts renders each orchestrator run with its start, (run_id,
// start): from the runs' figures when the store keeps them, one row per
// run already, else from run_spans.
func (s *Store) runStarts() string {
	if s.figures {
		return "SELECT run_id, start FROM run_figures"
	}
	return "SELECT run_id, min(first_ts) AS start FROM run_spans GROUP BY run_id"
}
