package query

import (
	"context"
	"database/sql"

	"github.com/orchstat/orchstat/model/reports"
)

// The summary's own reads: what the report's sections do not already
// hold. Days are the UTC day a run started, as the report's by-day
// breakdown cuts them, so that a system's days add up to its figures in
// the window (the window selects runs by their start; a session that runs
// past midnight counts on the day it began).

// SummaryDaily is, per system other than the orchestrator's traces (those
// are the report's by-day breakdown), the filtered runs' or calls' count,
// failures, retries and cost per day. Undated runs are on no day.
func (s *Store) SummaryDaily(ctx context.Context, f Filter) (map[string][]reports.DayPoint, error) {
	if err := s.priced(ctx); err != nil {
		return nil, err
	}
	out := map[string][]reports.DayPoint{}
	if ok, err := hasRecords(ctx, s.conn); err != nil {
		return nil, err
	} else if ok {
		cte, args := f.recordScope("NULL")
		err := eachRow(ctx, s.conn, "computing the summary's days", "WITH "+cte+`,
			att AS (SELECT a.system, a.run_id, count(*) AS n FROM attempts a JOIN rs USING (system, run_id) GROUP BY ALL)
			SELECT r.system, strftime(rs.start, '%Y-%m-%d') AS day, count(*),
			  count(*) FILTER (WHERE r.status = 'failure'),
			  count(*) FILTER (WHERE greatest(r.attempts, att.n) > 1)
			FROM attempt_runs r JOIN rs USING (system, run_id) LEFT JOIN att USING (system, run_id)
			WHERE rs.start IS NOT NULL GROUP BY ALL ORDER BY 1, 2`, args, func(rs *sql.Rows) error {
			var sys string
			var p reports.DayPoint
			if err := rs.Scan(&sys, &p.Day, &p.Count, &p.Failed, &p.Retried); err != nil {
				return err
			}
			out[sys] = append(out[sys], p)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if ok, err := hasCalls(ctx, s.conn); err != nil || !ok {
		return out, err
	}
	cte, args := f.callScope("NULL")
	err := eachRow(ctx, s.conn, "computing the summary's days", "WITH "+cte+`
		SELECT cs.system, strftime(rs.start, '%Y-%m-%d') AS day, count(*),
		  count(*) FILTER (WHERE cs.success = false), count(*) FILTER (WHERE cs.attempts > 1), sum(cs.cost_usd)
		FROM cs JOIN rs USING (system, run_id) WHERE rs.start IS NOT NULL GROUP BY ALL ORDER BY 1, 2`, args,
		func(rs *sql.Rows) error {
			var sys string
			var p reports.DayPoint
			var cost sql.NullFloat64
			if err := rs.Scan(&sys, &p.Day, &p.Count, &p.Failed, &p.Retried, &cost); err != nil {
				return err
			}
			p.CostUSD = floatPtr(cost)
			out[sys] = append(out[sys], p)
			return nil
		})
	return out, err
}

// SessionCalls is the calls of each agent session in f: the summary's
// "where" names the sessions behind the most retries, failures and cost.
func (s *Store) SessionCalls(ctx context.Context, f Filter) ([]reports.CallRow, []string, error) {
	if err := s.priced(ctx); err != nil {
		return nil, nil, err
	}
	if ok, err := hasCalls(ctx, s.conn); err != nil || !ok {
		return nil, nil, err
	}
	keys, rows, err := callGroups(ctx, s.conn, f, "system", "session")
	if err != nil {
		return nil, nil, err
	}
	sessions := make([]string, len(keys))
	for i, k := range keys {
		rows[i].System = k[0]
		sessions[i] = k[1]
	}
	return rows, sessions, nil
}
