package ingest_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/query"
)

// sealedCorpus copies runs from testdata into dir/runs, every file and
// folder last modified at t0.
func sealedCorpus(t *testing.T, dir string, t0 time.Time, ids ...string) string {
	t.Helper()
	runs := filepath.Join(dir, "runs")
	for _, id := range ids {
		src := filepath.Join("..", "testdata", "runs", id)
		dst := filepath.Join(runs, id)
		os.MkdirAll(dst, 0o755)
		for _, name := range []string{"trace.jsonl", "summary.json"} {
			b, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dst, name), b, 0o644)
			os.Chtimes(filepath.Join(dst, name), t0, t0)
		}
		os.Chtimes(dst, t0, t0)
	}
	return runs
}

// ingester ingests runs into the store db, each time a minute after the
// last, starting an hour after t0; *now moves the clock further.
func ingester(t *testing.T, db, runs string, t0 time.Time) (ingestAt func(full bool) *ingest.Result, now *time.Time) {
	clock := t0.Add(time.Hour)
	return func(full bool) *ingest.Result {
		t.Helper()
		st, err := query.Open(context.Background(), db, query.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		clock = clock.Add(time.Minute)
		res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: []string{runs}, Now: func() time.Time { return clock }, Full: full})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}, &clock
}

// value is one value from the store.
func value(t *testing.T, db, q string) string {
	t.Helper()
	st, err := query.Open(context.Background(), db, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tbl, err := st.ReadOnly(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(tbl.Rows[0]...)
}

// A cron ingest looks at a finished run's folder, not its files, until the
// folder changes or a full pass comes; each kind of change is seen by the
// pass docs/ingest.md promises.
func TestSealedRuns(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	runs := sealedCorpus(t, dir, t0, "1762161125318", "1762164347120", "1762169462777")
	db := filepath.Join(dir, "s.duckdb")
	run, now := ingester(t, db, runs, t0)
	events := func() string { return value(t, db, `SELECT count(*) FROM events`) }

	if res := run(false); !res.Full || res.Files != 6 || res.Sealed != 0 {
		t.Fatalf("first ingest: full %v, %d files, %d sealed; want a full pass over 6 files", res.Full, res.Files, res.Sealed)
	}
	if got := value(t, db, `SELECT count(DISTINCT path) FROM sealed_dirs`); got != "3" {
		t.Fatalf("%s runs sealed, want 3", got)
	}
	before := events()
	// Sealing marks the rows of the runs and their files, so a cron pass
	// loads none of them (UnsealedFileStates, DirStates).
	unmarked := func() string {
		return value(t, db, `SELECT (SELECT count(*) FROM file_states WHERE NOT sealed) || ' ' || (SELECT count(*) FROM dir_states WHERE NOT sealed)`)
	}
	if got := unmarked(); got != "0 0" {
		t.Fatalf("file and directory states not marked sealed: %s, want 0 0", got)
	}

	if res := run(false); res.Full || res.Files != 0 || res.Sealed != 6 || res.SealedRuns != 3 {
		t.Fatalf("cron ingest: full %v, %d files looked at, %d sealed in %d runs; want 0, 6 in 3", res.Full, res.Files, res.Sealed, res.SealedRuns)
	}

	// A new run is read; it is not sealed while it has no summary, and an
	// append to it is read on the next pass.
	newRun := filepath.Join(runs, "1762200000000")
	os.MkdirAll(newRun, 0o755)
	trace, _ := os.ReadFile(filepath.Join("..", "testdata", "runs", "1762161125318", "trace.jsonl"))
	lines := bytes.SplitAfter(trace, []byte("\n"))
	os.WriteFile(filepath.Join(newRun, "trace.jsonl"), bytes.Join(lines[:3], nil), 0o644)
	old := filepath.Join(newRun, "trace.jsonl")
	os.Chtimes(old, t0, t0)
	os.Chtimes(newRun, t0, t0)
	if res := run(false); res.Files != 1 || res.Events != 3 {
		t.Fatalf("new run: %d files, %d events; want 1 and 3", res.Files, res.Events)
	}
	f, _ := os.OpenFile(old, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(bytes.Join(lines[3:5], nil))
	f.Close()
	os.Chtimes(old, t0, t0.Add(time.Second))
	if res := run(false); res.Events != 2 {
		t.Fatalf("append to an unsealed run: %d events, want 2", res.Events)
	}
	if got := unmarked(); got != "2 1" {
		t.Fatalf("states not marked sealed: %s, want the new run's: its trace's two and its folder's one", got)
	}

	// A file added to a sealed run changes its folder: the run is read.
	sealed := filepath.Join(runs, "1762164347120")
	os.WriteFile(filepath.Join(sealed, "verification_report_initial.json"), []byte(`{"passed": true}`), 0o644)
	if res := run(false); res.Files != 4 || res.SealedRuns != 2 {
		t.Fatalf("file added to a sealed run: %d files looked at, %d sealed runs; want its 3 and the new run's trace, and 2", res.Files, res.SealedRuns)
	}

	// A deleted run costs nothing and keeps its rows: the store is an
	// index of what was seen.
	os.RemoveAll(filepath.Join(runs, "1762169462777"))
	if res := run(false); len(res.Errors) > 0 || res.SealedRuns != 1 {
		t.Fatalf("deleted run: errors %v, %d sealed runs; want none and 1", res.Errors, res.SealedRuns)
	}

	// A sealed run's summary rewritten in place, its folder unchanged: not
	// seen by a cron pass, seen by --full and by the daily full pass.
	summary := filepath.Join(runs, "1762161125318", "summary.json")
	b, _ := os.ReadFile(summary)
	b = bytes.Replace(b, []byte(`"status": "success"`), []byte(`"status": "failure"`), 1)
	os.WriteFile(summary, b, 0o644)
	os.Chtimes(summary, t0, t0.Add(time.Second)) // long ago, so the run can be sealed again
	os.Chtimes(filepath.Join(runs, "1762161125318"), t0, t0)
	status := func() string {
		return value(t, db, `SELECT status FROM summaries s JOIN files f USING (file_id) WHERE f.path LIKE '%1762161125318/summary.json'`)
	}
	run(false)
	if got := status(); got != "success" {
		t.Fatalf("the cron pass read the sealed run's rewrite (status %s): docs/ingest.md says it does not", got)
	}
	run(true)
	if got := status(); got != "failure" {
		t.Fatalf("--full did not read the rewrite: status %s", got)
	}
	// The run is sealed again, the rewrite's state with it; a full pass
	// that finds the seals as they were adds none.
	if got := value(t, db, `SELECT bool_and(sealed) FROM file_states WHERE path LIKE '%1762161125318/%'`); got != "true" {
		t.Fatalf("the resealed run's states marked sealed: %s, want true", got)
	}
	seals := value(t, db, `SELECT count(*) FROM sealed_dirs`)
	if res := run(true); res.Events != 0 || value(t, db, `SELECT count(*) FROM sealed_dirs`) != seals {
		t.Fatalf("a full pass with nothing changed read %d events and sealed again (%s seal rows, %s before)", res.Events, value(t, db, `SELECT count(*) FROM sealed_dirs`), seals)
	}
	b = bytes.Replace(b, []byte(`"status": "failure"`), []byte(`"status": "cancelled"`), 1)
	os.WriteFile(summary, b, 0o644)
	os.Chtimes(filepath.Join(runs, "1762161125318"), t0, t0)
	*now = now.Add(25 * time.Hour)
	if res := run(false); !res.Full {
		t.Fatal("no full pass a day after the last one")
	}
	if got := status(); got != "cancelled" {
		t.Fatalf("the daily full pass did not read the rewrite: status %s", got)
	}
	// A sealed run moved is found under its new name, not read again.
	if err := os.Rename(filepath.Join(runs, "1762161125318"), filepath.Join(runs, "1762161125318-moved")); err != nil {
		t.Fatal(err)
	}
	if res := run(false); len(res.Moved) != 2 || res.Events != 0 {
		t.Fatalf("moved sealed run: %d files moved, %d events read; want 2 and 0", len(res.Moved), res.Events)
	}

	// The new run's 5 events are the only ones added: neither the cron
	// passes nor the full ones read a line twice.
	if got, want := events(), fmt.Sprint(mustAtoi(t, before)+5); got != want {
		t.Errorf("%s events after the passes, want %s", got, want)
	}
}

func mustAtoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A store made before states were marked sealed has its sealed runs'
// states marked when it is opened, once, and its superseded seals
// dropped: its next cron pass loads none of them and reads nothing again.
func TestSealedMarkedInAnOlderStore(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	runs := sealedCorpus(t, dir, t0, "1762161125318", "1762164347120")
	db := filepath.Join(dir, "s.duckdb")
	ingestAt, _ := ingester(t, db, runs, t0)
	run := func() *ingest.Result { return ingestAt(false) }
	run()

	// The older store: no sealed columns, and another schema's hash.
	raw, err := sql.Open("duckdb", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`ALTER TABLE file_states DROP COLUMN sealed`,
		`ALTER TABLE dir_states DROP COLUMN sealed`,
		`UPDATE meta SET value = 'older' WHERE key = 'schema_hash'`,
		// and each run sealed again by an earlier daily full pass
		`INSERT INTO sealed_dirs SELECT seq - 1000, path, mtime, files FROM sealed_dirs`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()

	if res := run(); res.Files != 0 || res.SealedRuns != 2 || res.Events != 0 {
		t.Fatalf("cron pass after the upgrade: %d files looked at, %d sealed runs, %d events; want 0, 2, 0", res.Files, res.SealedRuns, res.Events)
	}
	if got := value(t, db, `SELECT (SELECT count(*) FILTER (WHERE sealed) || '/' || count(*) FROM file_states) || ' ' || (SELECT count(*) FILTER (WHERE sealed) || '/' || count(*) FROM dir_states)`); got != "4/4 2/2" {
		t.Fatalf("states marked sealed after the upgrade: %s, want 4/4 2/2", got)
	}
	if got := value(t, db, `SELECT count(*) || ' ' || count(DISTINCT path) FROM sealed_dirs`); got != "2 2" {
		t.Fatalf("seals (rows, runs) after the upgrade: %s, want 2 2", got)
	}
}

// A finished run holding a file whose name is not UTF-8 (stored escaped,
// though the run's folder is not): when a file is added to the run, its
// folder changes and its files' states are loaded again, the odd one's
// with them, so it is not read a second time as a new file.
func TestSealedRunWithAnOddFileName(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	runs := sealedCorpus(t, dir, t0, "1762161125318")
	run := filepath.Join(runs, "1762161125318")
	odd := filepath.Join(run, "verification_report_\xe9t\xe9.json")
	os.WriteFile(odd, []byte(`{"passed": true}`), 0o644)
	os.Chtimes(odd, t0, t0)
	os.Chtimes(run, t0, t0)
	db := filepath.Join(dir, "s.duckdb")
	ingestAt, _ := ingester(t, db, runs, t0)
	ingestNow := func() *ingest.Result { return ingestAt(false) }
	if res := ingestNow(); res.Files != 3 || len(res.Errors) > 0 {
		t.Fatalf("first ingest: %d files, errors %v; want 3 and none", res.Files, res.Errors)
	}
	if res := ingestNow(); res.SealedRuns != 1 {
		t.Fatalf("the run is not sealed: %d sealed runs", res.SealedRuns)
	}
	second := filepath.Join(run, "verification_report_second.json")
	os.WriteFile(second, []byte(`{"passed": false}`), 0o644)
	os.Chtimes(second, t0, t0)
	if res := ingestNow(); res.Files != 4 || len(res.Moved) > 0 {
		t.Fatalf("after a file was added: %d files looked at, %d moved; want 4 and none", res.Files, len(res.Moved))
	}
	if got := value(t, db, `SELECT count(*) || ' ' || count(DISTINCT file_id) FROM verification_reports`); got != "2 2" {
		t.Fatalf("verification reports (rows, files): %s, want 2 2: the odd one was read again as a new file", got)
	}
}

// A run sealed a day or more after its folder last changed is settled: a
// cron pass does not even stat its folder, so a file added to it waits
// for the next full pass, while a run finished within the day is still
// stat'ed and a file added to it is read at once (docs/ingest.md).
func TestSettledRuns(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	runs := sealedCorpus(t, dir, t0, "1762161125318", "1762164347120")
	recent := filepath.Join(runs, "1762169462777")
	sealedCorpus(t, dir, t0.Add(47*time.Hour), "1762169462777")
	db := filepath.Join(dir, "s.duckdb")
	run, now := ingester(t, db, runs, t0)
	*now = t0.Add(48 * time.Hour) // the first runs are two days old, the last one an hour

	if res := run(false); !res.Full || res.Files != 6 {
		t.Fatalf("first ingest: full %v, %d files; want a full pass over 6", res.Full, res.Files)
	}
	if res := run(false); res.Full || res.Files != 0 || res.SealedRuns != 3 {
		t.Fatalf("cron pass: full %v, %d files looked at, %d sealed runs; want 0 and 3", res.Full, res.Files, res.SealedRuns)
	}
	report := func(run string) string { return filepath.Join(runs, run, "verification_report_initial.json") }
	os.WriteFile(report("1762161125318"), []byte(`{"passed": true}`), 0o644)
	os.WriteFile(filepath.Join(recent, "verification_report_initial.json"), []byte(`{"passed": false}`), 0o644)
	reports := func() string { return value(t, db, `SELECT count(*) FROM verification_reports`) }

	if res := run(false); res.Files != 3 || res.SealedRuns != 2 {
		t.Fatalf("files added to a settled and a recent run: %d files looked at, %d sealed runs; want the recent run's 3, and 2", res.Files, res.SealedRuns)
	}
	if got := reports(); got != "1" {
		t.Fatalf("%s verification reports after the cron pass, want the recent run's 1", got)
	}
	if res := run(true); !res.Full {
		t.Fatal("--full was not a full pass")
	}
	if got := reports(); got != "2" {
		t.Fatalf("%s verification reports after --full, want 2: the settled run's too", got)
	}
}
