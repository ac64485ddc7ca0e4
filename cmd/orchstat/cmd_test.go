package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// fixedNow is the clock of runCLI. No test changes it: one that needs
// another time passes it (runCLIAt), so tests can run in parallel.
var fixedNow = time.Date(2025, 11, 6, 0, 0, 0, 0, time.UTC)

// runCLI runs orchstat in-process with buffers and a fixed clock.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIWith(t, fixedNow, defaultDeps(), stdin, args...)
}

// runCLIAt is runCLI with the clock at now.
func runCLIAt(t *testing.T, now time.Time, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCLIWith(t, now, defaultDeps(), stdin, args...)
}

// runCLIWith is runCLI with the clock at now and the dependencies d.
func runCLIWith(t *testing.T, now time.Time, d deps, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runWith(context.Background(), args, &IO{In: strings.NewReader(stdin), Out: &out, Err: &errb, Now: func() time.Time { return now }}, d)
	return code, out.String(), errb.String()
}

// goldenStore ingests testdata/DATA into a store named by a relative
// path in a temporary working folder, which keeps the reported path, and so
// the output, the same on every machine. It returns the goldens' folder and
// the store; the working folder is restored when the test ends.
func goldenStore(t *testing.T, data string) (goldenDir, db string) {
	t.Helper()
	src, err := filepath.Abs("../../testdata/" + data)
	if err != nil {
		t.Fatal(err)
	}
	if goldenDir, err = filepath.Abs("../../testdata/golden"); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	os.Chdir(t.TempDir())
	db = "orchstat.duckdb"
	if code, _, stderr := runCLI(t, "", "--db", db, "ingest", "-q", src); code != 0 {
		t.Fatalf("ingest exit %d: %s", code, stderr)
	}
	return goldenDir, db
}

func TestReportGolden(t *testing.T) {
	endToEnd(t, "runs commands, goldens included, against a real store")
	goldenDir, db := goldenStore(t, "runs")
	runs, _ := filepath.Abs(filepath.Join(goldenDir, "..", "runs"))
	for _, format := range []string{"table", "markdown", "json", "csv", "html"} {
		t.Run(format, func(t *testing.T) {
			code, out, stderr := runCLI(t, "", "--db", db, "report", "--no-ingest", "--format", format)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			// The page links the worst runs' traces by their absolute
			// paths, which depend on where the repository is.
			out = strings.ReplaceAll(out, runs, "/RUNS")
			matchGolden(t, filepath.Join(goldenDir, "report."+format), out)
		})
	}
}

// matchGolden fails the test unless out is the golden file's content;
// with -update it writes the file first.
func matchGolden(t *testing.T, golden, out string) {
	t.Helper()
	if *update {
		os.MkdirAll(filepath.Dir(golden), 0o755)
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/orchstat -run Golden -update to create it)", err)
	}
	if out != string(want) {
		t.Errorf("the output differs from %s (go test ./cmd/orchstat -run Golden -update rewrites it):\n%s", golden, lineDiff(string(want), out))
	}
}

// The simulation page of the bundled runs, against its golden file.
func TestSimulateHTMLGolden(t *testing.T) {
	endToEnd(t, "runs commands, goldens included, against a real store")
	runs, err := filepath.Abs("../../testdata/runs")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := filepath.Abs("../../testdata/golden/simulate.html")
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	tmp := t.TempDir()
	os.Chdir(tmp)
	code, out, stderr := runCLI(t, "", "--db", "orchstat.duckdb", "simulate", runs, "--quiet",
		"--max-retries", "5", "--policy", "auto-retry", "--seed", "1", "--format", "html")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	matchGolden(t, golden, strings.ReplaceAll(strings.ReplaceAll(out, runs, "/RUNS"), tmp, "/TMP"))
}

