package query_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/query/lake"
)

// TestExportWithinMemory: an export bounded below what a table needs says
// which table it wrote with the store's limit instead, and writes the same
// rows as an export within the default bound.
func TestExportWithinMemory(t *testing.T) {
	skipShort(t, "scale: exports a generated store within a memory bound")
	ctx := context.Background()
	ds := datasets(t)[0]
	export := func(memory string) query.Exported {
		t.Helper()
		dir := t.TempDir()
		db := filepath.Join(dir, "store.duckdb")
		copyFile(t, ds.db, db)
		st, err := query.Open(ctx, db, query.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		lk, err := lake.Open(ctx, filepath.Join(dir, "lake"), lake.Options{})
		if err != nil {
			t.Fatal(err)
		}
		before, err := st.MemoryLimit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, err := st.ExportLake(ctx, lk, query.ExportOptions{Runner: "r", Memory: memory})
		if err != nil {
			t.Fatalf("export within %q: %v", memory, err)
		}
		if after, _ := st.MemoryLimit(ctx); after != before {
			t.Errorf("the export left the store's memory limit at %s, was %s", after, before)
		}
		return res
	}
	want := export("")
	if len(want.Warnings) != 0 {
		t.Errorf("an export within the default bound warned: %q", want.Warnings)
	}
	got := export("1MB")
	if got.Rows != want.Rows || got.Partitions != want.Partitions {
		t.Errorf("within 1MB: %d rows in %d partitions, want %d in %d", got.Rows, got.Partitions, want.Rows, want.Partitions)
	}
	if len(got.Warnings) == 0 || !strings.Contains(got.Warnings[0], "did not fit the export's 1MB of memory") {
		t.Errorf("within 1MB the export did not say which table it wrote with the store's limit: %q", got.Warnings)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLakeReadWithinMemory: a first read into a replica bounded below what
// it needs says so, and reads the same rows as one within the default
// bound.
func TestLakeReadWithinMemory(t *testing.T) {
	skipShort(t, "scale: reads a generated lake within a memory bound")
	ctx := context.Background()
	ds := datasets(t)[0]
	dir := t.TempDir()
	db := filepath.Join(dir, "store.duckdb")
	copyFile(t, ds.db, db)
	st, err := query.Open(ctx, db, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lk, err := lake.Open(ctx, filepath.Join(dir, "lake"), lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.ExportLake(ctx, lk, query.ExportOptions{Runner: "r"})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	read := func(memory string) (query.LakeRead, int64) {
		t.Helper()
		// A replica, empty: the read fills it (with none, a read answers
		// from the lake's files).
		replica := filepath.Join(t.TempDir(), "replica.duckdb")
		if st, err := query.Open(ctx, replica, query.Options{}); err != nil {
			t.Fatal(err)
		} else {
			st.Close()
		}
		st, got, err := query.OpenLake(ctx, lk, query.LakeOptions{Replica: replica, Memory: memory})
		if err != nil {
			t.Fatalf("reading within %q: %v", memory, err)
		}
		defer st.Close()
		var rows int64
		if err := query.ConnOf(st).QueryRowContext(ctx, `SELECT (SELECT count(*) FROM run_events) + (SELECT count(*) FROM summaries)`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		return got, rows
	}
	want, wantRows := read("")
	if len(want.Warnings) != 0 || wantRows == 0 {
		t.Fatalf("a read within the default bound: %d rows, warnings %q", wantRows, want.Warnings)
	}
	got, gotRows := read("1MB")
	if gotRows != wantRows || got.Files != want.Files {
		t.Errorf("within 1MB: %d rows from %d files, want %d from %d", gotRows, got.Files, wantRows, want.Files)
	}
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "did not fit in 1MB of memory") {
		t.Errorf("within 1MB the read did not say it needed more memory: %q", got.Warnings)
	}
}
