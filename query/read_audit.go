package query

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/orchstat/orchstat/model/factory/audit"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/reports"
)

// shlexFailureSQL is failure.ShlexFailure over the attempts view's
// columns, for the wasted_attempt_rate metric.
var shlexFailureSQL = "(a.stage = " + quoteSQL(failure.ShlexFailureStage) + " AND starts_with(trim(coalesce(a.error, '')), " + quoteSQL(failure.ShlexFailurePrefix) + "))"

// FactoryAudit audits the factory records of the filtered runs on the
// store's connection; factoryAudit runs it on any, as a report's part.
func (s *Store) FactoryAudit(ctx context.Context, f Filter) (*reports.FactoryAudit, error) {
	return factoryAudit(ctx, s.conn, f)
}

// factoryAudit computes the factory retry audit over the factory's record
// runs (the attempt_runs view, system 'factory') and their attempts (the
// attempts view), under f.
//
// A run is in a time window when its start is: its own start time, else
// its earliest attempt's time. The write factory's run summaries record
// no time at all; a run with neither is in the audit only when f sets
// neither Since nor Until (FactoryAudit.UndatedRuns counts them either
// way). Runs selects by run id; record runs name no provider, so a
// Provider filter selects none; Last keeps the last N dated runs
// (undated ones after).
//
// What the runs add up to, the factory audit's definitions, is audit.Summarise.
func factoryAudit(ctx context.Context, q querier, f Filter) (*reports.FactoryAudit, error) {
	runs, err := auditRuns(ctx, q, f)
	if err != nil {
		return nil, err
	}
	a := audit.Summarise(runs)
	if a.UndatedRuns, err = undatedRuns(ctx, q, f); err != nil {
		return nil, err
	}
	return a, nil
}

// auditScope renders the CTE "rr(system, run_id, item, start)" of the
// factory's record runs under f, with the record metrics' scope (so a run
// without any time is in no time window); with window false, without f's
// time window and Last.
func auditScope(f Filter, window bool) (string, []any) {
	if !window {
		f.Since, f.Until, f.Last = nil, nil, 0
	}
	cte, args := f.recordScope("''")
	return cte + `,
	rr AS (
	  SELECT r.system, r.run_id, coalesce(r.item, '') AS item, rs.start
	  FROM attempt_runs r JOIN rs USING (system, run_id)
	  WHERE r.system = 'factory')`, args
}

func auditRuns(ctx context.Context, q querier, f Filter) ([]audit.Run, error) {
	cte, args := auditScope(f, true)
	rs, err := q.QueryContext(ctx, `WITH `+cte+`
	SELECT rr.run_id, rr.item, a.attempt, a.passed, coalesce(a.stage, ''), coalesce(a.class, ''), coalesce(a.signature, ''),
	  CASE WHEN a.stage IN ('exception', 'acceptance_failed') THEN coalesce(a.error, '') ELSE '' END
	FROM rr LEFT JOIN attempts a USING (system, run_id)
	ORDER BY rr.run_id, a.attempt`, args...)
	if err != nil {
		return nil, fmt.Errorf("computing the factory audit: %w", err)
	}
	defer rs.Close()
	var runs []audit.Run
	for rs.Next() {
		var id, item string
		var n sql.NullInt64
		var passed sql.NullBool
		var at audit.Attempt
		if err := rs.Scan(&id, &item, &n, &passed, &at.Stage, &at.Class, &at.Signature, &at.Err); err != nil {
			return nil, fmt.Errorf("computing the factory audit: %w", err)
		}
		if len(runs) == 0 || runs[len(runs)-1].ID != id {
			runs = append(runs, audit.Run{ID: id, Item: item})
		}
		if !n.Valid {
			continue // a run without attempts
		}
		at.N = int(n.Int64)
		if passed.Valid {
			at.Passed = &passed.Bool
		}
		r := &runs[len(runs)-1]
		r.Attempts = append(r.Attempts, at)
	}
	return runs, rs.Err()
}

// undatedRuns counts the factory runs without a start, under f's
// conditions other than its window.
func undatedRuns(ctx context.Context, q querier, f Filter) (int64, error) {
	cte, args := auditScope(f, false)
	rs, err := q.QueryContext(ctx, `WITH `+cte+` SELECT count(*) FROM rr JOIN attempt_runs r USING (system, run_id)
	  WHERE r.started_at IS NULL AND NOT EXISTS (
	    SELECT 1 FROM attempts a WHERE a.system = r.system AND a.run_id = r.run_id AND a.ts IS NOT NULL)`, args...)
	if err != nil {
		return 0, fmt.Errorf("counting undated factory runs: %w", err)
	}
	defer rs.Close()
	var n int64
	for rs.Next() {
		if err := rs.Scan(&n); err != nil {
			return 0, fmt.Errorf("counting undated factory runs: %w", err)
		}
	}
	return n, rs.Err()
}
