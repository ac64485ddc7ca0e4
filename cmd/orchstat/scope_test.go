package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeRuns writes n finished runs named prefix0..prefixN-1 under dir, one
// run folder each, and returns dir.
func writeRuns(t *testing.T, dir, prefix string, n int) string {
	t.Helper()
	return writeRunsWith(t, dir, prefix, n, 10, "success")
}

// writeRunsWith writes n runs that started at hour:0i and ended with status.
func writeRunsWith(t *testing.T, dir, prefix string, n, hour int, status string) string {
	t.Helper()
	for i := range n {
		id := fmt.Sprintf("%s%d", prefix, i)
		run := filepath.Join(dir, id)
		if err := os.MkdirAll(run, 0o755); err != nil {
			t.Fatal(err)
		}
		lines := fmt.Sprintf(`{"type":"RunStarted","schemaVersion":1,"timestamp":"2025-11-05T%02d:0%d:00.000Z","runId":%q,"payload":{}}
{"type":"RunFinished","schemaVersion":1,"timestamp":"2025-11-05T%02d:0%d:30.000Z","runId":%q,"payload":{"status":%q}}
`, hour, i%10, id, hour, i%10, id, status)
		if err := os.WriteFile(filepath.Join(run, "trace.jsonl"), []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type scopedReport struct {
	Database string `json:"database"`
	Scope    struct {
		Paths       []string `json:"paths"`
		RunsInStore int64    `json:"runs_in_store"`
		RunsLeftOut int64    `json:"runs_left_out"`
	} `json:"scope"`
	Overview struct {
		Runs int64 `json:"runs"`
	} `json:"overview"`
}

func reportJSON(t *testing.T, args ...string) scopedReport {
	t.Helper()
	code, out, stderr := runCLI(t, "", append([]string{"report", "-f", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("report %v: exit %d: %s", args, code, stderr)
	}
	var r scopedReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report %v: %v", args, err)
	}
	return r
}

// A report on a folder covers that folder's runs, even in a store that
// holds others, and says what it left out; --all covers the store.
func TestReportCoversTheNamedPaths(t *testing.T) {
	endToEnd(t, "reports from a real store")
	top := t.TempDir()
	if err := os.Mkdir(filepath.Join(top, ".orchestrator"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := writeRuns(t, filepath.Join(top, "a"), "a", 7)
	b := writeRuns(t, filepath.Join(top, "b"), "b", 20)
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(top)
	if code, _, stderr := runCLI(t, "", "ingest", "-q", "b"); code != 0 {
		t.Fatalf("ingest b: %d %s", code, stderr)
	}
	store := filepath.Join(top, ".orchestrator", "orchstat.duckdb")

	r := reportJSON(t, "a")
	if r.Overview.Runs != 7 || r.Scope.RunsInStore != 27 || r.Scope.RunsLeftOut != 20 {
		t.Errorf("report a: runs %d, in store %d, left out %d; want 7, 27, 20", r.Overview.Runs, r.Scope.RunsInStore, r.Scope.RunsLeftOut)
	}
	if len(r.Scope.Paths) != 1 || r.Scope.Paths[0] != a || r.Database != store {
		t.Errorf("report a: paths %v, database %s; want [%s], %s", r.Scope.Paths, r.Database, a, store)
	}
	// A single run folder, and two folders.
	if r := reportJSON(t, filepath.Join("a", "a3")); r.Overview.Runs != 1 || r.Scope.RunsLeftOut != 26 {
		t.Errorf("report a/a3: runs %d, left out %d", r.Overview.Runs, r.Scope.RunsLeftOut)
	}
	if r := reportJSON(t, "a", b); r.Overview.Runs != 27 || r.Scope.RunsLeftOut != 0 {
		t.Errorf("report a b: runs %d, left out %d", r.Overview.Runs, r.Scope.RunsLeftOut)
	}
	if r := reportJSON(t, "a", "--all"); r.Overview.Runs != 27 || len(r.Scope.Paths) != 0 || r.Scope.RunsLeftOut != 0 {
		t.Errorf("report a --all: runs %d, paths %v", r.Overview.Runs, r.Scope.Paths)
	}
	if r := reportJSON(t, "--no-ingest", "a"); r.Overview.Runs != 7 {
		t.Errorf("report --no-ingest a: runs %d", r.Overview.Runs)
	}
	// From elsewhere, the same store and the same answer.
	os.Chdir(t.TempDir())
	if r := reportJSON(t, a); r.Overview.Runs != 7 || r.Database != store {
		t.Errorf("from elsewhere: runs %d, database %s", r.Overview.Runs, r.Database)
	}
}

// The store goes beside the data named: the nearest .orchestrator at or
// above it, else inside the folder named; never the working directory.
func TestStoreLivesBesideTheData(t *testing.T) {
	endToEnd(t, "reports from a real store")
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	writeRuns(t, filepath.Join(repo, ".orchestrator", "runs"), "r", 2)
	copyDir := writeRuns(t, filepath.Join(top, "data", "orch-copy"), "c", 3)
	file := filepath.Join(top, "loose", "x", "trace.jsonl")
	writeRuns(t, filepath.Join(top, "loose"), "x", 1)
	os.Rename(filepath.Join(top, "loose", "x0"), filepath.Join(top, "loose", "x"))
	for in, want := range map[string]string{
		repo:                                 filepath.Join(repo, ".orchestrator", "orchstat.duckdb"),
		filepath.Join(repo, ".orchestrator"): filepath.Join(repo, ".orchestrator", "orchstat.duckdb"),
		filepath.Join(repo, ".orchestrator", "runs", "r1"): filepath.Join(repo, ".orchestrator", "orchstat.duckdb"),
		copyDir:                                  filepath.Join(copyDir, ".orchestrator", "orchstat.duckdb"),
		file:                                     filepath.Join(top, "loose", "x", ".orchestrator", "orchstat.duckdb"),
		filepath.Join(top, "nothing", "t.jsonl"): filepath.Join(top, "nothing", ".orchestrator", "orchstat.duckdb"),
	} {
		if got := defaultDBFor(in); got != want {
			t.Errorf("%s: store %s, want %s", in, got, want)
		}
	}
	// cd data; orchstat report orch-copy: the working directory gets
	// nothing, and the report covers the copy alone.
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(filepath.Join(top, "data"))
	if r := reportJSON(t, "orch-copy"); r.Overview.Runs != 3 {
		t.Errorf("report orch-copy: %d runs", r.Overview.Runs)
	}
	if _, err := os.Stat(filepath.Join(top, "data", ".orchestrator")); err == nil {
		t.Errorf("a store was made in the working directory")
	}
	// The store inside orch-copy is not read as a run the next time.
	if r := reportJSON(t, "orch-copy"); r.Overview.Runs != 3 {
		t.Errorf("second report orch-copy: %d runs", r.Overview.Runs)
	}
	// From a folder inside a repository, with no PATH: the repository's.
	os.Chdir(filepath.Join(repo, ".orchestrator", "runs", "r0"))
	if r := reportJSON(t); r.Overview.Runs != 2 || r.Database != filepath.Join(repo, ".orchestrator", "orchstat.duckdb") {
		t.Errorf("report from inside the repo: %d runs in %s", r.Overview.Runs, r.Database)
	}
}

// --db creates no directory; the default creates only its .orchestrator.
func TestDBCreatesNoDirectory(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	runs := writeRuns(t, filepath.Join(top, "runs"), "r", 1)
	missing := filepath.Join(top, "nonexistent", "dir", "x.duckdb")
	code, _, stderr := runCLI(t, "", "--db", missing, "ingest", runs)
	if code != exitError || !strings.Contains(stderr, "does not exist") {
		t.Errorf("--db in a missing directory: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(top, "nonexistent")); err == nil {
		t.Errorf("--db %s created its directory", missing)
	}
}

// Nothing to read is an error naming the path and what was looked for,
// and leaves no store behind.
func TestNothingToReadIsAnError(t *testing.T) {
	endToEnd(t, "reports from a real store")
	t.Parallel()
	top := t.TempDir()
	empty := filepath.Join(top, "empty")
	notraces := filepath.Join(top, "notraces", "x")
	os.MkdirAll(empty, 0o755)
	os.MkdirAll(notraces, 0o755)
	os.WriteFile(filepath.Join(notraces, "readme.txt"), []byte("hi\n"), 0o644)
	for _, args := range [][]string{
		{"report", empty},
		{"ingest", filepath.Dir(notraces)},
		{"check", empty},
		{"ingest", "--format", "factory", empty},
	} {
		code, out, stderr := runCLI(t, "", args...)
		want := exitError
		if args[0] == "check" {
			want = checkUnknown // check speaks the monitoring-plugin codes
		}
		if code != want || !strings.Contains(stderr, "nothing to read in "+args[len(args)-1]) ||
			!strings.Contains(stderr, "records") || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
	}
	if err := filepath.Walk(top, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.Contains(p, ".orchestrator") {
			t.Errorf("a store was created: %s", p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// With a store that exists, the store is left as it was.
	db := filepath.Join(top, "s.duckdb")
	runs := writeRuns(t, filepath.Join(top, "runs"), "r", 2)
	if code, _, stderr := runCLI(t, "", "--db", db, "ingest", runs); code != 0 {
		t.Fatal(stderr)
	}
	code, _, stderr := runCLI(t, "", "--db", db, "ingest", empty)
	if code != exitError || !strings.Contains(stderr, "the store is unchanged") {
		t.Errorf("ingest empty into a store: exit %d, %q", code, stderr)
	}
	if r := reportJSON(t, "--db", db, "--no-ingest"); r.Overview.Runs != 2 {
		t.Errorf("store after: %d runs", r.Overview.Runs)
	}
}

// A file read as the wrong format is read again when named with the right
// one, and forget removes a file's rows, state and quarantined lines.
func TestWrongFormatIsReadAgain(t *testing.T) {
	endToEnd(t, "reports from a real store")
	t.Parallel()
	top := t.TempDir()
	src, err := os.ReadFile("../../testdata/rules/records/wasted/ok1/run_summary.json")
	if err != nil {
		t.Fatal(err)
	}
	foo := filepath.Join(top, "foo.json")
	os.WriteFile(foo, src, 0o644)
	db := filepath.Join(top, "s.duckdb")
	count := func(q string) string {
		t.Helper()
		_, out, stderr := runCLI(t, "", "--db", db, "sql", "-f", "csv", q)
		if stderr != "" {
			t.Fatal(stderr)
		}
		return strings.TrimSpace(strings.SplitN(out, "\n", 2)[1])
	}
	if code, out, stderr := runCLI(t, "", "--db", db, "ingest", "--format", "orchestrator", foo); code != 0 || !strings.Contains(out, "lines quarantined") {
		t.Fatalf("ingest as a trace: %d %q %q", code, out, stderr)
	}
	if n := count("SELECT count(*) FROM quarantine"); n == "0" {
		t.Fatalf("read as a trace, nothing was quarantined")
	}
	code, _, stderr := runCLI(t, "", "--db", db, "ingest", "--format", "factory", foo)
	if code != 0 || !strings.Contains(stderr, "it was read as an orchestrator trace before and is now read as a factory record") {
		t.Errorf("ingest --format factory: exit %d, %q", code, stderr)
	}
	if q, r := count("SELECT count(*) FROM quarantine"), count("SELECT count(*) FROM record_runs"); q != "0" || r != "1" {
		t.Errorf("after the re-read: %s quarantined, %s record runs; want 0, 1", q, r)
	}
	// Again: unchanged now.
	if _, out, _ := runCLI(t, "", "--db", db, "ingest", "--format", "factory", foo); !strings.Contains(out, "1 unchanged") {
		t.Errorf("third ingest: %q", out)
	}

	// forget: as a trace again, then forgotten whole.
	runCLI(t, "", "--db", db, "ingest", "--format", "orchestrator", foo)
	code, out, stderr := runCLI(t, "", "--db", db, "forget", foo)
	if code != 0 || !strings.Contains(out, "forgot 1 file") {
		t.Fatalf("forget: %d %q %q", code, out, stderr)
	}
	for _, tbl := range []string{"quarantine", "record_runs", "events", "file_states"} {
		if n := count("SELECT count(*) FROM " + tbl); n != "0" {
			t.Errorf("after forget, %s holds %s rows", tbl, n)
		}
	}
	if code, _, stderr := runCLI(t, "", "--db", db, "forget", foo); code != exitError || !strings.Contains(stderr, "holds nothing read from") {
		t.Errorf("forget twice: %d %q", code, stderr)
	}
	// Forgetting a folder keeps what is outside it.
	runs := writeRuns(t, filepath.Join(top, "runs"), "r", 3)
	other := writeRuns(t, filepath.Join(top, "other"), "o", 2)
	runCLI(t, "", "--db", db, "ingest", runs, other)
	if code, out, _ := runCLI(t, "", "--db", db, "forget", runs); code != 0 || !strings.Contains(out, "forgot 3 files") {
		t.Errorf("forget runs: %d %q", code, out)
	}
	if n := count("SELECT count(DISTINCT run_id) FROM events"); n != "2" {
		t.Errorf("after forgetting runs: %s runs left, want 2", n)
	}
	// Their figures went with them: a report counts the runs left.
	if n := count("SELECT count(*) FROM run_figures"); n != "2" {
		t.Errorf("after forgetting runs: figures of %s runs left, want 2", n)
	}
	if _, out, _ := runCLI(t, "", "--db", db, "ingest", runs); !strings.Contains(out, "ingested 6 events") {
		t.Errorf("re-ingest after forget: %q", out)
	}
}

// check and simulate on a folder see only its runs: five failures under a
// fire the cascade for a, while the whole store's last five runs, b's, all
// passed. The scoped alert is another alert (label scope) than the store's.
func TestCheckAndSimulateCoverTheNamedPaths(t *testing.T) {
	endToEnd(t, "reports from a real store")
	top := t.TempDir()
	os.Mkdir(filepath.Join(top, ".orchestrator"), 0o755)
	a := writeRunsWith(t, filepath.Join(top, "a"), "a", 5, 10, "failure")
	writeRunsWith(t, filepath.Join(top, "b"), "b", 5, 11, "success")
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(top)
	runCLI(t, "", "ingest", "-q", "a", "b")

	type checked struct {
		Database string `json:"database"`
		Scope    struct {
			Paths       []string `json:"paths"`
			RunsLeftOut int64    `json:"runs_left_out"`
		} `json:"scope"`
		Alerts []struct {
			Rule, State string
			Labels      map[string]string
			Value       *float64
		} `json:"alerts"`
	}
	check := func(args ...string) (int, checked) {
		t.Helper()
		code, out, stderr := runCLI(t, "", append([]string{"check", "-f", "json"}, args...)...)
		var c checked
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("check %v: %v (%s)", args, err, stderr)
		}
		return code, c
	}
	cascade := func(c checked) (string, float64, map[string]string) {
		for _, al := range c.Alerts {
			if al.Rule == "run_failure_cascade" && al.Value != nil {
				return al.State, *al.Value, al.Labels
			}
		}
		t.Fatalf("no run_failure_cascade row in %+v", c.Alerts)
		return "", 0, nil
	}
	code, c := check("a")
	state, v, labels := cascade(c)
	if code != checkCritical || state != "firing" || v != 5 || labels["scope"] != a || c.Scope.RunsLeftOut != 5 {
		t.Errorf("check a: exit %d, cascade %s at %v with %v, %d left out; want 2, firing at 5, scope %s, 5", code, state, v, labels, c.Scope.RunsLeftOut, a)
	}
	code, c = check()
	state, v, labels = cascade(c)
	if code != checkOK || state != "inactive" || v != 0 || labels["scope"] != "" || len(c.Scope.Paths) != 0 {
		t.Errorf("check: exit %d, cascade %s at %v with %v; want 0, inactive at 0, no scope", code, state, v, labels)
	}
	// The whole store's check left a's alert alone: still firing.
	if code, c = check("a"); code != checkCritical {
		t.Errorf("check a again: exit %d", code)
	} else if state, _, _ := cascade(c); state != "firing" {
		t.Errorf("check a again: cascade %s, want firing", state)
	}

	code, out, stderr := runCLI(t, "", "simulate", "-f", "json", "--policy", "none", "a")
	var sim checked
	if err := json.Unmarshal([]byte(out), &sim); err != nil || code != 0 {
		t.Fatalf("simulate a: exit %d, %v, %s", code, err, stderr)
	}
	if len(sim.Scope.Paths) != 1 || sim.Scope.Paths[0] != a || sim.Scope.RunsLeftOut != 5 {
		t.Errorf("simulate a: scope %+v", sim.Scope)
	}
}

// recommend on a folder reads only that folder's history, and says so.
func TestRecommendCoversTheNamedPaths(t *testing.T) {
	endToEnd(t, "reports from a real store")
	top := t.TempDir()
	os.Mkdir(filepath.Join(top, ".orchestrator"), 0o755)
	for _, set := range []string{"wasted", "healthy"} {
		if err := os.CopyFS(filepath.Join(top, set), os.DirFS(filepath.Join("../../testdata/rules/records", set))); err != nil {
			t.Fatal(err)
		}
	}
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(top)
	if code, _, stderr := runCLI(t, "", "ingest", "-q", "healthy"); code != 0 {
		t.Fatal(stderr)
	}
	cfg := filepath.Join(top, "retry-config.json")
	wasted := recommendJSONOut(t, "--stage", "preflight", "--config", cfg, "wasted")
	all := recommendJSONOut(t, "--stage", "preflight", "--config", cfg, "--all", "wasted")
	if wasted.Runs != 5 || all.Runs != 11 {
		t.Errorf("runs recorded: %d under wasted, %d with --all; want 5 and 11", wasted.Runs, all.Runs)
	}
	if wasted.Scope == nil || wasted.Scope.RunsLeftOut != 6 || wasted.Store != filepath.Join(top, ".orchestrator", "orchstat.duckdb") {
		t.Errorf("scope %+v in %s", wasted.Scope, wasted.Store)
	}
}

// A run linked into a runs folder from elsewhere is read from where it
// lives, and a report on the runs folder still covers it.
func TestScopeFollowsLinkedRuns(t *testing.T) {
	endToEnd(t, "reports from a real store")
	top := t.TempDir()
	os.Mkdir(filepath.Join(top, ".orchestrator"), 0o755)
	runs := writeRuns(t, filepath.Join(top, "runs"), "r", 2)
	elsewhere := writeRuns(t, filepath.Join(top, "elsewhere"), "l", 1)
	if err := os.Symlink(filepath.Join(elsewhere, "l0"), filepath.Join(runs, "linked")); err != nil {
		t.Fatal(err)
	}
	writeRuns(t, filepath.Join(top, "other"), "o", 4)
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(top)
	runCLI(t, "", "ingest", "-q", "other")
	if r := reportJSON(t, "runs"); r.Overview.Runs != 3 || r.Scope.RunsLeftOut != 4 {
		t.Errorf("report runs: %d runs, %d left out; want 3 (one linked) and 4", r.Overview.Runs, r.Scope.RunsLeftOut)
	}
}
