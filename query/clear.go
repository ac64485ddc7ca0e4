package query

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// Clear deletes every row of every table but the schema's own record, in
// one transaction: the store is then as a fresh one, without paying for
// creating the schema again (rules test runs each test on a cleared store;
// creating one per test was most of its time). The tables are read from
// the database, so a table added later is cleared too.
func (s *Store) Clear(ctx context.Context) error {
	return s.inTransaction(ctx, "clearing the store", func() error {
		var tables []string
		err := eachRow(ctx, s.conn, "listing the tables", `SELECT schema_name, table_name FROM duckdb_tables()
			WHERE database_name = current_database() AND NOT temporary AND table_name <> 'meta'`, nil,
			func(rs *sql.Rows) error {
				var schema, name string
				if err := rs.Scan(&schema, &name); err != nil {
					return err
				}
				tables = append(tables, fmt.Sprintf("%q.%q", schema, name))
				return nil
			})
		if err != nil {
			return err
		}
		for _, t := range tables {
			if _, err := s.conn.ExecContext(ctx, "DELETE FROM "+t); err != nil {
				return err
			}
		}
		return nil
	})
}

// Forgotten is what Forget removed.
type Forgotten struct {
	Files       int64 // source files whose rows and state went
	Events      int64 // trace events
	Records     int64 // other systems' record runs
	Quarantined int64 // quarantined lines
}

// Forget removes every row of the files at or under paths, their ingest
// state and the listings of run directories there, in one transaction, so
// the next ingest reads them as new: how a file read the wrong way is read
// again. Nothing else in the store changes.
func (s *Store) Forget(ctx context.Context, paths []string) (Forgotten, error) {
	var out Forgotten
	cond, args := pathsCond("path", paths)
	ids := `SELECT DISTINCT file_id FROM file_states WHERE ` + cond
	fail := func(err error) (Forgotten, error) {
		s.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return Forgotten{}, fmt.Errorf("forgetting %s: %w", strings.Join(paths, ", "), cleanDuckErr(err))
	}
	if _, err := s.conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return fail(err)
	}
	if err := s.conn.QueryRowContext(ctx, `SELECT count(*) FROM (`+ids+`)`, args...).Scan(&out.Files); err != nil {
		return fail(err)
	}
	// The runs whose rows go: their figures are made again from what is
	// left (none, for a run whose every file goes).
	if _, err := s.conn.ExecContext(ctx, `CREATE OR REPLACE TEMP TABLE touched_runs AS SELECT DISTINCT run_id FROM (
		SELECT run_id FROM run_spans WHERE file_id IN (`+ids+`) UNION ALL SELECT run_id FROM summaries WHERE file_id IN (`+ids+`))`,
		append(slices.Clone(args), args...)...); err != nil {
		return fail(err)
	}
	for _, t := range FileTables {
		res, err := s.conn.ExecContext(ctx, `DELETE FROM `+t.Name+` WHERE file_id IN (`+ids+`)`, args...)
		if err != nil {
			return fail(err)
		}
		n, _ := res.RowsAffected()
		switch t.Name {
		case Events.Name:
			out.Events = n
		case RecordRuns.Name:
			out.Records = n
		case Quarantine.Name:
			out.Quarantined = n
		}
	}
	for _, q := range []string{
		`DELETE FROM file_states WHERE file_id IN (` + ids + `)`,
		`DELETE FROM dir_states WHERE ` + cond,
		`DELETE FROM sealed_dirs WHERE ` + cond,
	} {
		if _, err := s.conn.ExecContext(ctx, q, args...); err != nil {
			return fail(err)
		}
	}
	restore, err := s.figuresMemory(ctx)
	if err != nil {
		return fail(err)
	}
	err = s.refreshFigures(ctx)
	restore()
	if err != nil {
		return fail(err)
	}
	if _, err := s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fail(err)
	}
	return out, s.Checkpoint(ctx)
}
