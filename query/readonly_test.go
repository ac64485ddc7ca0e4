package query

import (
	"strings"
	"testing"
)

func TestCheckReadOnly(t *testing.T) {
	for _, tc := range []struct {
		q, refused string
	}{
		{"SELECT 1", ""},
		{"  with x AS (SELECT 1) SELECT * FROM x;", ""},
		{"FROM runs LIMIT 3", ""},
		{"-- why\nDESCRIBE runs", ""},
		{"/* a; b */ SELECT ';' AS semi, \"odd;name\" FROM runs", ""},
		{"(SELECT 1) UNION (SELECT 2)", ""},
		{"SELECT 1; SELECT 2", "one statement at a time"},
		{"SELECT 1;", ""},
		{"SUMMARIZE events", ""},
		{"CREATE TEMP TABLE t AS SELECT 1", "CREATE"},
		{"drop view runs; select 1", "DROP"},
		{"insert into events select * from events", "INSERT"},
		{"COPY events TO 'x.csv'", "COPY"},
		{"ATTACH 'x.duckdb'", "ATTACH"},
		{"SET threads = 1", "SET"},
		{"PRAGMA version", "PRAGMA"},
		{"INSTALL httpfs", "INSTALL"},
		{"/* SELECT */ DELETE FROM events", "DELETE"},
		{"", "empty"},
		{" ; -- nothing", "empty"},
	} {
		err := CheckReadOnly(tc.q)
		if tc.refused == "" {
			if err != nil {
				t.Errorf("%q refused: %v", tc.q, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.refused) {
			t.Errorf("%q: got %v, want refusal naming %s", tc.q, err, tc.refused)
		}
	}
}

func FuzzCheckReadOnly(f *testing.F) {
	for _, s := range []string{"SELECT 1", "/* x */ DELETE", "'unterminated", "--", "/*", "a;b;;c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		err := CheckReadOnly(q)
		// Anything accepted starts, after comments, with a query keyword.
		if err == nil {
			for _, s := range splitStatements(q) {
				if !readOnlyStarts[firstKeyword(s)] {
					t.Fatalf("accepted %q", q)
				}
			}
		}
	})
}
