package query

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/model/rows"
)

// pathsCond renders a condition on col, a stored file path, that holds for
// files at or under one of paths (absolute and cleaned, as ingest stores
// them). A path stored in the escaped form of StoreString keeps the named
// prefix after its marker, with backslashes doubled, so it is matched too.
func pathsCond(col string, paths []string) (string, []any) {
	var ors []string
	var args []any
	for _, p := range paths {
		p = strings.TrimSuffix(p, "/")
		esc := rows.BytesPrefix + strings.ReplaceAll(p, `\`, `\\`)
		ors = append(ors, fmt.Sprintf("(%[1]s = ? OR starts_with(%[1]s, ?) OR starts_with(%[1]s, ?))", col))
		args = append(args, rows.StoreString(p), rows.StoreString(p)+"/", esc+"/")
	}
	if len(ors) == 0 {
		return "false", nil
	}
	return "(" + strings.Join(ors, " OR ") + ")", args
}

// scopedRuns renders the ids of the runs found in files under paths: the
// orchestrator's runs and every other system's record runs.
func scopedRuns(paths []string) (string, []any) {
	cond, args := pathsCond("path", paths)
	return `SELECT s.run_id FROM run_spans s WHERE s.file_id IN (SELECT file_id FROM files WHERE ` + cond + `)
		UNION SELECT r.run_id FROM record_runs r WHERE r.file_id IN (SELECT file_id FROM files WHERE ` + cond + `)`,
		append(args, args...)
}

// ScopeOf counts the store's runs, and those of them not found under paths
// (none left out when paths is empty: the whole store).
func (s *Store) ScopeOf(ctx context.Context, paths []string) (reports.Scope, error) {
	sc := reports.Scope{Paths: paths}
	if sc.Paths == nil {
		sc.Paths = []string{}
	}
	in := "0"
	var args []any
	if len(paths) > 0 {
		// Every run comes from a file: when no file lies outside paths,
		// no run does, and the runs need not be matched to their files
		// (the common case, a cron check of the folder it always reads).
		cond, a := pathsCond("path", paths)
		var outside int64
		if err := eachRow(ctx, s.conn, "counting the store's files", `SELECT count(*) FROM files WHERE NOT `+cond, a,
			func(rs *sql.Rows) error { return rs.Scan(&outside) }); err != nil {
			return sc, err
		}
		in = "count(*)"
		if outside > 0 {
			runs, a := scopedRuns(paths)
			in = `count(*) FILTER (WHERE run_id IN (` + runs + `))`
			args = a
		}
	}
	var inScope int64
	err := eachRow(ctx, s.conn, "counting the store's runs",
		`SELECT count(*), `+in+` FROM (`+allRunsSQL+`)`, args,
		func(rs *sql.Rows) error { return rs.Scan(&sc.RunsInStore, &inScope) })
	if len(paths) > 0 {
		sc.RunsLeftOut = sc.RunsInStore - inScope
	}
	return sc, err
}
