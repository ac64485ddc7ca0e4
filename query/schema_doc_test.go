package query

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README documents the schema for users writing their own SQL; this
// keeps it from drifting when a table changes.
func TestREADMEDocumentsSchema(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "## Schema")
	if start < 0 {
		t.Fatal("README has no Schema section")
	}
	section := readme[start:]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	for _, tb := range append([]Table{FileStates, DirStates}, FileTables...) {
		row := ""
		for _, l := range strings.Split(section, "\n") {
			if strings.HasPrefix(l, "| `"+tb.Name+"`") {
				row = l
			}
		}
		if row == "" {
			t.Errorf("README's schema table has no row for %s", tb.Name)
			continue
		}
		for _, c := range tb.Columns {
			if !strings.Contains(row, c.Name) && !(strings.Contains(row, "…") && (c.Name == "file_id" || c.Name == "line" || c.Name == "run_id" || c.Name == "ts")) &&
				!(tb.Name == "file_states" && strings.Contains(row, "columns of `files`")) {
				t.Errorf("README's row for %s does not mention column %s", tb.Name, c.Name)
			}
		}
	}
}

func TestOldStoreIsRefusedWithAdvice(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.duckdb")
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Simulate an older store: a table without a column, and another hash.
	for _, q := range []string{`ALTER TABLE run_spans DROP COLUMN events`, `UPDATE meta SET value = 'old' WHERE key = 'schema_hash'`} {
		if _, err := st.conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	_, err = Open(ctx, path, Options{})
	if err == nil || !strings.Contains(err.Error(), "delete it and ingest again") || !strings.Contains(err.Error(), "run_spans") {
		t.Fatalf("got %v", err)
	}
}
