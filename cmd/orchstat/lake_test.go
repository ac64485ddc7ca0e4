package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/query/lake"
)

// lakeRunner is one runner's machine in the lake tests: its runs folder,
// the record files it ingests besides, and its store.
type lakeRunner struct {
	name, runs, db string
	otlp           []string // read with --format otlp
	records        []string
}

// writeLakeRun writes an orchestrator run that starts on day (days after
// 2026-11-01) and makes reqs provider requests, every third retried.
func writeLakeRun(t *testing.T, runs, id string, day, reqs int) {
	t.Helper()
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC).AddDate(0, 0, day).Add(time.Duration(len(id)*97%600) * time.Second)
	var b strings.Builder
	at := func(i int) string {
		return start.Add(time.Duration(i) * time.Second).Format("2006-01-02T15:04:05.000Z")
	}
	ev := func(i int, typ, payload string) {
		fmt.Fprintf(&b, `{"type":%q,"schemaVersion":1,"timestamp":%q,"runId":%q,"payload":%s}`+"\n", typ, at(i), id, payload)
	}
	ev(0, "RunStarted", `{"taskId":"t"}`)
	provider := []string{"anthropic", "openai"}[day%2]
	for r := range reqs {
		ev(1+2*r, "ProviderRequestStarted", fmt.Sprintf(`{"provider":%q,"model":"m%d"}`, provider, r%2))
		ev(2+2*r, "ProviderRequestFinished", fmt.Sprintf(`{"provider":%q,"durationMs":12,"success":%v,"retries":%d}`, provider, r%5 != 4, (r%3)/2))
	}
	status := []string{"success", "failure"}[(day+reqs)%2]
	ev(2*reqs+1, "RunFinished", fmt.Sprintf(`{"status":%q}`, status))
	dir := filepath.Join(runs, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "trace.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// newLakeRunners makes two runners: a holds the bundled runs and runs of
// days 0-9; b holds runs of days 5-14, factory and claudestrator records
// and OpenTelemetry calls.
func newLakeRunners(t *testing.T) (a, b *lakeRunner) {
	return lakeRunnersIn(t, t.TempDir())
}

// lakeRunnersIn is newLakeRunners in dir.
func lakeRunnersIn(t *testing.T, dir string) (a, b *lakeRunner) {
	a = &lakeRunner{name: "runner-a", runs: filepath.Join(dir, "a", "runs"), db: filepath.Join(dir, "a.duckdb")}
	b = &lakeRunner{name: "runner-b", runs: filepath.Join(dir, "b", "runs"), db: filepath.Join(dir, "b.duckdb"),
		otlp:    []string{abs(t, "../../ingest/otlp/testdata/http_retries.jsonl"), abs(t, "../../ingest/otlp/testdata/agents.jsonl")},
		records: []string{abs(t, "../../testdata/factory/audit"), abs(t, "../../testdata/claudestrator/webshop")}}
	copyTree(t, abs(t, "../../testdata/runs"), a.runs)
	for i := range 30 {
		writeLakeRun(t, a.runs, fmt.Sprintf("a%03d", i), i/3, 1+i%4)
		writeLakeRun(t, b.runs, fmt.Sprintf("b%03d", i), 5+i/3, 2+i%3)
	}
	writeLakeRun(t, b.runs, "b-alone", 30, 2) // the only run of its day
	return a, b
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ingestInto ingests the runner's files into db.
func (r *lakeRunner) ingestInto(t *testing.T, db string) {
	t.Helper()
	for _, args := range [][]string{
		append([]string{"--db", db, "ingest", "--quiet", r.runs}, r.records...),
		append([]string{"--db", db, "ingest", "--quiet", "--format", "otlp"}, r.otlp...),
	} {
		if len(args) == 6 && args[4] == "--format" {
			continue // no OpenTelemetry files
		}
		if code, _, stderr := runCLI(t, "", args...); code != 0 && code != 1 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
	}
}

func (r *lakeRunner) export(t *testing.T, lake string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, "", "--db", r.db, "export", "--no-ingest", "--lake", lake, "--runner", r.name)
	if code != 0 {
		t.Fatalf("export %s: exit %d\n%s%s", r.name, code, stdout, stderr)
	}
	return stdout
}

// lakeReportJSON is a report's JSON less what names the store and the time.
func lakeReportJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	return lakeReportJSONCmd(t, args...)
}

