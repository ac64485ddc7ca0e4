package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const externalData = "../../../shared/testdata-external"

// copyFile copies one file of the repository's fixtures into dir.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// --input-format is the records' format on every command that ingests,
// ingest included; ingest's old --format still works, unlisted.
func TestInputFormatEverywhere(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	top := t.TempDir()
	rollout := filepath.Join(top, "any", "where.jsonl")
	copyFile(t, "../../ingest/codex/testdata/normal.jsonl", rollout)
	for _, flag := range []string{"--input-format", "--format"} {
		db := filepath.Join(top, strings.TrimLeft(flag, "-")+".duckdb")
		code, out, stderr := runCLI(t, "", "--db", db, "ingest", flag, "codex", filepath.Dir(rollout))
		if code != 0 || !strings.Contains(out, "model calls") {
			t.Errorf("ingest %s codex: exit %d, %q %q", flag, code, out, stderr)
		}
	}
	_, help, _ := runCLI(t, "", "ingest", "--help")
	if !strings.Contains(help, "--input-format") || strings.Contains(help, "  --format") {
		t.Errorf("ingest --help lists:\n%s", help)
	}
	// The other commands' --format is their output's, as before.
	db := filepath.Join(top, "r.duckdb")
	if code, _, stderr := runCLI(t, "", "--db", db, "report", "--input-format", "codex", "--format", "json", filepath.Dir(rollout)); code != 0 {
		t.Errorf("report --input-format codex: exit %d, %s", code, stderr)
	}
}

// A folder of files no format reads beside ones it does: the ingest goes
// on and names them in one line on stderr; --verbose lists each with the
// reason. A named transcript without --format is read as one.
func TestNotRecognisedAreNamed(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	top := t.TempDir()
	data := filepath.Join(top, "data")
	copyFile(t, "../../ingest/claudecode/testdata/clean.jsonl", filepath.Join(data, "sessions", "s1.jsonl"))
	os.WriteFile(filepath.Join(data, "data.json"), []byte(`{"name":"x"}`), 0o644)
	os.WriteFile(filepath.Join(data, "empty.jsonl"), nil, 0o644)
	os.WriteFile(filepath.Join(data, "README.md"), []byte("# hi\n"), 0o644)
	db := filepath.Join(top, "s.duckdb")
	code, out, stderr := runCLI(t, "", "--db", db, "ingest", data)
	if code != 0 || !strings.Contains(out, "model calls") || !strings.Contains(out, "0 lines quarantined") {
		t.Fatalf("exit %d, %q %q", code, out, stderr)
	}
	want := "orchstat: 2 files not recognised: " + filepath.Join(data, "data.json") + ", " + filepath.Join(data, "empty.jsonl") + "; see --verbose\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	_, _, stderr = runCLI(t, "", "--db", db, "ingest", "--verbose", data)
	if !strings.Contains(stderr, filepath.Join(data, "data.json")+`: a JSON object whose first keys ("name") are no format's`) ||
		!strings.Contains(stderr, filepath.Join(data, "empty.jsonl")+": empty") || strings.Contains(stderr, "README") {
		t.Errorf("--verbose: %q", stderr)
	}
	if _, _, stderr = runCLI(t, "", "--db", db, "ingest", "-q", data); stderr != "" {
		t.Errorf("--quiet: %q", stderr)
	}
	// Only such files: nothing to read, and they are named.
	only := filepath.Join(top, "only")
	os.MkdirAll(only, 0o755)
	os.WriteFile(filepath.Join(only, "x.json"), []byte(`{"a":1}`), 0o644)
	code, _, stderr = runCLI(t, "", "ingest", only)
	if code != exitError || !strings.Contains(stderr, "1 file not recognised: ") || !strings.Contains(stderr, "nothing to read in "+only) {
		t.Errorf("only unrecognised: exit %d, %q", code, stderr)
	}

	// Binary, named alone: an error naming it, nothing quarantined.
	bin := filepath.Join(top, "x.bin")
	os.WriteFile(bin, []byte("\x00\x01\x02\x03zstd"), 0o644)
	code, _, stderr = runCLI(t, "", "--db", filepath.Join(top, "bin.duckdb"), "ingest", bin)
	if code != exitError || !strings.Contains(stderr, "cannot read "+bin+": not recognised: no format reads it: it is binary, not JSON") {
		t.Errorf("binary named: exit %d, %q", code, stderr)
	}

	// Text that is no record, named alone (a README, go.sum): not
	// recognised, as in a folder, exit 1, and no store created. Before,
	// it was read as a trace: exit 0, every line quarantined, a store
	// beside it, nothing said.
	for _, name := range []string{"README.md", "go.sum", "notes.json"} {
		p := filepath.Join(top, "alone", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("# a heading\nsome words\n"), 0o644)
		if name == "notes.json" {
			os.WriteFile(p, []byte(`{"title": "notes"}`+"\n"), 0o644)
		}
		for _, cmd := range []string{"ingest", "report"} {
			code, _, stderr = runCLI(t, "", cmd, p)
			if code != exitError || !strings.Contains(stderr, "cannot read "+p+": not recognised: no format reads it: it is ") {
				t.Errorf("%s %s: exit %d, %q", cmd, name, code, stderr)
			}
			if _, err := os.Stat(filepath.Join(top, "alone", ".orchestrator")); err == nil {
				t.Errorf("%s %s: a store was created beside it", cmd, name)
			}
		}
	}
	// A trace under another name is still read by its first line.
	trace := filepath.Join(top, "alone", "run.log")
	first, _ := filepath.Glob("../../testdata/runs/*/trace.jsonl")
	b, _ := os.ReadFile(first[0])
	os.WriteFile(trace, b, 0o644)
	if code, _, stderr = runCLI(t, "", "--db", filepath.Join(top, "trace.duckdb"), "ingest", trace); code != 0 {
		t.Errorf("a trace named run.log: exit %d, %q", code, stderr)
	}

	// Named alone, without --format: a transcript, not a trace.
	named := filepath.Join(top, "named.duckdb")
	code, out, stderr = runCLI(t, "", "--db", named, "ingest", filepath.Join(data, "sessions", "s1.jsonl"))
	if code != 0 || !strings.Contains(out, "model calls") || !strings.Contains(out, "0 lines quarantined") {
		t.Errorf("named transcript: exit %d, %q %q", code, out, stderr)
	}
}

