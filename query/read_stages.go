package query

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/orchstat/orchstat/model/episode"
)

// StageHistory is orchestr8's history as rules/retry's Adaptive reads it:
// one episode.StageOutcome per recorded run, oldest first, Failed when
// the run's status is "failure" and Stage its ended_stage (the stage of
// its last failure: orchestr8's failedStage). Every run counts, failed or not, as
// every pipeline-history entry counts in orchestr8's calculateFailureRate
// (src/retry.js: failedAtStage / recent.length).
//
// system "" takes the runs of every system whose records have stages: a
// run with an ended_stage, or an attempt or stage row naming one.
//
// Runs are ordered by when they started, or else by their first attempt,
// or else by when they finished (an orchestr8 entry may record only its
// completedAt); runs with no time at all come first, so that they are the
// first to leave the window, then by file and run id. orchestr8 itself
// takes the file's order (history.slice(-windowSize)), which is the order
// its runs were appended in, so the same as time order.
//
// The warnings name what the history is missing: record files quarantined
// whole (corrupt, or of a format not read yet) and files some of whose
// records were skipped, so that a recommendation made from the rest says so.
// orchestr8's adaptive retry spec has a corrupt history default to a simple
// retry (line 168): a file quarantined whole adds no runs, so when it is the
// only history that is what follows, and other files in the store still
// count. With system "", a history that mixes systems says so too, since
// their runs then share one window.
func (s *Store) StageHistory(ctx context.Context, system string, paths []string) ([]episode.StageOutcome, []string, error) {
	scope, args := "", []any{system, system}
	if len(paths) > 0 {
		runs, a := scopedRuns(paths)
		scope = " AND r.run_id IN (" + runs + ")"
		args = append(args, a...)
	}
	rs, err := s.conn.QueryContext(ctx, `WITH staged AS (
	  SELECT system FROM attempt_runs WHERE ended_stage IS NOT NULL
	  UNION SELECT system FROM attempts WHERE stage IS NOT NULL
	  UNION SELECT system FROM attempt_stages),
	first_attempt AS (SELECT system, run_id, min(ts) AS ts FROM attempts GROUP BY ALL)
	SELECT r.system, coalesce(r.status = 'failure', false), coalesce(r.ended_stage, '')
	FROM attempt_runs r LEFT JOIN first_attempt a USING (system, run_id)
	WHERE CASE WHEN ? = '' THEN r.system IN (SELECT system FROM staged) ELSE r.system = ? END`+scope+`
	ORDER BY coalesce(r.started_at, a.ts, r.finished_at) ASC NULLS FIRST, r.file_id, r.run_id`, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the stage history: %w", err)
	}
	defer rs.Close()
	var out []episode.StageOutcome
	perSystem := map[string]int{}
	for rs.Next() {
		var sys string
		var o episode.StageOutcome
		if err := rs.Scan(&sys, &o.Failed, &o.Stage); err != nil {
			return nil, nil, err
		}
		perSystem[sys]++
		out = append(out, o)
	}
	if err := rs.Err(); err != nil {
		return nil, nil, err
	}
	warns, err := historyProblems(ctx, s.conn, system)
	if err != nil {
		return nil, nil, err
	}
	if len(perSystem) > 1 {
		var parts []string
		for sys, n := range perSystem {
			parts = append(parts, fmt.Sprintf("%s (%d)", sys, n))
		}
		sort.Strings(parts)
		warns = append(warns, fmt.Sprintf("the history mixes the runs of %s in one window, oldest first; name one system to keep them apart", strings.Join(parts, ", ")))
	}
	return out, warns, nil
}

