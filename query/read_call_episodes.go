package query

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
)

// callEpisodesSQL reads one row per agent call f selects whose attempts
// the record shows, in time order, with its attempts' errors where the
// record lists them. A call whose attempts are unknown is no episode: a
// replay cannot say what a policy would have changed about attempts
// nobody counted (the report counts those calls apart).
const callEpisodesSQL = `,
ae AS (
  SELECT a.file_id, a.call_id, list(a.error ORDER BY a.attempt) AS errors
  FROM call_attempts a WHERE a.file_id IN (SELECT file_id FROM cs) GROUP BY ALL)
SELECT cs.system, coalesce(cs.run_id, ''), cs.file_id::BIGINT, coalesce(cs.call_id, ''), cs.line::BIGINT, cs.ts,
  cs.provider, cs.model, cs.operation, cs.duration_ms, cs.success, least(cs.attempts, %d)::INTEGER, cs.error,
  coalesce(cs.cost_usd, 0) + coalesce(cs.failed_cost_usd, 0), coalesce(ae.errors, []::VARCHAR[])
FROM cs LEFT JOIN ae ON ae.file_id = cs.file_id AND ae.call_id = cs.call_id
WHERE cs.attempts >= 1 AND cs.ts IS NOT NULL
ORDER BY cs.ts, cs.file_id, cs.line`

// callEpisodes reads one episode.KindProvider episode per agent call with
// known attempts, ID "<system>:<run>/<file_id>:<call>". Every attempt
// before the last failed, as the call went on; the last one's OK is the
// call's success. An attempt's class is classify of its own error where
// call_attempts lists one, and the last attempt's of the call's error.
// Cost is the call's recorded cost, failed attempts' included; 0 when
// the record has none.
func callEpisodes(ctx context.Context, q querier, f Filter, classify func(string) failure.Class) ([]episode.Episode, error) {
	if ok, err := hasCalls(ctx, q); err != nil || !ok {
		return nil, err
	}
	cte, args := f.callScope("''")
	var out []episode.Episode
	err := eachRow(ctx, q, "reading agents' calls", "WITH "+cte+fmt.Sprintf(callEpisodesSQL, MaxRecordedRetries+1), args,
		func(rs *sql.Rows) error {
			e, err := scanCallEpisode(rs, classify)
			if err == nil {
				out = append(out, e)
			}
			return err
		})
	return out, err
}

func scanCallEpisode(rs *sql.Rows, classify func(string) failure.Class) (episode.Episode, error) {
	var system, run, callID string
	var fileID, line int64
	var ts time.Time
	var provider, model, operation, lastErr sql.NullString
	var duration sql.NullFloat64
	var success sql.NullBool
	var attempts int
	var cost float64
	var errs []any
	if err := rs.Scan(&system, &run, &fileID, &callID, &line, &ts, &provider, &model, &operation, &duration, &success,
		&attempts, &lastErr, &cost, &errs); err != nil {
		return episode.Episode{}, err
	}
	class := func(text string) failure.Class {
		if classify == nil {
			return ""
		}
		return classify(text)
	}
	att := make([]episode.Attempt, attempts)
	for i := range att[:attempts-1] {
		if i < len(errs) {
			if s, ok := errs[i].(string); ok {
				att[i].Class = class(s)
			}
		}
	}
	last := &att[attempts-1]
	last.OK = success.Valid && success.Bool
	if !last.OK {
		last.Class = class(lastErr.String)
	}
	id := fmt.Sprintf("%s:%s/%d:%s", system, run, fileID, callID)
	if callID == "" {
		id = fmt.Sprintf("%s:%s/%d:%d", system, run, fileID, line)
	}
	e := episode.Episode{Kind: episode.KindProvider, ID: id, Run: system + ":" + run, Time: ts.UTC(),
		Provider: provider.String, Model: model.String, Operation: operation.String,
		Attempts: att, Success: last.OK, CostUSD: cost}
	if duration.Valid && duration.Float64 > 0 {
		e.Duration = time.Duration(duration.Float64 * float64(time.Millisecond))
	}
	return e, nil
}

// withCalls merges agents' call episodes into episodes, both in
// (Time, ID) order.
func withCalls(ctx context.Context, q querier, f Filter, classify func(string) failure.Class, out []episode.Episode) ([]episode.Episode, error) {
	calls, err := callEpisodes(ctx, q, f, classify)
	if err != nil || len(calls) == 0 {
		return out, err
	}
	slices.SortStableFunc(calls, episode.Order)
	return episode.MergeInto(out, calls), nil
}