// The same command on a folder with nothing to read gives the same answer
// every time, and leaves the store as it was.
func TestNothingToReadTwice(t *testing.T) {
	endToEnd(t, "runs orchstat against a real store")
	t.Parallel()
	top := t.TempDir()
	db := filepath.Join(top, "s.duckdb")
	runs := writeRuns(t, filepath.Join(top, "runs"), "r", 1)
	if code, _, stderr := runCLI(t, "", "--db", db, "ingest", runs); code != 0 {
		t.Fatal(stderr)
	}
	empty := filepath.Join(top, "empty")
	// Older than the commands' clock, so their listings could be trusted.
	old := fixedNow.Add(-time.Hour)
	for _, sub := range []string{"a", "b/c"} {
		os.MkdirAll(filepath.Join(empty, sub), 0o755)
	}
	for _, sub := range []string{"a", "b/c", "b", ""} {
		os.Chtimes(filepath.Join(empty, sub), old, old)
	}
	listings := func() string {
		_, out, _ := runCLI(t, "", "--db", db, "sql", "-f", "csv", "SELECT count(*) FROM dir_states")
		return out
	}
	before := listings()
	for i := range 2 {
		for _, cmd := range []string{"report", "ingest"} {
			code, _, stderr := runCLI(t, "", "--db", db, cmd, empty)
			if code != exitError || !strings.Contains(stderr, "nothing to read in "+empty) || !strings.Contains(stderr, "the store is unchanged") {
				t.Errorf("%s, call %d: exit %d, %q", cmd, i+1, code, stderr)
			}
			if after := listings(); after != before {
				t.Errorf("%s, call %d: dir_states went from %q to %q", cmd, i+1, before, after)
			}
		}
	}
}

// A copy of the real records: every kind is found, the orchestrator runs
// below orchestrator/runs included, and the files no format reads named.
func TestRealRecordsFromTheTop(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(externalData); err != nil {
		t.Skip("../shared/testdata-external is absent")
	}
	db := filepath.Join(t.TempDir(), "s.duckdb")
	code, out, stderr := runCLI(t, "", "--db", db, "ingest", externalData)
	if code != 0 || !strings.Contains(stderr, "files not recognised: ") {
		t.Fatalf("exit %d, %q %q", code, out, stderr)
	}
	if strings.HasPrefix(out, "ingested 0 events") {
		t.Errorf("the orchestrator runs were not found: %q", out)
	}
	_, runs, _ := runCLI(t, "", "--db", db, "sql", "-f", "csv", "SELECT count(DISTINCT run_id) FROM events")
	if strings.TrimSpace(strings.SplitN(runs, "\n", 2)[1]) != "7" {
		t.Errorf("runs with events: %q", runs)
	}
}