// historyProblems describes the record files of system (every system for
// "") that were quarantined whole or in part. Configuration files are left
// out: they are not history, and whoever reads one reports its problems.
// Record kinds are "<system>_<what>" (model/systems' Kind constants), so
// the system is the kind's prefix.
func historyProblems(ctx context.Context, q querier, system string) ([]string, error) {
	rs, err := q.QueryContext(ctx, `WITH qf AS (
	  SELECT f.file_id, f.path, f.kind FROM files f
	  WHERE f.kind NOT IN ('trace', 'summary', 'verification', 'stdin') AND NOT ends_with(f.kind, '_config')
	    AND CASE WHEN $1 = '' THEN true ELSE starts_with(f.kind, $1 || '_') END)
	SELECT qf.path, qf.kind,
	  NOT EXISTS (SELECT 1 FROM record_runs r WHERE r.file_id = qf.file_id)
	    AND NOT EXISTS (SELECT 1 FROM record_attempts a WHERE a.file_id = qf.file_id) AS whole,
	  count(*) AS n,
	  arg_min(coalesce(q.line, 0), (coalesce(q.line, 0), q.byte_offset)) AS line,
	  arg_min(coalesce(q.field, ''), (coalesce(q.line, 0), q.byte_offset)) AS field,
	  arg_min(coalesce(q.reason, ''), (coalesce(q.line, 0), q.byte_offset)) AS reason
	FROM qf JOIN quarantine q USING (file_id)
	GROUP BY ALL ORDER BY qf.path`, system)
	if err != nil {
		return nil, fmt.Errorf("reading quarantined history files: %w", err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var path, kind, field, reason string
		var whole bool
		var n, line int64
		if err := rs.Scan(&path, &kind, &whole, &n, &line, &field, &reason); err != nil {
			return nil, err
		}
		what := "record file"
		if strings.HasSuffix(kind, "_history") {
			what = "history file"
		}
		reason = bareReason(reason, line, field)
		where := location(line, field)
		if whole {
			if where != "" {
				where = " (" + where + ")"
			}
			out = append(out, fmt.Sprintf("%s %s is corrupt%s: %s; recommending from the rest", what, path, where, reason))
			continue
		}
		records := "record was"
		if n != 1 {
			records = "records were"
		}
		detail := reason
		if where != "" {
			detail = where + ": " + reason
		}
		if n > 1 {
			detail = "the first at " + detail
			if where == "" {
				detail = "the first: " + reason
			}
		}
		out = append(out, fmt.Sprintf("%s %s: %d %s skipped (%s); recommending from the rest", what, path, n, records, detail))
	}
	return out, rs.Err()
}

// location is "line L, field F" with what is known of the two.
func location(line int64, field string) string {
	var parts []string
	if line > 0 {
		parts = append(parts, fmt.Sprintf("line %d", line))
	}
	if field != "" {
		parts = append(parts, "field "+field)
	}
	return strings.Join(parts, ", ")
}

// bareReason drops the "line L: field: " that a *records.Error's text
// repeats from the quarantine row's own columns.
func bareReason(reason string, line int64, field string) string {
	if line > 0 {
		reason = strings.TrimPrefix(reason, fmt.Sprintf("line %d: ", line))
	}
	if field != "" {
		reason = strings.TrimPrefix(reason, field+": ")
	}
	return reason
}

// StageAttempts counts the recorded failures of item at stage, for
// orchestr8's attempt count ("maxRetries attempts at same stage for same
// feature", line 69): each failed attempt whose stage it is, and each run
// that failed there without attempts recorded. system "" counts every
// system.
func (s *Store) StageAttempts(ctx context.Context, system, item, stage string) (int, error) {
	rs, err := s.conn.QueryContext(ctx, `SELECT
	  (SELECT count(*) FROM attempts a
	   WHERE a.item = $2 AND a.stage = $3 AND a.passed IS DISTINCT FROM true AND ($1 = '' OR a.system = $1))
	+ (SELECT count(*) FROM attempt_runs r
	   WHERE r.item = $2 AND r.ended_stage = $3 AND r.status = 'failure' AND ($1 = '' OR r.system = $1)
	     AND NOT EXISTS (SELECT 1 FROM attempts a WHERE a.system = r.system AND a.run_id = r.run_id))`, system, item, stage)
	if err != nil {
		return 0, fmt.Errorf("counting attempts at %s: %w", stage, err)
	}
	defer rs.Close()
	n := 0
	if rs.Next() {
		if err := rs.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rs.Err()
}
