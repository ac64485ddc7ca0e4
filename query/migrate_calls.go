package query

import (
	"context"
	"strings"

	systemspec "github.com/orchstat/orchstat/model/systems"
)

// Stores made before calls kept cache tokens apart hold Claude Code
// transcripts' input with the cache folded in, and no cache columns; those
// made before 1-hour cache writes were kept apart price them all at the
// 5-minute rate; those made before calls kept their working folder (cwd)
// name OpenTelemetry events' calls by their place in the file, so that
// two files of one session could be taken for copies of one call.
// Their tables cannot be altered into the new meaning: the agents' files
// are forgotten (their rows and ingest state, as Forget does) and the two
// tables made anew, so the next ingest reads those files again. Nothing
// else in the store changes.

// rereadWhenMissing are the calls columns whose arrival changed what the
// older rows mean (input tokens with the cache folded in; cache writes
// priced at one rate; OpenTelemetry events' call ids by place in the file,
// which two rotated files of one session share, where cwd came with ids
// by time). A store without one is outdated and its agents'
// files are read again; their rows of files deleted since are lost, so a
// column that only adds something is added with ALTER TABLE in
// tableStatements instead, as exec_invocations' dir was, and the rows
// keep a NULL there.
var rereadWhenMissing = []string{"cache_read_tokens", "cache_write_1h_tokens", "cwd"}

// callsOutdated reports whether the store has a calls table without one
// of rereadWhenMissing.
func (s *Store) callsOutdated(ctx context.Context) (bool, error) {
	var cols string
	err := s.conn.QueryRowContext(ctx, `SELECT coalesce(string_agg(column_name, ','), '') FROM duckdb_columns()
		WHERE table_name = 'calls' AND schema_name = 'main'`).Scan(&cols)
	if err != nil || cols == "" {
		return false, err
	}
	for _, c := range rereadWhenMissing {
		if !strings.Contains(","+cols+",", ","+c+",") {
			return true, nil
		}
	}
	return false, nil
}

// rereadCalls forgets the files that gave calls to an outdated store's
// calls table and drops the tables of calls, inside migrate's
// transaction.
func (s *Store) rereadCalls(ctx context.Context) (files int64, err error) {
	old, err := s.callsOutdated(ctx)
	if err != nil || !old {
		return 0, err
	}
	// Files of the agents' kinds that gave no row are read again too: an
	// older reader may have quarantined them whole (xorcise's wrapped
	// OTLP), and unchanged, they would never be read by the newer one.
	ids := `SELECT file_id FROM calls UNION SELECT file_id FROM call_attempts
		UNION SELECT file_id FROM record_runs WHERE system IN (` + quoted(systemspec.Names(func(s systemspec.System) bool { return s.Calls })) + `)
		UNION SELECT file_id FROM files WHERE kind IN (` + quoted(systemspec.CallKinds()) + `)`
	// The ids are kept aside first: the tables they come from are among
	// those emptied.
	stmts := []string{`CREATE TEMP TABLE reread_files AS ` + ids}
	for _, t := range FileTables {
		if t.Name == Calls.Name || t.Name == CallAttempts.Name {
			continue
		}
		stmts = append(stmts, `DELETE FROM `+t.Name+` WHERE file_id IN (SELECT file_id FROM reread_files)`)
	}
	stmts = append(stmts,
		`DELETE FROM file_states WHERE file_id IN (SELECT file_id FROM reread_files)`,
		`DROP TABLE calls`, `DROP TABLE call_attempts`, `DROP TABLE reread_files`)
	for i, q := range stmts {
		if _, err := s.conn.ExecContext(ctx, q); err != nil {
			return 0, err
		}
		if i == 0 {
			if err := s.conn.QueryRowContext(ctx, `SELECT count(*) FROM reread_files`).Scan(&files); err != nil {
				return 0, err
			}
		}
	}
	return files, nil
}

// quoted is a list of SQL strings.
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteSQL(n)
	}
	return strings.Join(q, ", ")
}
