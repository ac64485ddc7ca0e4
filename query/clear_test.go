package query

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// Clear empties every table, the schema's record aside, so the store reads
// as a fresh one; the schema stays, so reopening needs no migration.
func TestClear(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "orchstat.duckdb")
	st, err := Open(ctx, db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := st.RecordExecInvocation(ctx, ExecInvocation{StartedAt: now, FinishedAt: now, Command: "make", Dir: "/a"}, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := st.conn.ExecContext(ctx, `INSERT INTO file_states (seq, file_id, path, kind) VALUES (1, 1, '/x/trace.jsonl', 'trace')`); err != nil {
		t.Fatal(err)
	}
	var meta int
	if err := st.conn.QueryRowContext(ctx, `SELECT count(*) FROM meta`).Scan(&meta); err != nil || meta == 0 {
		t.Fatalf("meta: %d, %v", meta, err)
	}
	if err := st.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := st.conn.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM exec_invocations) + (SELECT count(*) FROM file_states)`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("after Clear: %d rows, %v", rows, err)
	}
	var after int
	if err := st.conn.QueryRowContext(ctx, `SELECT count(*) FROM meta`).Scan(&after); err != nil || after != meta {
		t.Errorf("meta after Clear: %d rows, want %d (%v)", after, meta, err)
	}
	st.Close()
	if st, err = Open(ctx, db, Options{}); err != nil {
		t.Fatalf("reopening a cleared store: %v", err)
	}
	st.Close()
}
