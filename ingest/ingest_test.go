package ingest_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/query"
)

var t0 = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)

func line(run, typ string, i int, payload string) string {
	return fmt.Sprintf(`{"type":%q,"schemaVersion":1,"timestamp":%q,"runId":%q,"payload":%s}`+"\n",
		typ, t0.Add(time.Duration(i)*time.Second).Format("2006-01-02T15:04:05.000Z"), run, payload)
}

func openStore(t *testing.T) *query.Store {
	t.Helper()
	st, err := query.Open(context.Background(), filepath.Join(t.TempDir(), "db", "orchstat.duckdb"), query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func ingestPaths(t *testing.T, st *query.Store, paths ...string) *ingest.Result {
	t.Helper()
	res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: paths, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func scalar[T any](t *testing.T, st *query.Store, q string, args ...any) T {
	t.Helper()
	var v T
	tx, err := st.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if err := tx.QueryRow(context.Background(), q, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// exec runs a statement on st in a transaction of its own.
func exec(t *testing.T, st *query.Store, q string) {
	t.Helper()
	ctx := context.Background()
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := tx.Exec(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, s string, flag int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestIncremental(t *testing.T) {
	st := openStore(t)
	runs := filepath.Join(t.TempDir(), "runs")
	tr := filepath.Join(runs, "r1", "trace.jsonl")
	write(t, tr, line("r1", "RunStarted", 0, `{"taskId":"r1","goal":"g"}`)+line("r1", "ProviderRequestStarted", 1, `{"provider":"p","model":"m"}`), os.O_TRUNC)
	// A partial line is still being written: it must wait.
	partial := line("r1", "ProviderRequestFinished", 2, `{"provider":"p","durationMs":5,"success":true,"retries":1}`)
	write(t, tr, partial[:20], os.O_APPEND)

	res := ingestPaths(t, st, runs)
	if res.Events != 2 || res.Quarantined != 0 {
		t.Fatalf("first ingest: %+v", res)
	}
	if n := scalar[int64](t, st, `SELECT byte_offset FROM files WHERE kind = 'trace'`); n != int64(len(line("r1", "RunStarted", 0, `{"taskId":"r1","goal":"g"}`)+line("r1", "ProviderRequestStarted", 1, `{"provider":"p","model":"m"}`))) {
		t.Fatalf("offset %d", n)
	}
	// Nothing new: nothing read.
	if res := ingestPaths(t, st, runs); res.Events != 0 || res.Unchanged != 1 {
		t.Fatalf("unchanged ingest: %+v", res)
	}
	// The line is finished, and another appended.
	write(t, tr, partial[20:]+line("r1", "RunFinished", 3, `{"status":"success"}`), os.O_APPEND)
	if res := ingestPaths(t, st, runs); res.Events != 2 || len(res.Replaced) != 0 {
		t.Fatalf("append ingest: %+v", res)
	}
	if n := scalar[int64](t, st, `SELECT count(*) FROM events`); n != 4 {
		t.Fatalf("%d events", n)
	}
	if got := scalar[string](t, st, `SELECT string_agg(line::VARCHAR, ',' ORDER BY line) FROM events`); got != "1,2,3,4" {
		t.Fatalf("line numbers %s", got)
	}
	if m := scalar[string](t, st, `SELECT model FROM provider_requests`); m != "m" {
		t.Fatalf("model pairing across ingests: %q", m)
	}
	if s := scalar[string](t, st, `SELECT status FROM runs`); s != "success" {
		t.Fatalf("status %q", s)
	}
}

func TestReplace(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		rewrite      func(t *testing.T, path string)
	}{
		{"shrank", "shrank", func(t *testing.T, p string) { write(t, p, line("r1", "RunStarted", 0, `{}`), os.O_TRUNC) }},
		{"head changed", "first bytes changed", func(t *testing.T, p string) {
			b, _ := os.ReadFile(p)
			f, _ := os.OpenFile(p, os.O_WRONLY, 0)
			f.WriteAt([]byte(strings.Replace(string(b), "RunStarted", "RunStartex", 1)), 0)
			f.Close()
			write(t, p, line("r1", "RunFinished", 9, `{"status":"failure"}`), os.O_APPEND)
		}},
		{"new inode", "inode changed", func(t *testing.T, p string) {
			// Written beside and renamed over, so the inode must differ.
			b, _ := os.ReadFile(p)
			write(t, p+".new", string(b)+line("r1", "RunFinished", 9, `{"status":"failure"}`), os.O_TRUNC)
			if err := os.Rename(p+".new", p); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t)
			tr := filepath.Join(t.TempDir(), "runs", "r1", "trace.jsonl")
			write(t, tr, line("r1", "RunStarted", 0, `{}`)+line("r1", "IterationStarted", 1, `{"iteration":1}`)+"not json\n", os.O_TRUNC)
			ingestPaths(t, st, tr)
			tc.rewrite(t, tr)
			res := ingestPaths(t, st, tr)
			if len(res.Replaced) != 1 || !strings.Contains(res.Replaced[0].Reason, tc.reason) {
				t.Fatalf("replaced %+v, want reason ~%q", res.Replaced, tc.reason)
			}
			want := int64(strings.Count(mustRead(t, tr), "\n")) - 1 // the bad line
			if tc.name == "shrank" {
				want = 1
			}
			if n := scalar[int64](t, st, `SELECT count(*) FROM events`); n != want {
				t.Fatalf("%d events after replace, want %d", n, want)
			}
			if n := scalar[int64](t, st, `SELECT count(*) FROM l2_events`); tc.name == "shrank" && n != 0 {
				t.Fatalf("typed rows of the old content survived: %d", n)
			}
			if n := scalar[int64](t, st, `SELECT count(*) FROM quarantine`); tc.name == "shrank" && n != 0 {
				t.Fatalf("quarantine rows of the old content survived: %d", n)
			}
		})
	}
}

func mustRead(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBadInput(t *testing.T) {
	st := openStore(t)
	dir := filepath.Join(t.TempDir(), "runs", "bad")
	good := line("bad", "RunStarted", 0, `{}`)
	huge := line("bad", "SubprocessOutputChunked", 5, `{"pid":1,"stream":"stdout","chunk":"`+strings.Repeat("x", 1<<20)+`"}`)
	lines := []struct{ text, field, reason string }{
		{"\xEF\xBB\xBF" + good, "", ""},
		{strings.TrimSuffix(line("bad", "PlanRequested", 1, `{"goal":"g"}`), "\n") + "\r\n", "", ""},
		{"\n", "", ""},
		{"   \t \n", "", ""},
		{"this is not json\n", "", "not JSON"},
		{`{"type":"RunStarted","runId":` + "\n", "", "not JSON"},
		{"[1,2,3]\n", "", "not a JSON object"},
		{`{"runId":"bad","timestamp":"2026-11-02T10:00:00.000Z","payload":{}}` + "\n", "type", "missing"},
		{`{"type":"X","timestamp":"2026-11-02T10:00:00.000Z","payload":{}}` + "\n", "runId", "missing"},
		{`{"type":"X","runId":"bad","payload":{}}` + "\n", "timestamp", "missing"},
		{`{"type":"X","runId":"bad","timestamp":"yesterday","payload":{}}` + "\n", "timestamp", "unparsable"},
		{`{"type":"X","runId":"bad","timestamp":"2026-11-02T10:00:00.000Z","payload":[1]}` + "\n", "payload", "not a JSON object"},
		{"{\"type\":\"X\xff\",\"runId\":\"bad\",\"timestamp\":\"2026-11-02T10:00:00.000Z\",\"payload\":{}}\n", "", "invalid UTF-8"},
		{line("bad", "SomethingNewNextYear", 4, `{"x":1}`), "", ""},
		{huge, "", ""},
	}
	var content string
	var wantEvents, wantQ int
	for _, l := range lines {
		content += l.text
		switch {
		case l.reason != "":
			wantQ++
		case strings.TrimSpace(l.text) != "" && l.text != "\n":
			wantEvents++
		}
	}
	write(t, filepath.Join(dir, "trace.jsonl"), content+`{"type":"RunFinished"`, os.O_TRUNC)
	res := ingestPaths(t, st, dir)
	if res.Events != int64(wantEvents) || res.Quarantined != int64(wantQ) {
		t.Fatalf("events %d quarantined %d, want %d and %d", res.Events, res.Quarantined, wantEvents, wantQ)
	}
	offset := 0
	for i, l := range lines {
		if l.reason != "" {
			var field *string
			var reason, raw string
			var off int64
			tx, err := st.Begin(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			err = tx.QueryRow(context.Background(),
				`SELECT field, reason, raw, byte_offset FROM quarantine WHERE line = ?`, i+1).Scan(&field, &reason, &raw, &off)
			tx.Rollback(context.Background())
			if err != nil {
				t.Fatalf("line %d (%q): %v", i+1, l.text, err)
			}
			if (field == nil) != (l.field == "") || (field != nil && *field != l.field) || !strings.Contains(reason, l.reason) || off != int64(offset) {
				t.Errorf("line %d: field %v reason %q offset %d; want %q ~%q at %d", i+1, field, reason, off, l.field, l.reason, offset)
			}
			if !strings.Contains(l.text, strings.TrimRight(strings.ToValidUTF8(raw, "\uFFFD"), "\r")[:3]) && l.reason != "invalid UTF-8" {
				t.Errorf("line %d raw %q", i+1, raw)
			}
		}
		offset += len(l.text)
	}
	if typ := scalar[string](t, st, `SELECT type FROM events WHERE line = 1`); typ != "RunStarted" {
		t.Errorf("BOM line: %q", typ)
	}
	if n := scalar[int64](t, st, `SELECT length(payload) FROM events WHERE type = 'SubprocessOutputChunked'`); n < 1<<20 {
		t.Errorf("large payload cut to %d", n)
	}
}

func TestUnreadableFileDoesNotStopOthers(t *testing.T) {
	st := openStore(t)
	runs := filepath.Join(t.TempDir(), "runs")
	write(t, filepath.Join(runs, "ok", "trace.jsonl"), line("ok", "RunStarted", 0, `{}`), os.O_TRUNC)
	// A symlink loop cannot be read, even by root (who ignores chmod 000).
	if err := os.MkdirAll(filepath.Join(runs, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("trace.jsonl", filepath.Join(runs, "broken", "trace.jsonl")); err != nil {
		t.Fatal(err)
	}
	res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: []string{runs, filepath.Join(runs, "missing")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 1 || len(res.Errors) != 2 {
		t.Fatalf("%+v", res)
	}
	joined := fmt.Sprint(res.Errors)
	if !strings.Contains(joined, filepath.Join("broken", "trace.jsonl")) || !strings.Contains(joined, "missing") {
		t.Fatalf("errors do not name the files: %s", joined)
	}
}

func TestRunFiles(t *testing.T) {
	st := openStore(t)
	dir := filepath.Join(t.TempDir(), "runs", "r9")
	write(t, filepath.Join(dir, "trace.jsonl"), line("r9", "RunStarted", 0, `{}`), os.O_TRUNC)
	write(t, filepath.Join(dir, "summary.json"), `{"status":"failure","stopReason":"non_improving","costs":{"perProvider":{"a":{"totalTokens":5,"estimatedCostUsd":0.5}},"totals":{"totalTokens":5,"estimatedCostUsd":0.5}}}`, os.O_TRUNC)
	write(t, filepath.Join(dir, "verification_report_iter_2.json"), `{"passed":false,"checks":[{"name":"tests","passed":false}],"failureSignature":"abc"}`, os.O_TRUNC)
	write(t, filepath.Join(dir, "verification_report_initial.json"), "{\n \"passed\": tru\n}", os.O_TRUNC)
	res := ingestPaths(t, st, filepath.Dir(dir))
	if res.Quarantined != 1 {
		t.Fatalf("%+v", res)
	}
	if s := scalar[string](t, st, `SELECT run_id || ' ' || status || ' ' || cost_usd FROM summaries`); s != "r9 failure 0.5" {
		t.Fatalf("summary row %q", s)
	}
	if s := scalar[string](t, st, `SELECT phase || iteration || failure_signature || failed_checks FROM verifications`); s != `l22abc["tests"]` {
		t.Fatalf("verification row %q", s)
	}
	if s := scalar[string](t, st, `SELECT reason FROM quarantine`); !strings.Contains(s, "line 2") {
		t.Fatalf("quarantine reason %q should locate the error", s)
	}
	if s := scalar[string](t, st, `SELECT status || ' ' || stop_reason FROM runs`); s != "failure non_improving" {
		t.Fatalf("runs falls back to the summary: %q", s)
	}
	// Fixing a file replaces its quarantine row with data.
	write(t, filepath.Join(dir, "verification_report_initial.json"), `{"passed": true, "checks": []}`, os.O_TRUNC)
	ingestPaths(t, st, filepath.Dir(dir))
	if n := scalar[int64](t, st, `SELECT count(*) FROM quarantine`); n != 0 {
		t.Fatalf("%d quarantine rows left", n)
	}
	if n := scalar[int64](t, st, `SELECT count(*) FROM verifications`); n != 2 {
		t.Fatalf("%d verification rows", n)
	}
}

func TestStdin(t *testing.T) {
	st := openStore(t)
	in := line("s1", "RunStarted", 0, `{}`) + line("s1", "RunFinished", 1, `{"status":"success"}`)
	for i := range 2 {
		res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: []string{"-"}, Stdin: strings.NewReader(in), StdinName: "ci"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Events != 2 || (i == 1) != (len(res.Replaced) == 1) {
			t.Fatalf("run %d: %+v", i, res)
		}
	}
	if n := scalar[int64](t, st, `SELECT count(*) FROM events`); n != 2 {
		t.Fatalf("re-ingesting the same stdin name duplicated rows: %d", n)
	}
	// A pipe has no "next time": its last line counts without a newline.
	res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: []string{"-"}, Stdin: strings.NewReader(strings.TrimSuffix(in, "\n")), StdinName: "ci"})
	if err != nil || res.Events != 2 {
		t.Fatalf("final line without newline: %+v %v", res, err)
	}
}

// ingestNow ingests on the real clock, which directory mtimes are compared
// with.
func ingestNow(t *testing.T, st *query.Store, paths ...string) *ingest.Result {
	t.Helper()
	res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestUnchangedRunDirectoriesAreNotListed(t *testing.T) {
	st := openStore(t)
	runs := filepath.Join(t.TempDir(), "runs")
	dir := filepath.Join(runs, "r1")
	write(t, filepath.Join(dir, "trace.jsonl"), line("r1", "RunStarted", 0, `{}`), os.O_TRUNC)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	ingestNow(t, st, runs)
	if n := scalar[int64](t, st, `SELECT count(*) FROM dir_states`); n != 1 {
		t.Fatalf("%d directory listings recorded", n)
	}
	// A file that appears without moving the directory's mtime is not seen:
	// proof that the listing was reused rather than read again.
	write(t, filepath.Join(dir, "summary.json"), `{"status":"success"}`, os.O_TRUNC)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	if res := ingestNow(t, st, runs); res.Files != 1 {
		t.Fatalf("listing not reused: %+v", res)
	}
	// Appends to a known file are still seen.
	write(t, filepath.Join(dir, "trace.jsonl"), line("r1", "RunFinished", 1, `{"status":"success"}`), os.O_APPEND)
	if res := ingestNow(t, st, runs); res.Events != 1 {
		t.Fatalf("append missed: %+v", res)
	}
	// A directory that changed is listed again, and a recent mtime is not
	// trusted, so it is listed once more next time.
	now := time.Now()
	os.Chtimes(dir, now, now)
	if res := ingestNow(t, st, runs); res.Files != 2 {
		t.Fatalf("changed directory not listed: %+v", res)
	}
	if n := scalar[int64](t, st, `SELECT count(*) FROM dir_states`); n != 1 {
		t.Fatalf("a recent mtime was recorded: %d listings", n)
	}
}

func TestListingOfAFailedDirectoryIsNotRecorded(t *testing.T) {
	st := openStore(t)
	runs := filepath.Join(t.TempDir(), "runs")
	dir := filepath.Join(runs, "r1")
	write(t, filepath.Join(dir, "trace.jsonl"), line("r1", "RunStarted", 0, `{}`), os.O_TRUNC)
	os.Symlink("summary.json", filepath.Join(dir, "summary.json")) // unreadable
	old := time.Now().Add(-time.Hour)
	os.Chtimes(dir, old, old)
	res := ingestNow(t, st, runs)
	if len(res.Errors) != 1 {
		t.Fatalf("%+v", res)
	}
	if n := scalar[int64](t, st, `SELECT count(*) FROM dir_states`); n != 0 {
		t.Fatalf("listing recorded despite a failed file")
	}
}

// Ingest runs with a small buffer pool; the queries after it must not.
func TestMemoryLimitIsRestored(t *testing.T) {
	st := openStore(t)
	before := scalar[string](t, st, `SELECT current_setting('memory_limit')`)
	runs := filepath.Join(t.TempDir(), "runs")
	write(t, filepath.Join(runs, "r1", "trace.jsonl"), line("r1", "RunStarted", 0, `{}`), os.O_TRUNC)
	ingestPaths(t, st, runs)
	// DuckDB reports the limit rounded ("18.8 GiB"), so the restored value
	// can differ in the last digit.
	after := scalar[string](t, st, `SELECT current_setting('memory_limit')`)
	if b, a := bytesOf(t, before), bytesOf(t, after); math.Abs(a-b) > 0.01*b {
		t.Fatalf("memory_limit is %s after ingest, was %s", after, before)
	}
}

func bytesOf(t *testing.T, s string) float64 {
	var v float64
	var unit string
	if _, err := fmt.Sscanf(s, "%f %s", &v, &unit); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	for i, u := range []string{"bytes", "KiB", "MiB", "GiB", "TiB"} {
		if u == unit {
			return v * math.Pow(1024, float64(i))
		}
	}
	t.Fatalf("unit %q", unit)
	return 0
}

func TestSixtyMegabyteLine(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and ingests a 60 MB line; go test ./... runs it (skipped under -short)")
	}
	st := openStore(t)
	dir := filepath.Join(t.TempDir(), "runs", "big")
	chunk := strings.Repeat("y", 60<<20)
	write(t, filepath.Join(dir, "trace.jsonl"),
		line("big", "RunStarted", 0, `{}`)+line("big", "SubprocessOutputChunked", 1, `{"pid":1,"stream":"stdout","chunk":"`+chunk+`"}`)+
			line("big", "RunFinished", 2, `{"status":"success"}`), os.O_TRUNC)
	res := ingestPaths(t, st, dir)
	if res.Events != 3 || res.Quarantined != 0 {
		t.Fatalf("%+v", res)
	}
	if n := scalar[int64](t, st, `SELECT length(payload->>'chunk') FROM events WHERE line = 2`); n != 60<<20 {
		t.Fatalf("stored chunk of %d bytes", n)
	}
}

func TestMovedAndLinkedRunsAreNotCountedTwice(t *testing.T) {
	st := openStore(t)
	root := t.TempDir()
	runs := filepath.Join(root, "runs")
	body := line("r1", "RunStarted", 0, `{}`) + line("r1", "ProviderRequestFinished", 1, `{"provider":"p","retries":1}`)
	write(t, filepath.Join(runs, "r1", "trace.jsonl"), body, os.O_TRUNC)
	write(t, filepath.Join(runs, "r1", "summary.json"), `{"status":"success"}`, os.O_TRUNC)
	ingestNow(t, st, runs)

	// A renamed run directory keeps its rows, and says so.
	if err := os.Rename(filepath.Join(runs, "r1"), filepath.Join(runs, "r1-renamed")); err != nil {
		t.Fatal(err)
	}
	res := ingestNow(t, st, runs)
	if len(res.Moved) != 2 || res.Events != 0 {
		t.Fatalf("after a rename: %+v", res)
	}
	// A moved repository, store and all.
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(runs, moved); err != nil {
		t.Fatal(err)
	}
	res = ingestNow(t, st, moved)
	if len(res.Moved) != 2 || res.Events != 0 {
		t.Fatalf("after moving the runs: %+v", res)
	}
	// A run reached both through a link in a runs directory and directly.
	links := filepath.Join(t.TempDir(), "links")
	os.MkdirAll(links, 0o755)
	if err := os.Symlink(filepath.Join(moved, "r1-renamed"), filepath.Join(links, "r1")); err != nil {
		t.Fatal(err)
	}
	ingestNow(t, st, links)
	ingestNow(t, st, filepath.Join(moved, "r1-renamed"))
	for q, want := range map[string]int64{
		`SELECT count(*) FROM events`:                    2,
		`SELECT count(*) FROM provider_request_finishes`: 1,
		`SELECT count(*) FROM summaries`:                 1,
		`SELECT count(*) FROM files`:                     2,
	} {
		if n := scalar[int64](t, st, q); n != want {
			t.Errorf("%s = %d, want %d", q, n, want)
		}
	}
	// A copy is another file: its events are new rows.
	copyDir := filepath.Join(moved, "r1-copy")
	write(t, filepath.Join(copyDir, "trace.jsonl"), body, os.O_TRUNC)
	if res := ingestNow(t, st, moved); res.Events != 2 || len(res.Moved) != 0 {
		t.Fatalf("a copy: %+v", res)
	}
}

func TestPipesAreRefused(t *testing.T) {
	st := openStore(t)
	fifo := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	res := ingestPaths(t, st, fifo)
	if len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "use -") {
		t.Fatalf("%+v", res)
	}
}

func TestRewrittenUnfinishedTailIsNotAReplacement(t *testing.T) {
	st := openStore(t)
	tr := filepath.Join(t.TempDir(), "runs", "r1", "trace.jsonl")
	write(t, tr, line("r1", "RunStarted", 0, `{}`)+`{"type":"Run`, os.O_TRUNC)
	ingestPaths(t, st, tr)
	// The writer rewrites its unfinished line: the committed bytes are the same.
	b, _ := os.ReadFile(tr)
	os.WriteFile(tr, append(b[:len(b)-5], []byte(`"XY`)...), 0o644)
	write(t, tr, "\n"+line("r1", "RunFinished", 1, `{"status":"success"}`), os.O_APPEND)
	res := ingestPaths(t, st, tr)
	if len(res.Replaced) != 0 || res.Events != 1 || res.Quarantined != 1 {
		t.Fatalf("%+v", res)
	}
}

func TestVerificationsFindTheirRun(t *testing.T) {
	st := openStore(t)
	dir := filepath.Join(t.TempDir(), "runs", "not-the-run-id")
	write(t, filepath.Join(dir, "trace.jsonl"), line("real-id", "RunStarted", 0, `{}`), os.O_TRUNC)
	write(t, filepath.Join(dir, "verification_report_iter_1.json"), `{"passed":false,"failureSignature":"s"}`, os.O_TRUNC)
	ingestPaths(t, st, filepath.Dir(dir))
	if got := scalar[string](t, st, `SELECT run_id FROM verifications`); got != "real-id" {
		t.Fatalf("verification attributed to %q", got)
	}
}

func TestStateHistoryIsCompacted(t *testing.T) {
	skipShort(t, "scale: an active file ingested 30 times")
	st := openStore(t)
	tr := filepath.Join(t.TempDir(), "runs", "r1", "trace.jsonl")
	write(t, tr, line("r1", "RunStarted", 0, `{}`), os.O_TRUNC)
	ingestPaths(t, st, tr)
	// An active file ingested many times: history would grow without end.
	for i := 1; i <= 30; i++ {
		write(t, tr, line("r1", "RunStopped", i, `{"reason":"x"}`), os.O_APPEND)
		res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: []string{tr}, TxnBytes: 1, BatchRows: 1})
		if err != nil || res.Events != 1 {
			t.Fatalf("%+v %v", res, err)
		}
	}
	// Simulate a long history, then let one more ingest compact it.
	exec(t, st, `INSERT INTO file_states SELECT f.* REPLACE (f.seq - 100000 - t.i AS seq) FROM file_states f, range(10000) t(i)`)
	write(t, tr, line("r1", "RunFinished", 99, `{"status":"success"}`), os.O_APPEND)
	ingestPaths(t, st, tr)
	if n := scalar[int64](t, st, `SELECT count(*) FROM file_states`); n != 1 {
		t.Fatalf("%d state rows after compaction", n)
	}
	if n := scalar[int64](t, st, `SELECT count(*) FROM events`); n != 32 {
		t.Fatalf("%d events", n)
	}
	// And the compacted state still resumes exactly.
	if res := ingestPaths(t, st, tr); res.Events != 0 || res.Unchanged != 1 {
		t.Fatalf("%+v", res)
	}
}

// A scratch ingest stores the same rows, and neither checkpoints nor
// changes DuckDB's memory limit: what it does not do is what rules test
// saves.
func TestScratchIngest(t *testing.T) {
	st := openStore(t)
	runs := filepath.Join(t.TempDir(), "runs")
	write(t, filepath.Join(runs, "r1", "trace.jsonl"), line("r1", "RunStarted", 0, `{"taskId":"r1","goal":"g"}`)+line("r1", "RunFinished", 1, `{"status":"success"}`), os.O_TRUNC)
	before := scalar[string](t, st, "SELECT current_setting('memory_limit')")
	res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: []string{runs}, Now: func() time.Time { return t0 }, Scratch: true})
	if err != nil || res.Events != 2 {
		t.Fatalf("scratch ingest: %v, %+v", err, res)
	}
	if n := scalar[int64](t, st, "SELECT count(*) FROM events"); n != 2 {
		t.Errorf("%d events stored, want 2", n)
	}
	if after := scalar[string](t, st, "SELECT current_setting('memory_limit')"); after != before {
		t.Errorf("memory limit %s after a scratch ingest, %s before", after, before)
	}
	if _, err := os.Stat(st.Path + ".writing"); !os.IsNotExist(err) {
		t.Errorf("a scratch ingest left the writing mark: %v", err)
	}
	// Its commit went to the log, not the file: no checkpoint ran.
	if fi, err := os.Stat(st.Path + ".wal"); err != nil || fi.Size() == 0 {
		t.Errorf("no write-ahead log after a scratch ingest (was it checkpointed?): %v", err)
	}
}

// What Find found is what an ingest into the new store reads: discovery is
// not done a second time (a run that appears in between waits for the
// next ingest), and the next ingest finds the first one's files unchanged.
func TestIngestReadsWhatFindFound(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	write(t, filepath.Join(runs, "r1", "trace.jsonl"), line("r1", "RunStarted", 0, `{"taskId":"r1","goal":"g"}`), os.O_TRUNC)
	found, err := ingest.Find([]string{runs}, "auto", t0)
	if err != nil || found.Files() != 1 {
		t.Fatalf("Find: %v, %d files", err, found.Files())
	}
	write(t, filepath.Join(runs, "r2", "trace.jsonl"), line("r2", "RunStarted", 0, `{"taskId":"r2","goal":"g"}`), os.O_TRUNC)
	st := openStore(t)
	res, err := ingest.Run(context.Background(), st, ingest.Options{Paths: []string{runs}, Found: found, Now: func() time.Time { return t0 }})
	if err != nil || res.Files != 1 || res.Events != 1 {
		t.Fatalf("ingest with what Find found: %v, %+v", err, res)
	}
	if res := ingestPaths(t, st, runs); res.Files != 2 || res.Unchanged != 1 || res.Events != 1 {
		t.Errorf("next ingest: %+v, want r1 unchanged and r2 read", res)
	}
}

// TestPayloadsAreStoredAsWritten: the trace is the source of truth, so a
// payload is stored byte for byte: spacing, <>&, escapes and number
// spellings included, and so is a run file's text.
func TestPayloadsAreStoredAsWritten(t *testing.T) {
	dir := t.TempDir()
	payloads := []string{
		`{ "a" : "<b>&amp;</b>" ,	"n": 1.50e0 }`,
		`{"s":"\u00e9\u2028\ud83d\ude00\"\\\/","lone":"\ud800"}`,
		`{"nested":{"k":[1, 2 ,3]},"empty":{}}`,
		`{}`,
	}
	var trace strings.Builder
	for i, p := range payloads {
		trace.WriteString(line("r1", "Note", i, p))
	}
	write(t, filepath.Join(dir, "r1", "trace.jsonl"), trace.String(), os.O_TRUNC)
	summary := "{ \"runId\": \"r1\",\n  \"status\": \"success\", \"note\": \"<&>\" }\n"
	write(t, filepath.Join(dir, "r1", "summary.json"), summary, os.O_TRUNC)
	st := openStore(t)
	ingestPaths(t, st, dir)
	for i, p := range payloads {
		if got := scalar[string](t, st, `SELECT payload FROM events WHERE line = ?`, i+1); got != p {
			t.Errorf("line %d: stored %q, the trace holds %q", i+1, got, p)
		}
	}
	if got := scalar[string](t, st, `SELECT raw FROM summaries`); got != summary {
		t.Errorf("summary: stored %q, the file holds %q", got, summary)
	}
	// Stored as text, the payload is still JSON to DuckDB's functions.
	if got := scalar[string](t, st, `SELECT payload->>'$.a' FROM events WHERE line = 1`); got != "<b>&amp;</b>" {
		t.Errorf("payload->>'$.a' = %q", got)
	}
}

// The DuckDB store is what cmd/orchstat hands ingest as its Store.
var _ ingest.Store = (*query.Store)(nil)
