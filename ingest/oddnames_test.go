package ingest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/ingest"
)

// TestNonUTF8NamesAreStored: a run folder whose name is not UTF-8 sits
// beside good runs. Every run is ingested, the odd one under an escaped
// name, and the next ingest finds them all unchanged. Before, DuckDB
// refused the name ("Invalid unicode (byte sequence mismatch) detected in
// segment statistics update"), the transaction holding every run failed,
// and so did every later ingest.
func TestNonUTF8NamesAreStored(t *testing.T) {
	st := openStore(t)
	runs := filepath.Join(t.TempDir(), "runs")
	names := []string{"zz\xff", "latin-\xe9t\xe9", `back\slash` + "\xfe"}
	for i := range 20 {
		names = append(names, fmt.Sprintf("good-%02d", i))
	}
	for i, n := range names {
		var b strings.Builder
		for j := range 3 + i%4 {
			b.WriteString(line("run-"+fmt.Sprint(i), "RunStarted", j, `{}`))
		}
		write(t, filepath.Join(runs, n, "trace.jsonl"), b.String(), os.O_TRUNC)
	}
	want := int64(0)
	for i := range names {
		want += int64(3 + i%4)
	}
	res := ingestPaths(t, st, runs)
	if res.Events != want || len(res.Errors) != 0 {
		t.Fatalf("ingested %d events with errors %v, want %d", res.Events, res.Errors, want)
	}
	if n := scalar[int64](t, st, `SELECT count(*) FROM events`); n != want {
		t.Fatalf("the store holds %d events, want %d", n, want)
	}
	if n := scalar[int64](t, st, `SELECT count(*) FROM files WHERE path LIKE 'bytes:%runs/zz\xff/trace.jsonl'`); n != 1 {
		t.Fatalf("the odd run's path is not stored escaped (%d rows)", n)
	}
	again := ingestPaths(t, st, runs)
	if again.Events != 0 || again.Unchanged != len(names) {
		t.Fatalf("second ingest: %d events, %d of %d unchanged", again.Events, again.Unchanged, len(names))
	}
	// An append to the odd run is read from where the last ingest stopped.
	write(t, filepath.Join(runs, names[0], "trace.jsonl"), line("run-0", "RunStarted", 9, `{}`), os.O_APPEND)
	if res := ingestPaths(t, st, runs); res.Events != 1 || res.Unchanged != len(names)-1 {
		t.Fatalf("after an append: %d events, %d unchanged", res.Events, res.Unchanged)
	}
}

// TestNonUTF8StdinName: a --stdin-name that is not UTF-8 is stored too,
// and naming it again replaces its rows.
func TestNonUTF8StdinName(t *testing.T) {
	st := openStore(t)
	for range 2 {
		res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: []string{"-"}, StdinName: "a\xffb",
			Stdin: strings.NewReader(line("r", "RunStarted", 0, `{}`) + line("r", "RunFinished", 1, `{}`)),
			Now:   func() time.Time { return t0 }})
		if err != nil || res.Events != 2 {
			t.Fatalf("%v, %+v", err, res)
		}
	}
	if n := scalar[int64](t, st, `SELECT count(*) FROM events`); n != 2 {
		t.Fatalf("the store holds %d events, want 2", n)
	}
}

// TestSameSizeRewriteIsReadAgain: a trace rewritten in place to the same
// size, changed only past its first 4 KiB, is read again, and the store
// matches the file. Before, only the first 4 KiB were compared, so the
// store kept the old retries (700 where the file summed to 830).
func TestSameSizeRewriteIsReadAgain(t *testing.T) {
	st := openStore(t)
	tr := filepath.Join(t.TempDir(), "runs", "r1", "trace.jsonl")
	var b strings.Builder
	for i := range 100 {
		b.WriteString(line("r1", "ProviderRequestFinished", i, `{"provider":"p","success":true,"retries":1}`))
	}
	write(t, tr, b.String(), os.O_TRUNC)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(tr, old, old)
	ingestPaths(t, st, tr)
	sum := func() int64 {
		return scalar[int64](t, st, `SELECT coalesce(sum(retries), 0) FROM provider_request_finishes`)
	}
	if got := sum(); got != 100 {
		t.Fatalf("retries %d, want 100", got)
	}
	// Same length, different retries, all past byte 5000.
	data, _ := os.ReadFile(tr)
	cut := strings.Index(string(data[5000:]), "\n") + 5001
	rewritten := string(data[:cut]) + strings.ReplaceAll(string(data[cut:]), `"retries":1`, `"retries":3`)
	if len(rewritten) != len(data) {
		t.Fatal("the rewrite changed the size")
	}
	os.WriteFile(tr, []byte(rewritten), 0o644)
	res := ingestPaths(t, st, tr)
	want := int64(strings.Count(rewritten, `"retries":1`) + 3*strings.Count(rewritten, `"retries":3`))
	if got := sum(); got != want {
		t.Fatalf("retries %d, the file sums to %d", got, want)
	}
	if len(res.Replaced) != 1 || scalar[int64](t, st, `SELECT count(*) FROM events`) != 100 {
		t.Fatalf("%+v", res)
	}
	// Untouched since, it is not read again.
	if res := ingestPaths(t, st, tr); res.Unchanged != 1 || len(res.Replaced) != 0 {
		t.Fatalf("%+v", res)
	}
}