// lakeDeps are the dependencies of the lake tests' commands: one cache
// folder per test, in its temporary folder, so a test's reads of a lake
// after the first update its replica, as a user's would.
func lakeDeps(t *testing.T) deps {
	lakeCaches.Lock()
	defer lakeCaches.Unlock()
	dir, ok := lakeCaches.m[t]
	if !ok {
		dir = t.TempDir()
		lakeCaches.m[t] = dir
	}
	d := defaultDeps()
	d.lake.CacheDir = dir
	d.startReplica = replicaInProcess(t, d)
	return d
}

// replicaInProcess builds a lake's replica as lake-replica would, with
// d's lake options, before the command that started it returns: the read
// after a test's first reads its replica.
func replicaInProcess(t *testing.T, d deps) func(loc, log string) error {
	return func(loc, log string) error {
		t.Helper()
		if code, _, stderr := runCLIWith(t, fixedNow, d, "", "lake-replica", "--lake", loc); code != 0 {
			t.Errorf("lake-replica --lake %s: exit %d\n%s", loc, code, stderr)
		}
		return nil
	}
}

var lakeCaches = struct {
	sync.Mutex
	m map[*testing.T]string
}{m: map[*testing.T]string{}}

// lakeReportJSONCmd is lakeReportJSON for any command that prints JSON.
func lakeReportJSONCmd(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := runCLIWith(t, fixedNow, lakeDeps(t), "", append(args, "--format", "json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stdout)
	}
	delete(m, "generated_at")
	delete(m, "database")
	return m
}

// sameJSON fails the test, naming the first keys that differ, unless a
// and b are equal.
func sameJSON(t *testing.T, what string, a, b map[string]any) {
	t.Helper()
	if reflect.DeepEqual(a, b) {
		return
	}
	var diff []string
	for k := range a {
		if !reflect.DeepEqual(a[k], b[k]) {
			ja, _ := json.Marshal(a[k])
			jb, _ := json.Marshal(b[k])
			diff = append(diff, fmt.Sprintf("%s:\n  store %s\n  lake  %s", k, cut(string(ja)), cut(string(jb))))
		}
	}
	sort.Strings(diff)
	t.Fatalf("%s: the lake's report differs from the union store's:\n%s", what, strings.Join(diff, "\n"))
}

func cut(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return s
}

// lakeFiles lists the lake's files with their sizes and times, to see what
// an export rewrote.
func lakeFiles(t *testing.T, lake string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(lake, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(lake, p)
		out[rel] = fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	return out
}

// TestLakeEqualsUnionStore is issue 15's "done when": two runners export
// to one lake at once, and the lake's report equals that of one store
// holding both runners' files, whole and in a time window, and arrow-go
// reads each table's rows once in the lake's files; a second
// export writes nothing; and after the runners' files change (a new run,
// a grown trace, a forgotten folder), the next exports bring the lake
// level again.
func TestLakeEqualsUnionStore(t *testing.T) {
	endToEnd(t, "exports and reads lakes of real stores")
	t.Parallel()
	a, b := newLakeRunners(t)
	lake := filepath.Join(t.TempDir(), "lake")
	union := filepath.Join(t.TempDir(), "union.duckdb")
	for _, r := range []*lakeRunner{a, b} {
		r.ingestInto(t, r.db)
		r.ingestInto(t, union)
	}
	var wg sync.WaitGroup
	for _, r := range []*lakeRunner{a, b} {
		wg.Go(func() { r.export(t, lake) })
	}
	wg.Wait()
	compare := func(stage string) {
		t.Helper()
		// A window first: the replica then holds the window's partitions,
		// and the whole report after it loads the rest.
		for _, args := range [][]string{{"--since", "2026-11-08"}, nil, {"--since", "2026-11-03", "--until", "2026-11-06"}, {"--provider", "openai"}} {
			want := lakeReportJSON(t, append([]string{"--db", union, "report", "--no-ingest"}, args...)...)
			got := lakeReportJSON(t, append([]string{"report", "--lake", lake}, args...)...)
			sameJSON(t, fmt.Sprintf("%s, report %v", stage, args), want, got)
		}
	}
	compare("first export")
	// The lake holds each table's rows once, as a second Parquet reader
	// sees them.
	if got, want := parquetCounts(t, lake), storeCounts(t, union); !reflect.DeepEqual(got, want) {
		t.Errorf("rows per table in the lake %v, in the union store %v", got, want)
	}

	before := lakeFiles(t, lake)
	if out := a.export(t, lake); !strings.HasPrefix(out, "nothing new to export") {
		t.Errorf("second export: %q", out)
	}
	if after := lakeFiles(t, lake); !reflect.DeepEqual(before, after) {
		t.Errorf("an export with nothing new changed the lake")
	}

	// Changes: a new run on a new day, a grown trace, and two folders gone, one the only
	// run of its day.
	writeLakeRun(t, a.runs, "a-new", 20, 3)
	writeLakeRun(t, a.runs, "a004", 1, 2)
	for _, db := range []string{a.db, union} {
		a.ingestInto(t, db)
	}
	for _, run := range []string{"b007", "b-alone"} {
		for _, db := range []string{b.db, union} {
			if code, _, stderr := runCLI(t, "", "--db", db, "forget", filepath.Join(b.runs, run)); code != 0 {
				t.Fatalf("forget: %s", stderr)
			}
		}
		os.RemoveAll(filepath.Join(b.runs, run))
	}
	mid := lakeFiles(t, lake)
	for _, r := range []*lakeRunner{a, b} {
		r.export(t, lake)
	}
	rewritten := 0
	for k, v := range lakeFiles(t, lake) {
		if mid[k] != v {
			rewritten++
		}
	}
	if rewritten == 0 || rewritten >= len(mid)/2 {
		t.Errorf("the second round of exports rewrote %d of %d files; want some, and few", rewritten, len(mid))
	}
	compare("after changes")
}

// storeCounts counts each lake table's rows in a store, with orchstat sql.
func storeCounts(t *testing.T, db string) map[string]int64 {
	t.Helper()
	var parts []string
	for _, tb := range query.LakeTables() {
		parts = append(parts, fmt.Sprintf("SELECT '%s' AS t, count(*) AS n FROM %s", tb.Name, tb.Name))
	}
	code, stdout, stderr := runCLI(t, "", "--db", db, "sql", "--format", "csv", strings.Join(parts, " UNION ALL "))
	if code != 0 {
		t.Fatalf("sql: %s", stderr)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
		name, n, _ := strings.Cut(line, ",")
		var v int64
		fmt.Sscan(n, &v)
		if v > 0 {
			out[name] = v
		}
	}
	return out
}

// parquetCounts reads every lake file with arrow-go's Parquet reader, not
// DuckDB's: each must be a whole Parquet file of its table's documented
// columns and the lake's version, and the rows of each table are summed.
func parquetCounts(t *testing.T, lake string) map[string]int64 {
	t.Helper()
	want := map[string][]string{}
	for _, tb := range query.LakeTables() {
		for _, c := range tb.Columns {
			if c.Name != "system" {
				want[tb.Name] = append(want[tb.Name], c.Name)
			}
		}
	}
	out := map[string]int64{}
	err := filepath.WalkDir(lake, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		rel, _ := filepath.Rel(lake, p)
		table := strings.Split(filepath.ToSlash(rel), "/")[0]
		if strings.HasPrefix(table, "_") {
			t.Errorf("%s: a Parquet file outside the tables", rel)
			return nil
		}
		r, err := file.OpenParquetFile(p, false)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		defer r.Close()
		md := r.MetaData()
		var cols []string
		for i := range md.Schema.NumColumns() {
			cols = append(cols, md.Schema.Column(i).Name())
		}
		if !reflect.DeepEqual(cols, want[table]) {
			t.Errorf("%s: columns %v, want %v", rel, cols, want[table])
		}
		if v := md.KeyValueMetadata().FindValue("orchstat_lake_version"); v == nil || *v != fmt.Sprint(query.LakeVersion) {
			t.Errorf("%s: orchstat_lake_version %v", rel, v)
		}
		if r.NumRows() > 0 {
			out[table] += r.NumRows()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// S3: two runners export to a real S3 implementation (gofakes3, in
// process, over HTTP), the lake's report equals the union store's, and a
// second report downloads nothing: its cache holds every file by ETag.
func TestLakeS3(t *testing.T) {
	endToEnd(t, "exports and reads lakes of real stores")
	t.Parallel()
	var gets, puts atomic.Int64
	h := gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(true)).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && strings.Count(strings.Trim(r.URL.Path, "/"), "/") > 0:
			gets.Add(1)
		case r.Method == http.MethodPut:
			puts.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	const secret = "s3cr3t-never-printed"
	env := map[string]string{"AWS_ENDPOINT_URL_S3": srv.URL, "AWS_ACCESS_KEY_ID": "AKIATEST", "AWS_SECRET_ACCESS_KEY": secret, "AWS_REGION": "eu-west-1"}
	d := defaultDeps()
	d.lake = lake.Options{CacheDir: t.TempDir(), Getenv: func(k string) string { return env[k] }}
	// The first reads are answered from the lake's files; the replica
	// is built when the test says.
	var builds atomic.Int64
	d.startReplica = func(loc, log string) error { builds.Add(1); return nil }
	run := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runCLIWith(t, fixedNow, d, "", args...)
		if code != 0 || strings.Contains(stdout+stderr, secret) {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		return stdout
	}
	a, b, union := ingestedLakeRunners(t)
	const loc = "s3://team-lake/orchstat"
	for _, r := range []*lakeRunner{a, b} {
		run("--db", r.db, "export", "--no-ingest", "--lake", loc, "--runner", r.name)
	}
	report := func(args ...string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(run(append([]string{"report", "--lake", loc, "--format", "json"}, args...)...)), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "generated_at")
		delete(m, "database")
		return m
	}
	// A window downloads only the partitions it needs; the whole report
	// then downloads the rest. The summary evaluates the rules at the
	// window's end and the previous window's, so the report reads what
	// their windows need too: rules over time windows only here, as a
	// rule over the last N runs needs the whole lake.
	timed := filepath.Join(t.TempDir(), "timed.yaml")
	os.WriteFile(timed, []byte("rules:\n  - name: retries\n    metric: provider_retry_rate\n    window: 24h\n    threshold: 0.2\n    condition: value > threshold\n"), 0o644)
	gets.Store(0)
	sameJSON(t, "s3 --since", lakeReportJSON(t, "--db", union, "report", "--no-ingest", "--rules", timed, "--since", "2026-11-12"), report("--rules", timed, "--since", "2026-11-12"))
	windowed := gets.Load()
	gets.Store(0)
	want := lakeReportJSON(t, "--db", union, "report", "--no-ingest")
	sameJSON(t, "s3", want, report())
	if rest := gets.Load(); windowed == 0 || rest == 0 {
		t.Errorf("the window's report downloaded %d files, the whole report %d more; want some of each", windowed, rest)
	}
	if builds.Load() == 0 {
		t.Errorf("no read started the replica's build")
	}
	if code, _, stderr := runCLIWith(t, fixedNow, d, "", "lake-replica", "--lake", loc); code != 0 {
		t.Fatalf("lake-replica: exit %d\n%s", code, stderr)
	}
	gets.Store(0)
	puts.Store(0)
	sameJSON(t, "s3, from the cache", want, report())
	if n := gets.Load(); n != 0 {
		t.Errorf("a second report downloaded %d files; want none", n)
	}
	if out := run("--db", a.db, "export", "--no-ingest", "--lake", loc, "--runner", a.name); !strings.HasPrefix(out, "nothing new") || puts.Load() != 0 {
		t.Errorf("a second export put %d objects: %s", puts.Load(), out)
	}
}

// An export killed at any point leaves a lake every reader can read, and
// the next export completes its work: no row lost, none twice. Between the
// kill and the next export a trace moves to another day once more, so
// only the partitions the killed export recorded as pending lead the next
// one to the copy it may have published.
func TestLakeExportKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes; go test ./... runs it (skipped under -short)")
	}
	t.Parallel()
	for _, point := range []string{"planned:1", "staged:1", "published-one:1", "published:1"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel() // a crash point is set on its own process only
			a, _ := newLakeRunners(t)
			writeLakeRun(t, a.runs, "a-solo", 25, 2)
			lake := filepath.Join(t.TempDir(), "lake")
			a.ingestInto(t, a.db)
			a.export(t, lake)

			// A new run, a grown trace, a trace rewritten to another day,
			// and the only run of a day gone.
			writeLakeRun(t, a.runs, "a-new", 20, 3)
			writeLakeRun(t, a.runs, "a005", 1, 2)
			moveRun(t, a.runs, "a004", 12)
			os.RemoveAll(filepath.Join(a.runs, "a-solo"))
			runCLI(t, "", "--db", a.db, "forget", filepath.Join(a.runs, "a-solo"))
			a.ingestInto(t, a.db)

			cmd := runOrchstat("--db", a.db, "export", "--no-ingest", "--lake", lake, "--runner", a.name)
			cmd.Env = append(cmd.Env, "ORCHSTAT_TEST_CRASH="+point)
			out, err := cmd.CombinedOutput()
			if cmd.ProcessState.ExitCode() != 128+int(syscall.SIGKILL) {
				t.Fatalf("export was not killed at %s: %v\n%s", point, err, out)
			}
			if code, _, stderr := runCLIWith(t, fixedNow, lakeDeps(t), "", "report", "--lake", lake); code != 0 {
				t.Fatalf("the lake cannot be read after the kill: %s", stderr)
			}

			moveRun(t, a.runs, "a004", 14)
			a.ingestInto(t, a.db)
			a.export(t, lake)
			sameJSON(t, point, lakeReportJSON(t, "--db", a.db, "report", "--no-ingest"), lakeReportJSON(t, "report", "--lake", lake))
			if got, want := parquetCounts(t, lake), storeCounts(t, a.db); !reflect.DeepEqual(got, want) {
				t.Errorf("rows per table in the lake %v, in the store %v", got, want)
			}
		})
	}
}

