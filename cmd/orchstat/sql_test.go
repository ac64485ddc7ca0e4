package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/query"
)

func sqlStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	writeRequests(t, runs, "r1", time.Now(), 30, 15)
	db := filepath.Join(dir, "o.duckdb")
	if code, _, stderr := runCLI(t, "", "--db", db, "ingest", "-q", runs); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, stderr)
	}
	return db
}

// TestSQLErrors: a syntax error is called one (`selct 1` was "SELCT
// statements are refused"), a smuggled second statement is refused, and a
// query past --timeout is stopped.
func TestSQLErrors(t *testing.T) {
	endToEnd(t, "queries a real store")
	t.Parallel()
	db := sqlStore(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"selct 1"}, `syntax error in the query: at or near "selct"`},
		{[]string{"SELECT $$'$$; CREATE TEMP TABLE pwn AS SELECT 42; SELECT $$'$$"}, "read-only"},
		{[]string{"--timeout", "300ms", "SELECT count(*) FROM range(100000000000) a, range(10) b"}, "stopped after --timeout 300ms"},
	} {
		code, _, stderr := runCLI(t, "", append([]string{"--db", db, "sql"}, tc.args...)...)
		if code != exitError || !strings.Contains(stderr, tc.want) {
			t.Errorf("sql %q: exit %d, stderr %q; want 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestSQLHoldsNoLock: while a long `orchstat sql` runs, a writer (cron's
// check) gets the store at once: sql reads a snapshot. Before, check gave
// up after its --lock-timeout and went UNKNOWN.
func TestSQLHoldsNoLock(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes; go test ./... runs it (skipped under -short)")
	}
	db := sqlStore(t)
	cmd := runOrchstat("--db", db, "sql", "--timeout", "60s", "SELECT count(*) FROM range(100000000000) a, range(10) b")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Once its snapshot is taken, the query runs on it.
	deadline := time.Now().Add(60 * time.Second)
	for {
		es, _ := os.ReadDir(db + ".snapshots")
		if len(es) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sql never took its snapshot: %s", stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the copy is done and the lock let go
	st, err := query.Open(context.Background(), db, query.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("a writer waited for a running sql: %v", err)
	}
	st.Close()
}

// TestSQLQueryFromFileOrStdin: the query can come from --file or, for -,
// standard input; before, only the argument was read.
func TestSQLQueryFromFileOrStdin(t *testing.T) {
	endToEnd(t, "queries a real store")
	t.Parallel()
	db := sqlStore(t)
	q := "-- a query with 'quotes' and \"identifiers\"\nSELECT 'it''s' AS \"the answer\", 41 + 1 AS n\n"
	file := filepath.Join(t.TempDir(), "q.sql")
	if err := os.WriteFile(file, []byte(q), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "the answer,n\nit's,42\n"
	for _, tc := range []struct {
		name, stdin string
		args        []string
	}{
		{"--file", "", []string{"--file", file}},
		{"stdin", q, []string{"-"}},
	} {
		code, stdout, stderr := runCLI(t, tc.stdin, append([]string{"--db", db, "sql", "--format", "csv"}, tc.args...)...)
		if code != 0 || stdout != want {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.name, code, stdout, stderr)
		}
	}
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"--file", file, "SELECT 1"}, "not both"},
		{"", nil, "no query"},
		{"", []string{"--file", filepath.Join(t.TempDir(), "missing.sql")}, "--file"},
		{"", []string{"-"}, "empty"},
		{"selct 1", []string{"-"}, `syntax error in the query: at or near "selct"`},
	} {
		code, _, stderr := runCLI(t, tc.stdin, append([]string{"--db", db, "sql"}, tc.args...)...)
		wantCode := exitUsage
		if strings.Contains(tc.want, "syntax") {
			wantCode = exitError
		}
		if code != wantCode || !strings.Contains(stderr, tc.want) {
			t.Errorf("sql %q (stdin %q): exit %d, stderr %q; want %d and %q", tc.args, tc.stdin, code, stderr, wantCode, tc.want)
		}
	}
}

// TestSQLShowsJSONAsText: a JSON value is shown as DuckDB holds it, keys
// in order and numbers as written, not as the driver decodes it.
func TestSQLShowsJSONAsText(t *testing.T) {
	endToEnd(t, "queries a real store")
	t.Parallel()
	db := sqlStore(t)
	q := `SELECT json_object('b', 1, 'a', [1, 2]) AS o, '{"z": 1.50}'::JSON AS j, 1 AS o -- a comment`
	code, out, stderr := runCLI(t, "", "--db", db, "sql", "-f", "csv", q)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "o,j,o\n\"{\"\"b\"\":1,\"\"a\"\":[1,2]}\",\"{\"\"z\"\": 1.50}\",1\n"; out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}

// TestSQLShowsDuckDBTypes: a UUID, which duckdb-go hands over as 16 bare
// bytes, is shown in its usual form, unlike a BLOB of 16 bytes, and a MAP
// as an object.
func TestSQLShowsDuckDBTypes(t *testing.T) {
	endToEnd(t, "queries a real store")
	t.Parallel()
	db := sqlStore(t)
	q := `SELECT '6ba7b810-9dad-11d1-80b4-00c04fd430c8'::UUID AS u, 'abcdefghijklmnop'::BLOB AS b, MAP {'b': 1, 'a': 2} AS m`
	code, out, stderr := runCLI(t, "", "--db", db, "sql", "-f", "csv", q)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "u,b,m\n6ba7b810-9dad-11d1-80b4-00c04fd430c8,abcdefghijklmnop,\"{\"\"a\"\":2,\"\"b\"\":1}\"\n"; out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
}
