package query

import (
	"context"
	"database/sql"
	"fmt"
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