func TestReportFiltersAndJSONContract(t *testing.T) {
	endToEnd(t, "runs commands, goldens included, against a real store")
	t.Parallel()
	db := bundledStore(t)
	for _, tc := range []struct {
		args []string
		runs float64
	}{
		{nil, 20},
		{[]string{"--since", "2025-11-05"}, 7},
		{[]string{"--until", "2025-11-04"}, 6},
		{[]string{"--since", "2d"}, 14}, // fixedNow - 2 days = 2025-11-04T00:00Z: Nov 4 and 5
		{[]string{"--since", "30h"}, 9}, // 2025-11-04T18:00Z: two late Nov 4 runs and all of Nov 5
		{[]string{"--run", "1762164347120", "--run", "1762169462777"}, 2},
		{[]string{"--provider", "ollama"}, 2}, // one requested it, one only selected it
		{[]string{"--provider", "nobody"}, 0},
	} {
		args := append([]string{"--db", db, "report", "--no-ingest", "--format", "json"}, tc.args...)
		code, out, stderr := runCLI(t, "", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", tc.args, code, stderr)
		}
		var r struct {
			Metrics map[string]map[string]*float64 `json:"metrics"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if got := *r.Metrics["runs"]["value"]; got != tc.runs {
			t.Errorf("%v: runs = %v, want %v", tc.args, got, tc.runs)
		}
		// Counts carry only a value; ratios carry numerator and denominator,
		// and a zero denominator gives a null value.
		if _, ok := r.Metrics["runs"]["numerator"]; ok {
			t.Errorf("runs has a numerator")
		}
		rate := r.Metrics["provider_retry_rate"]
		if rate["denominator"] == nil || (*rate["denominator"] == 0) != (rate["value"] == nil) {
			t.Errorf("%v: provider_retry_rate %v", tc.args, rate)
		}
	}
}

func TestSQLIsReadOnly(t *testing.T) {
	endToEnd(t, "runs commands, goldens included, against a real store")
	t.Parallel()
	db := bundledStore(t)
	code, out, _ := runCLI(t, "", "--db", db, "sql", "--format", "csv", "SELECT status, count(*) AS n FROM runs GROUP BY ALL ORDER BY status")
	if code != 0 || !strings.HasPrefix(out, "status,n\ncancelled,1\nfailure,7\n") {
		t.Fatalf("select: %d %q", code, out)
	}
	for _, q := range []string{
		"INSERT INTO events SELECT * FROM events",
		"DELETE FROM events",
		"CREATE TABLE x (a INT)",
		"DROP VIEW runs",
		"COPY events TO '" + filepath.Join(t.TempDir(), "out.csv") + "'",
		"ATTACH '" + filepath.Join(t.TempDir(), "other.duckdb") + "' AS o",
		"SET enable_external_access = true",
		"CREATE TEMP TABLE t AS SELECT 1",
		"SELECT * FROM read_csv('/etc/hostname')",
		"DROP VIEW runs; SELECT 1",
	} {
		code, _, stderr := runCLI(t, "", "--db", db, "sql", q)
		if code != 1 || !strings.Contains(stderr, "read-only") && !strings.Contains(stderr, "lock") {
			t.Errorf("%q: exit %d, stderr %q", q, code, stderr)
		}
	}
	if n := countEvents(t, db); n != 974 {
		t.Fatalf("events changed to %d", n)
	}
}

func countEvents(t *testing.T, db string) int {
	_, out, _ := runCLI(t, "", "--db", db, "sql", "--format", "csv", "SELECT count(*) AS n FROM events")
	var n int
	for _, l := range strings.Split(out, "\n")[1:] {
		if l != "" {
			json.Unmarshal([]byte(l), &n)
		}
	}
	return n
}

func TestQuarantineAndIngestOutput(t *testing.T) {
	endToEnd(t, "runs commands, goldens included, against a real store")
	t.Parallel()
	db := filepath.Join(t.TempDir(), "orchstat.duckdb")
	code, out, stderr := runCLI(t, "", "--db", db, "ingest", "../../testdata/runs")
	if code != 0 || !strings.Contains(out, "ingested 974 events") || !strings.Contains(out, "15 lines quarantined") {
		t.Fatalf("ingest: %d %q %q", code, out, stderr)
	}
	code, out, _ = runCLI(t, "", "--db", db, "quarantine", "--format", "json", "--limit", "0")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || code != 0 || len(rows) != 15 {
		t.Fatalf("quarantine: %d %v %d rows", code, err, len(rows))
	}
	for _, r := range rows {
		if r["path"] == nil || r["reason"] == nil || r["line"] == nil || r["byte_offset"] == nil {
			t.Errorf("incomplete row %v", r)
		}
	}
	// Again: nothing new.
	_, out, _ = runCLI(t, "", "--db", db, "ingest", "../../testdata/runs")
	if !strings.Contains(out, "ingested 0 events") {
		t.Errorf("re-ingest: %q", out)
	}
}

func TestStdinAndDefaultDB(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(dir)
	in := `{"type":"RunStarted","schemaVersion":1,"timestamp":"2025-11-05T10:00:00.000Z","runId":"s","payload":{}}` + "\n"
	code, out, stderr := runCLI(t, in, "ingest", "-")
	if code != 0 || !strings.Contains(out, filepath.Join(".orchestrator", "orchstat.duckdb")) {
		t.Fatalf("%d %q %q", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, ".orchestrator", "orchstat.duckdb")); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultDBNextToRuns(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"/repo/.orchestrator/runs":             "/repo/.orchestrator/orchstat.duckdb",
		"/repo/.orchestrator/runs/123":         "/repo/.orchestrator/orchstat.duckdb",
		"/repo/.orchestrator/runs/123/x.jsonl": "/repo/.orchestrator/orchstat.duckdb",
		"/elsewhere/traces":                    "/elsewhere/traces/.orchestrator/orchstat.duckdb",
	} {
		if got := defaultDBFor(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"report", "--format", "yaml"},
		{"report", "--since", "last tuesday"},
		{"sql"},
		{"ingest", "--no-such-flag"},
		{"frobnicate"},
	} {
		code, _, stderr := runCLI(t, "", args...)
		if code != exitUsage || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	// The versions are read from what is linked in, not written down.
	if code, out, _ := runCLI(t, "", "version"); code != 0 || !strings.HasPrefix(out, "orchstat ") ||
		!strings.Contains(out, "(DuckDB v1.5.6, duckdb-go v2.10506.0)") {
		t.Errorf("version: %d %q", code, out)
	}
	if code, out, _ := runCLI(t, "", "completion", "bash"); code != 0 || !strings.Contains(out, "bash completion") {
		t.Errorf("completion: %d", code)
	}
}

func TestFlagsReachOptions(t *testing.T) {
	t.Parallel()
	var got *reportOptions
	g := &globals{io: &IO{Now: time.Now}}
	cmd := newReportCmd(g, func(_ context.Context, o *reportOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"a", "b", "--since", "24h", "--run", "x", "--run", "y", "--provider", "p", "--no-ingest", "-f", "csv"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Paths, ",") != "a,b" || got.Since != "24h" || strings.Join(got.Runs, ",") != "x,y" || got.Provider != "p" || !got.NoIngest || got.Format != "csv" {
		t.Errorf("%+v", got)
	}
}

// lineDiff shows the first lines that differ, which is what a reviewer of a
// golden failure needs.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i+1, wl, gl)
			shown++
		}
	}
	return b.String()
}
