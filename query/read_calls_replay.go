package query

import (
	"context"
	"database/sql"
)

// UnreplayedCalls counts, per system, the agents' calls f selects that
// simulate cannot replay, so that it can say so: calls whose attempts the
// record does not show (a Codex rollout's, a span without retry
// evidence), and calls with attempts but no time. Systems with none are
// absent.
type UnreplayedCalls struct {
	System          string
	UnknownAttempts int
	NoTime          int
}

// UnreplayedCalls reads the counts; see UnreplayedCalls and callEpisodes,
// whose episodes are the other calls.
func (s *Store) UnreplayedCalls(ctx context.Context, f Filter) ([]UnreplayedCalls, error) {
	if ok, err := hasCalls(ctx, s.conn); err != nil || !ok {
		return nil, err
	}
	if err := s.priced(ctx); err != nil {
		return nil, err
	}
	cte, args := f.callScope("''")
	var out []UnreplayedCalls
	err := eachRow(ctx, s.conn, "counting calls without attempts", "WITH "+cte+`
SELECT system, count(*) FILTER (WHERE attempts IS NULL OR attempts < 1)::BIGINT,
  count(*) FILTER (WHERE attempts >= 1 AND ts IS NULL)::BIGINT
FROM cs GROUP BY system
HAVING count(*) FILTER (WHERE attempts IS NULL OR attempts < 1 OR ts IS NULL) > 0
ORDER BY system`, args, func(rs *sql.Rows) error {
		var u UnreplayedCalls
		var unknown, noTime int64
		if err := rs.Scan(&u.System, &unknown, &noTime); err != nil {
			return err
		}
		u.UnknownAttempts, u.NoTime = int(unknown), int(noTime)
		out = append(out, u)
		return nil
	})
	return out, err
}

// IdleTraceRuns counts the orchestrator's runs f selects that hold nothing
// simulate replays: no provider request, L2 event or L3 step (early or
// mock runs), so that simulate names them rather than skip them in
// silence. exec's runs are exec's, replayed as records.
func (s *Store) IdleTraceRuns(ctx context.Context, f Filter) (int, error) {
	cte, args := f.scope("''")
	var n int64
	err := eachRow(ctx, s.conn, "counting runs with nothing to replay", "WITH "+cte+`
SELECT count(*) FROM s
WHERE run_id NOT IN (SELECT run_id FROM record_runs WHERE system = 'exec')
  AND run_id NOT IN (SELECT run_id FROM provider_request_starts UNION SELECT run_id FROM provider_request_finishes
    UNION SELECT run_id FROM l2_events UNION SELECT run_id FROM steps)`, args, func(rs *sql.Rows) error { return rs.Scan(&n) })
	return int(n), err
}
