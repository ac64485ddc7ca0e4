package ingest_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/query"
)

// An agent's transcript that grows past 64 MiB keeps the calls read from
// it before, and says why the rest is not read. Before, the next ingest
// deleted its 1,100 calls and left one quarantine row.
func TestGrownAgentFileKeepsItsRows(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("claudecode", "testdata", "clean.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude", "projects", "-w", "session.jsonl")
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := filepath.Join(dir, "s.duckdb")
	// Each step opens the store afresh: a read-only query locks DuckDB's
	// settings, which an ingest sets.
	count := func(q string) any {
		t.Helper()
		st, err := query.Open(ctx, db, query.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		tbl, err := query.ReadOnly(ctx, st, q)
		if err != nil {
			t.Fatal(err)
		}
		return tbl.Rows[0][0]
	}
	ingestAll := func() {
		t.Helper()
		st, err := query.Open(ctx, db, query.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := ingest.Run(ctx, st, ingest.Options{Paths: []string{filepath.Join(dir, ".claude")}}); err != nil {
			t.Fatal(err)
		}
	}
	ingestAll()
	before := count(`SELECT count(*) FROM calls`)
	if before == int64(0) {
		t.Fatal("no calls read")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	line := bytes.Repeat([]byte("x"), 1<<20)
	for range 65 {
		f.Write(append([]byte(`{"type":"summary","summary":"`+string(line)), '"', '}', '\n'))
	}
	f.Close()
	ingestAll()
	if after := count(`SELECT count(*) FROM calls`); after != before {
		t.Errorf("calls %v after the file grew, %v before", after, before)
	}
	if reason, _ := count(`SELECT string_agg(reason, '; ') FROM quarantine`).(string); !strings.Contains(reason, "grew past 64 MiB") {
		t.Errorf("quarantine says %q", reason)
	}
}
