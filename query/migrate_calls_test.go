package query

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// A store whose calls table predates the cache columns (its input tokens
// held a transcript's cache reads and writes) forgets the agents' files,
// so the next ingest reads them again in the new meaning, and keeps the
// rest: before, opening it failed with "made by another version".
func TestOutdatedCallsAreReadAgain(t *testing.T) {
	for name, old := range map[string]string{
		"no cache columns": `CREATE TABLE calls (file_id INTEGER, system VARCHAR, input_tokens DOUBLE, output_tokens DOUBLE)`,
		// Its cache writes were all priced at the 5-minute rate.
		"no 1-hour cache writes": `CREATE TABLE calls (file_id INTEGER, system VARCHAR, input_tokens DOUBLE, cache_read_tokens DOUBLE, cache_write_tokens DOUBLE, output_tokens DOUBLE)`,
	} {
		t.Run(name, func(t *testing.T) { testOutdatedCalls(t, old) })
	}
}

func testOutdatedCalls(t *testing.T, create string) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.duckdb")
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DROP TABLE calls`,
		create,
		`INSERT INTO calls (file_id, system, input_tokens, output_tokens) VALUES (7, 'claude-code', 59114, 4)`,
		`INSERT INTO file_states (seq, file_id, path, kind) VALUES (1, 7, '/t/a.jsonl', 'claude-code'), (1, 8, '/t/trace.jsonl', 'trace')`,
		// An agent's file the older reader quarantined whole: no rows, and
		// unchanged it would never be read by the newer reader.
		`INSERT INTO file_states (seq, file_id, path, kind) VALUES (1, 9, '/t/wrapped.json', 'otlp')`,
		`INSERT INTO run_spans VALUES (8, 'r1', NULL, NULL, 1)`,
		`UPDATE meta SET value = 'old' WHERE key = 'schema_hash'`,
	} {
		if _, err := st.conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st.Close()

	st, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Reread != 2 {
		t.Errorf("Reread %d, want the 2 agents' files set aside, for the command to say so", st.Reread)
	}
	var states, spans, calls int
	var cols string
	if err := st.conn.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM file_states WHERE file_id IN (7, 9)),
		(SELECT count(*) FROM run_spans), (SELECT count(*) FROM calls),
		(SELECT string_agg(column_name, ',') FROM duckdb_columns() WHERE table_name = 'calls' AND column_name LIKE 'cache%')`).
		Scan(&states, &spans, &calls, &cols); err != nil {
		t.Fatal(err)
	}
	if states != 0 || calls != 0 || spans != 1 || cols != "cache_read_tokens,cache_write_tokens,cache_write_1h_tokens" {
		t.Fatalf("agent file states %d, calls %d, other rows %d, cache columns %q", states, calls, spans, cols)
	}
}

// TestRereadColumnsAreCallsColumns: a column that forces a re-read must be
// one rows.Call declares, or no store would ever stop being outdated.
func TestRereadColumnsAreCallsColumns(t *testing.T) {
	for _, c := range rereadWhenMissing {
		if !slices.ContainsFunc(Calls.Columns, func(col Column) bool { return col.Name == c }) {
			t.Errorf("rereadWhenMissing names %q, which is no column of calls", c)
		}
	}
}
