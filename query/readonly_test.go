package query

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func openTestStore(t testing.TB) *Store {
	t.Helper()
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "o.duckdb"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestCheckReadOnly: what is run is decided by DuckDB's own parser. The
// hand-written splitter this replaced read `SELECT $$'$$; CREATE ...` as
// one SELECT, and DuckDB ran all three statements; it called `selct 1` a
// refused "SELCT statement" rather than a syntax error.
func TestCheckReadOnly(t *testing.T) {
	st := openTestStore(t)
	ctx := context.Background()
	for _, tc := range []struct {
		q, refused string
	}{
		{"SELECT 1", ""},
		{"  with x AS (SELECT 1) SELECT * FROM x;", ""},
		{"FROM runs LIMIT 3", ""},
		{"-- why\nDESCRIBE runs", ""},
		{"/* a; b */ SELECT ';' AS semi, 'odd;name' FROM runs", ""},
		{"(SELECT 1) UNION (SELECT 2)", ""},
		{"SELECT 1;", ""},
		{"SUMMARIZE events", ""},
		{"SHOW TABLES", ""},
		{"VALUES (1), (2)", ""},
		{"TABLE runs", ""},
		{"EXPLAIN SELECT count(*) FROM events", ""},
		{"/* c */ explain analyze SELECT 1", ""},
		{"SELECT 1; SELECT 2", "one statement at a time"},
		{"SELECT $$'$$; CREATE TEMP TABLE pwn AS SELECT 42; SELECT $$'$$", "one of these statements is not one"},
		{"SELECT 'a;b'; DROP VIEW runs", "read-only"},
		{"EXPLAIN SELECT 1; DROP VIEW runs", "read-only"},
		{"EXPLAIN DELETE FROM events", "read-only"},
		// DuckDB 1.5's parser refuses DML in a CTE outright.
		{"WITH x AS (DELETE FROM events RETURNING *) SELECT * FROM x", cteNeedsSelect},
		{"CREATE TEMP TABLE t AS SELECT 1", "CREATE"},
		{"drop view runs; select 1", "read-only"},
		{"insert into events select * from events", "INSERT"},
		{"COPY events TO 'x.csv'", "a COPY statement"},
		{"ATTACH 'x.duckdb'", "an ATTACH statement"},
		{"SET threads = 1", "SET"},
		{"PRAGMA version", "PRAGMA"},
		{"INSTALL httpfs", "an INSTALL statement"},
		{"LOAD httpfs", "LOAD"},
		{"CALL pragma_version()", "CALL"},
		{"EXPORT DATABASE '/tmp/x'", "EXPORT"},
		{"/* SELECT */ DELETE FROM events", "DELETE"},
		{"-- SELECT\nUPDATE meta SET value = 'x'", "UPDATE"},
		{"selct 1", "syntax error"},
		{"SELECT FROM WHERE", "syntax error"},
		{"", "empty"},
		{" ; -- nothing", "empty"},
	} {
		err := checkReadOnly(ctx, st.conn, tc.q)
		if tc.refused == "" {
			if err != nil {
				t.Errorf("%q refused: %v", tc.q, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.refused) {
			t.Errorf("%q: got %v, want refusal naming %s", tc.q, err, tc.refused)
		}
		var se *SyntaxError
		if isSyntax := errors.As(err, &se); isSyntax != (tc.refused == "syntax error" || tc.refused == cteNeedsSelect) {
			t.Errorf("%q: reported as a syntax error: %v (%v)", tc.q, isSyntax, err)
		}
	}
	// Nothing above ran.
	var n int
	if err := st.conn.QueryRowContext(ctx, `SELECT count(*) FROM duckdb_tables() WHERE table_name = 'pwn'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a refused statement ran (%d, %v)", n, err)
	}
}

// FuzzCheckReadOnly: whatever the check accepts changes nothing when run
// on a read-write connection, as a rule's sql is.
func FuzzCheckReadOnly(f *testing.F) {
	for _, s := range []string{"SELECT 1", "/* x */ DELETE FROM meta", "'unterminated", "--", "/*", "a;b;;c",
		"SELECT $$'$$; CREATE TABLE pwn AS SELECT 1; SELECT $$'$$", "EXPLAIN SELECT 1; DROP TABLE meta"} {
		f.Add(s)
	}
	st := openTestStore(f)
	f.Fuzz(func(t *testing.T, q string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if checkReadOnly(ctx, st.conn, q) != nil {
			return
		}
		before := catalog(t, st)
		if rs, err := st.conn.QueryContext(ctx, q); err == nil {
			rs.Close()
		}
		if after := catalog(t, st); after != before {
			t.Fatalf("accepted %q, which changed the catalog from %s to %s", q, before, after)
		}
	})
}

func catalog(t *testing.T, st *Store) string {
	var s string
	err := st.conn.QueryRowContext(context.Background(), `SELECT coalesce(string_agg(table_name || ':' || estimated_size, ',' ORDER BY table_name), '')
		FROM duckdb_tables()`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const cteNeedsSelect = "A CTE needs a SELECT"