// moveRun rewrites a run's trace so that it starts on another day.
func moveRun(t *testing.T, runs, id string, day int) {
	t.Helper()
	if err := os.Remove(filepath.Join(runs, id, "trace.jsonl")); err != nil {
		t.Fatal(err)
	}
	writeLakeRun(t, runs, id, day, 2)
}

// check and simulate read the lake as they read the union store: the same
// alerts, the same replays. check keeps its alert state in the store, so
// a rule's for: count runs across checks of the lake.
func TestLakeCheckAndSimulate(t *testing.T) {
	endToEnd(t, "exports and reads lakes of real stores")
	t.Parallel()
	a, b, union := ingestedLakeRunners(t)
	dir := t.TempDir()
	lake, state := filepath.Join(dir, "lake"), filepath.Join(dir, "state.duckdb")
	for _, r := range []*lakeRunner{a, b} {
		r.export(t, lake)
	}
	rules := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rules, []byte(`rules:
  - name: retries
    metric: provider_retry_rate
    window: 60d
    threshold: 0.01
    condition: value > threshold
    for: 2
    severity: critical
`), 0o644)
	now := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	check := func(at time.Time, args ...string) (int, string) {
		code, stdout, stderr := runCLIWith(t, at, lakeDeps(t), "", append([]string{"check", "--rules", rules, "--format", "json"}, args...)...)
		if code == checkUnknown {
			t.Fatalf("check %v: %s%s", args, stdout, stderr)
		}
		return code, stdout
	}
	wantCode, want := check(now, "--db", union, "--no-ingest")
	gotCode, got := check(now, "--db", state, "--lake", lake)
	if gotCode != wantCode || alertStates(t, got) != alertStates(t, want) {
		t.Errorf("check of the lake: exit %d, %s; of the union store: exit %d, %s", gotCode, alertStates(t, got), wantCode, alertStates(t, want))
	}
	if code, out := check(now.Add(2*time.Hour), "--db", state, "--lake", lake); code != checkCritical || !strings.Contains(alertStates(t, out), "firing") {
		t.Errorf("the second check should fire from the state kept in --db: exit %d, %s", code, alertStates(t, out))
	}

	sim := func(args ...string) map[string]any {
		return lakeReportJSONCmd(t, append([]string{"simulate", "--max-retries", "1", "--seed", "7"}, args...)...)
	}
	sameJSON(t, "simulate", sim("--db", union, "--no-ingest"), sim("--lake", lake))
}

