package query

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/schema.md documents the schema for users writing their own SQL. It
// is generated (go run ./cmd/orchstat gen-docs docs); this keeps it from
// drifting when a table changes, and checks that it names every column.
func TestDocsDocumentSchema(t *testing.T) {
	b, err := os.ReadFile("../docs/schema.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	want, err := SchemaDoc(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if doc != want {
		t.Errorf("docs/schema.md is stale; run go run ./cmd/orchstat gen-docs docs")
	}
	start := strings.Index(doc, "## Tables and views")
	if start < 0 {
		t.Fatal("docs/schema.md has no Tables and views section")
	}
	section := doc[start:]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	for _, tb := range append([]Table{FileStates, DirStates, AlertState, Notifications, NotifyGroups, ExecInvocations}, FileTables...) {
		row := ""
		for _, l := range strings.Split(section, "\n") {
			if strings.HasPrefix(l, "| `"+tb.Name+"`") {
				row = l
			}
		}
		if row == "" {
			t.Errorf("docs/schema.md's table has no row for %s", tb.Name)
			continue
		}
		for _, c := range tb.Columns {
			if !strings.Contains(row, c.Name) {
				t.Errorf("docs/schema.md's row for %s does not mention column %s", tb.Name, c.Name)
			}
		}
	}
}

// Every column note names a column that exists, so a renamed column does
// not leave its note behind unseen.
func TestSchemaColumnNotesNameColumns(t *testing.T) {
	cols, err := liveColumns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for key := range columnNotes {
		table, col, _ := strings.Cut(key, ".")
		found := false
		for _, c := range cols[table] {
			found = found || c.Name == col
		}
		if !found {
			t.Errorf("columnNotes has %s, which is no column", key)
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
