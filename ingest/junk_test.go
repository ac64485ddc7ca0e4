package ingest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/query"
)

// A file of junk keeps at most 10,000 quarantine rows and counts the
// rest, and is committed in chunks: it costs only itself. Before, 8M bad
// lines held gigabytes of rows in one batch, and the ingest ran out of
// memory at every retry with the good run beside it.
func TestJunkFileQuarantineIsBounded(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk", "trace.jsonl")
	good := filepath.Join(dir, "good", "trace.jsonl")
	os.MkdirAll(filepath.Dir(junk), 0o755)
	os.MkdirAll(filepath.Dir(good), 0o755)
	const bad = 30000
	os.WriteFile(junk, []byte(strings.Repeat("x\n", bad)), 0o644)
	os.WriteFile(good, []byte(`{"type":"RunStarted","schemaVersion":1,"timestamp":"2025-11-05T10:00:00.000Z","runId":"g","payload":{}}`+"\n"), 0o644)
	ctx := context.Background()
	st, err := query.Open(ctx, filepath.Join(dir, "s.duckdb"), query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := ingest.Run(ctx, st, ingest.Options{Paths: []string{junk, good}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 1 || res.Quarantined != bad {
		t.Errorf("events %d, quarantined %d; want 1 and %d", res.Events, res.Quarantined, bad)
	}
	tbl, err := st.ReadOnly(ctx, `SELECT (SELECT count(*) FROM quarantine), (SELECT sum(quarantined) FROM files)`)
	if err != nil {
		t.Fatal(err)
	}
	if rows, counted := tbl.Rows[0][0], tbl.Rows[0][1]; rows != int64(10001) || counted == nil {
		t.Errorf("quarantine rows %v (want the 10,000 kept and one saying the rest are counted), counted %v", rows, counted)
	}
}