// alertStates lists a check's alerts as rule=state, from its JSON.
func alertStates(t *testing.T, out string) string {
	t.Helper()
	var v struct {
		Alerts []struct {
			Rule  string `json:"rule"`
			State string `json:"state"`
		} `json:"alerts"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var s []string
	for _, a := range v.Alerts {
		s = append(s, a.Rule+"="+a.State)
	}
	return strings.Join(s, " ")
}

// Two stores exporting as one runner would replace each other's files:
// the second is refused, naming the first, and the lake is unchanged.
func TestLakeRunnerClaimed(t *testing.T) {
	endToEnd(t, "exports and reads lakes of real stores")
	t.Parallel()
	a, b, _ := ingestedLakeRunners(t)
	lake := filepath.Join(t.TempDir(), "lake")
	b.name = a.name
	a.export(t, lake)
	before := lakeFiles(t, lake)
	code, _, stderr := runCLI(t, "", "--db", b.db, "export", "--no-ingest", "--lake", lake, "--runner", b.name)
	if code != 1 || !strings.Contains(stderr, `runner "runner-a" is already exported by another store (`+a.db) {
		t.Errorf("exit %d, %s", code, stderr)
	}
	if after := lakeFiles(t, lake); !reflect.DeepEqual(before, after) {
		t.Errorf("the refused export changed the lake")
	}
}

// A store that exported as one runner is refused a second runner id: the
// lake would hold its runs twice (46,225 events against 23,149 before,
// with provider_retry_rate over its threshold), which a renamed host
// (the default runner id is the host name) did silently.
func TestLakeOneRunnerPerStore(t *testing.T) {
	endToEnd(t, "exports and reads lakes of real stores")
	t.Parallel()
	a, _, _ := ingestedLakeRunners(t)
	lake := filepath.Join(t.TempDir(), "lake")
	a.export(t, lake)
	before := lakeFiles(t, lake)
	code, _, stderr := runCLI(t, "", "--db", a.db, "export", "--no-ingest", "--lake", lake, "--runner", "renamed-host")
	if code != 1 || !strings.Contains(stderr, `this store already exports to it as runner "`+a.name+`"`) ||
		!strings.Contains(stderr, "--runner "+a.name) {
		t.Errorf("exit %d, %s", code, stderr)
	}
	if after := lakeFiles(t, lake); !reflect.DeepEqual(before, after) {
		t.Errorf("the refused export changed the lake")
	}
	// --rename-runner moves the files: the lake then reads as the store,
	// once, under the new id.
	want := lakeReportJSON(t, "--db", a.db, "report", "--no-ingest")
	if code, _, stderr := runCLI(t, "", "--db", a.db, "export", "--no-ingest", "--lake", lake, "--runner", "renamed-host", "--rename-runner"); code != 0 {
		t.Fatalf("rename: exit %d, %s", code, stderr)
	}
	sameJSON(t, "after --rename-runner", want, lakeReportJSON(t, "report", "--lake", lake))
	if code, out, stderr := runCLI(t, "", "--db", a.db, "export", "--no-ingest", "--lake", lake, "--runner", "renamed-host"); code != 0 || !strings.Contains(out, "nothing new") {
		t.Errorf("export under the new id after the rename: exit %d, %s %s", code, out, stderr)
	}
}

// viewsAndReplica reports on the lake three ways and holds them equal to
// the union store's report with the same arguments: answered from the
// lake's files (a new cache folder each time, no replica built), from a
// replica lake-replica built, and from the store.
func viewsAndReplica(t *testing.T, lakeDir, union string, argSets [][]string) {
	t.Helper()
	viewDeps := func() deps {
		d := defaultDeps()
		d.lake.CacheDir = t.TempDir()
		d.startReplica = func(loc, log string) error { return nil }
		return d
	}
	withReplica := viewDeps()
	if code, _, stderr := runCLIWith(t, fixedNow, withReplica, "", "lake-replica", "--lake", lakeDir); code != 0 {
		t.Fatalf("lake-replica: exit %d\n%s", code, stderr)
	}
	replica, err := lake.ReplicaPath(withReplica.lake, lakeDir)
	if err != nil || query.ReplicaMissing(replica) {
		t.Fatalf("lake-replica left no replica at %s: %v", replica, err)
	}
	report := func(d deps, args ...string) map[string]any {
		t.Helper()
		code, stdout, stderr := runCLIWith(t, fixedNow, d, "", append(args, "--format", "json")...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(stdout), &m); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		delete(m, "generated_at")
		delete(m, "database")
		return m
	}
	for _, args := range argSets {
		// Sums of costs differ in their last bits with the order rows
		// are added in: see roundFloats.
		round := func(m map[string]any) map[string]any { return roundFloats(m).(map[string]any) }
		want := round(report(defaultDeps(), append([]string{"--db", union, "report", "--no-ingest"}, args...)...))
		lakeArgs := append([]string{"report", "--lake", lakeDir}, args...)
		sameJSON(t, fmt.Sprintf("from the lake's files, report %v", args), want, round(report(viewDeps(), lakeArgs...)))
		sameJSON(t, fmt.Sprintf("from the replica, report %v", args), want, round(report(withReplica, lakeArgs...)))
	}
}

// The lake's first read, answered from its Parquet files, equals the
// replica's and the union store's: whole, in windows, by provider and by
// day.
func TestLakeViewsEqualReplica(t *testing.T) {
	endToEnd(t, "exports and reads lakes of real stores")
	t.Parallel()
	a, b, union := ingestedLakeRunners(t)
	lakeDir := filepath.Join(t.TempDir(), "lake")
	for _, r := range []*lakeRunner{a, b} {
		r.export(t, lakeDir)
	}
	viewsAndReplica(t, lakeDir, union, [][]string{nil, {"--since", "2026-11-08"}, {"--since", "2026-11-03", "--until", "2026-11-06"},
		{"--provider", "openai"}, {"--by", "day"}})
}

// The real samples of ../shared/testdata-external, ingested by three
// runners and exported to one lake, read from the lake's files equal the
// replica and one store of them all.
func TestLakeRealSamples(t *testing.T) {
	endToEnd(t, "exports and reads lakes of real stores")
	const external = "../../../shared/testdata-external"
	if _, err := os.Stat(external); err != nil {
		t.Skip("../shared/testdata-external is absent")
	}
	t.Parallel()
	dir := t.TempDir()
	union := filepath.Join(dir, "union.duckdb")
	lakeDir := filepath.Join(dir, "lake")
	for i, paths := range [][]string{{"orchestrator", "claudestrator"}, {"llm-contract-harness", "claude-code"}, {"codex"}, {"otel-genai"}} {
		// The OpenTelemetry files are named by format; they go to the
		// third runner too.
		runner := min(i, 2)
		args := []string{"ingest", "--quiet"}
		if paths[0] == "otel-genai" {
			args = append(args, "--format", "otlp")
		}
		for _, p := range paths {
			args = append(args, abs(t, filepath.Join(external, p)))
		}
		for _, db := range []string{filepath.Join(dir, fmt.Sprintf("r%d.duckdb", runner)), union} {
			if code, _, stderr := runCLI(t, "", append([]string{"--db", db}, args...)...); code != 0 && code != 1 {
				t.Fatalf("%v: exit %d\n%s", args, code, stderr)
			}
		}
	}
	for i := range 3 {
		r := &lakeRunner{name: fmt.Sprintf("runner-%d", i), db: filepath.Join(dir, fmt.Sprintf("r%d.duckdb", i))}
		r.export(t, lakeDir)
	}
	viewsAndReplica(t, lakeDir, union, [][]string{nil, {"--since", "2026-01-01"}, {"--by", "day"}})
}

// The replica's builder killed (kill -9) while it builds leaves no
// replica in place: the next read answers from the lake's files, equal to
// the union store, and the next builder completes the replica, which
// then answers the same.
func TestLakeReplicaBuildKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes; go test ./... runs it (skipped under -short)")
	}
	t.Parallel()
	a, b, union := ingestedLakeRunners(t)
	lakeDir := filepath.Join(t.TempDir(), "lake")
	for _, r := range []*lakeRunner{a, b} {
		r.export(t, lakeDir)
	}
	xdg := t.TempDir()
	d := defaultDeps()
	d.lake.CacheDir = filepath.Join(xdg, "orchstat", "lake")
	d.startReplica = func(loc, log string) error { return nil }
	replica, err := lake.ReplicaPath(d.lake, lakeDir)
	if err != nil {
		t.Fatal(err)
	}
	build := func(kill bool) {
		t.Helper()
		cmd := exec.Command(binary, "lake-replica", "--lake", lakeDir)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+xdg, noSupervisor+"=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if kill {
			// Killed once its file is made: the build's transaction is
			// under way, or about to be.
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if _, err := os.Stat(replica + ".building"); err == nil {
					break
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
		}
		err := cmd.Wait()
		if !kill && err != nil {
			t.Fatalf("lake-replica: %v", err)
		}
	}
	want := lakeReportJSON(t, "--db", union, "report", "--no-ingest")
	report := func() map[string]any {
		t.Helper()
		code, stdout, stderr := runCLIWith(t, fixedNow, d, "", "report", "--lake", lakeDir, "--format", "json")
		if code != 0 {
			t.Fatalf("report --lake: exit %d\n%s", code, stderr)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(stdout), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "generated_at")
		delete(m, "database")
		return m
	}
	build(true)
	if !query.ReplicaMissing(replica) {
		t.Fatalf("a builder killed mid-way left a replica at %s", replica)
	}
	sameJSON(t, "after a killed build, from the lake's files", want, report())
	build(false)
	if query.ReplicaMissing(replica) {
		t.Fatalf("the builder after the killed one left no replica at %s", replica)
	}
	sameJSON(t, "from the replica the next builder made", want, report())
}
