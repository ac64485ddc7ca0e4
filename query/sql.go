package query

import (
	"context"
	"fmt"

	"github.com/orchstat/orchstat/reports"
)

// ReadOnly runs a user's query on a store opened read-only. External access
// is switched off first, and locked, because read-only mode alone still lets
// COPY ... TO write files and ATTACH open other databases.
func ReadOnly(ctx context.Context, st *Store, q string) (reports.Table, error) {
	var t reports.Table
	for _, s := range []string{"SET enable_external_access = false", "SET lock_configuration = true"} {
		if _, err := st.Conn.ExecContext(ctx, s); err != nil {
			return t, fmt.Errorf("securing the connection: %w", err)
		}
	}
	if err := checkReadOnly(ctx, st.Conn, q); err != nil {
		return t, err
	}
	return queryTable(ctx, st.Conn, "", q)
}

// queryTable runs q and collects its result as a reports.Table.
func queryTable(ctx context.Context, db querier, title, q string) (reports.Table, error) {
	t := reports.Table{Title: title}
	rs, err := db.QueryContext(ctx, q)
	if err != nil {
		return t, cleanDuckErr(err)
	}
	defer rs.Close()
	if t.Columns, err = rs.Columns(); err != nil {
		return t, err
	}
	for rs.Next() {
		vals := make([]any, len(t.Columns))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return t, err
		}
		t.Rows = append(t.Rows, vals)
	}
	return t, cleanDuckErr(rs.Err())
}

// Quarantined lists quarantined lines by file path and line.
func Quarantined(ctx context.Context, st *Store, limit int) (reports.Table, error) {
	q := `SELECT path, line, byte_offset, field, reason, raw, raw_bytes, ingested_at FROM quarantine ORDER BY path, line, byte_offset`
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	return queryTable(ctx, st.Conn, "Quarantined lines", q)
}
