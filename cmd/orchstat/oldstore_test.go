package main

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// oldStore unpacks testdata/stores/orchstat-duckdb-1.1.2.duckdb.gz: the
// store orchstat made with DuckDB 1.1.2 (go-duckdb v1.8.2) from
// testdata/runs, factory/audit, claudestrator/webshop and
// orchestr8/notes-app, after one check (testdata/README.md says how).
func oldStore(t *testing.T) string {
	t.Helper()
	f, err := os.Open("../../testdata/stores/orchstat-duckdb-1.1.2.duckdb.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "old.duckdb")
	out, err := os.Create(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return db
}

// freshStore ingests the same inputs as oldStore into a new store.
func freshStore(t *testing.T) string {
	t.Helper()
	proj := t.TempDir()
	for src, dst := range map[string]string{
		"../../testdata/runs":                  ".orchestrator/runs",
		"../../testdata/factory/audit":         "factory-audit",
		"../../testdata/claudestrator/webshop": "webshop",
		"../../testdata/orchestr8/notes-app":   "notes-app",
	} {
		if err := os.CopyFS(filepath.Join(proj, dst), os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(proj, "new.duckdb")
	args := []string{"--db", db, "ingest", proj}
	for _, d := range []string{"factory-audit", "webshop", "notes-app"} {
		args = append(args, filepath.Join(proj, d))
	}
	if code, _, stderr := runCLI(t, "", args...); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, stderr)
	}
	return db
}

// A store written by DuckDB 1.1.2 opens under 1.5.6, its JSON columns
// become text in place, and every answer is the one a new store gives.
func TestStoreFromDuckDB112(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	old, fresh := oldStore(t), freshStore(t)
	metrics := func(db string) string {
		t.Helper()
		code, out, stderr := runCLI(t, "", "--db", db, "report", "--no-ingest", "-f", "json")
		if code != 0 {
			t.Fatalf("report on %s: exit %d: %s", db, code, stderr)
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		delete(r, "database")
		delete(r, "scope")
		b, _ := json.Marshal(roundFloats(r))
		return string(b)
	}
	if o, n := metrics(old), metrics(fresh); o != n {
		i := 0
		for i < min(len(o), len(n)) && o[i] == n[i] {
			i++
		}
		t.Errorf("the old store's report differs from a new one's at byte %d:\nold %.200s\nnew %.200s", i, o[i:], n[i:])
	}
	// Every stored text, trace payloads and run files alike, is the same
	// bytes in both, and is text, not a nested value.
	const texts = `SELECT (SELECT md5(string_agg(payload, '|' ORDER BY payload)) FROM events) || ' ' ||
		(SELECT md5(string_agg(raw, '|' ORDER BY raw)) FROM summaries) || ' ' ||
		(SELECT md5(string_agg(coalesce(detail, '-'), '|' ORDER BY detail)) FROM record_runs) || ' ' ||
		(SELECT string_agg(DISTINCT data_type, ',' ORDER BY data_type) FROM duckdb_columns() WHERE schema_name = 'main' AND NOT internal)`
	sum := func(db string) string {
		t.Helper()
		code, out, stderr := runCLI(t, "", "--db", db, "sql", "-f", "csv", texts)
		if code != 0 {
			t.Fatalf("sql on %s: exit %d: %s", db, code, stderr)
		}
		return out
	}
	o, n := sum(old), sum(fresh)
	if o != n {
		t.Errorf("stored text differs: old store %q, new %q", o, n)
	}
	if strings.Contains(o, "JSON") {
		t.Errorf("the old store still has JSON columns: %s", o)
	}
	// Its alert state, whose labels were JSON, is read by check.
	if code, _, stderr := runCLI(t, "", "--db", old, "check", "--no-ingest"); code == 3 {
		t.Errorf("check on the old store: exit %d: %s", code, stderr)
	}
}

// roundFloats rounds every number to 12 significant digits: a sum's last
// bits depend on the order DuckDB adds rows in, which differs between two
// stores of the same data.
func roundFloats(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = roundFloats(x)
		}
	case []any:
		for i, x := range v {
			v[i] = roundFloats(x)
		}
	case float64:
		f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
		return f
	}
	return v
}
