package query

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
)

// ReadOnly runs a user's query on a store opened read-only. External access
// is switched off first, and locked, because read-only mode alone still lets
// COPY ... TO write files and ATTACH open other databases.
func (st *Store) ReadOnly(ctx context.Context, q string) (reports.Table, error) {
	var t reports.Table
	// The user's query may read priced_calls.
	if err := st.priced(ctx); err != nil {
		return t, err
	}
	for _, s := range []string{"SET enable_external_access = false", "SET lock_configuration = true"} {
		if _, err := st.conn.ExecContext(ctx, s); err != nil {
			return t, fmt.Errorf("securing the connection: %w", err)
		}
	}
	if err := checkReadOnly(ctx, st.conn, q); err != nil {
		return t, err
	}
	if text, ok := jsonAsText(ctx, st.conn, q); ok {
		t, err := queryTable(ctx, st.conn, "", text)
		// A query the wrapping does not parse in (one that ends in a
		// comment after its semicolon, say) is run as it was.
		if err == nil || !strings.Contains(err.Error(), "Parser Error") {
			return t, err
		}
	}
	return queryTable(ctx, st.conn, "", q)
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
	dbTypes := make([]string, len(t.Columns))
	if types, err := rs.ColumnTypes(); err == nil {
		for i, ct := range types {
			dbTypes[i] = ct.DatabaseTypeName()
		}
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
		for i, v := range vals {
			vals[i] = plainValue(v, dbTypes[i])
		}
		t.Rows = append(t.Rows, vals)
	}
	return t, cleanDuckErr(rs.Err())
}

// Quarantined lists quarantined lines by file path and line.
func (st *Store) Quarantined(ctx context.Context, limit int) (reports.Table, error) {
	q := `SELECT path, line, byte_offset, field, reason, raw, raw_bytes, ingested_at FROM quarantine ORDER BY path, line, byte_offset`
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	return queryTable(ctx, st.conn, "Quarantined lines", q)
}

// QuarantineCount is how many lines the store holds in quarantine, so a
// limited listing can say how many it left out.
func (st *Store) QuarantineCount(ctx context.Context) (int64, error) {
	var n int64
	err := st.conn.QueryRowContext(ctx, `SELECT count(*) FROM quarantine`).Scan(&n)
	return n, cleanDuckErr(err)
}

// jsonAsText wraps q so that its JSON columns come back as their text,
// column by column in place, or reports false if q has none. The driver
// hands a JSON value over decoded, its keys sorted and its numbers as
// float64s; the text is what the user asked for. DESCRIBE binds q without
// running it.
func jsonAsText(ctx context.Context, db querier, q string) (string, bool) {
	body := strings.TrimRight(strings.TrimSpace(q), "; \t\n")
	rs, err := db.QueryContext(ctx, "DESCRIBE "+body)
	if err != nil {
		return "", false
	}
	defer rs.Close()
	var sb strings.Builder
	found := false
	sb.WriteString("SELECT ")
	for i := 1; rs.Next(); i++ {
		var name, typ string
		var null, key, def, extra sql.NullString
		if err := rs.Scan(&name, &typ, &null, &key, &def, &extra); err != nil {
			return "", false
		}
		if i > 1 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "#%d", i)
		if typ == "JSON" {
			sb.WriteString("::VARCHAR")
			found = true
		}
		sb.WriteString(" AS " + quoteIdent(name))
	}
	if rs.Err() != nil || !found {
		return "", false
	}
	// The newline ends a comment the query may end with.
	sb.WriteString(" FROM (\n" + body + "\n) AS q")
	return sb.String(), true
}
