package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/query"
)

// Most of these tests feed the store with SQL, as ingest's recordRows
// would, so that they test the rule and the command and not a parser. The
// ones that ingest a pipeline-history.json say so: those that need
// ingest/orchestr8's parser are TestRecommendIngestsHistory and
// TestRecommendDefaultsToHistoryBesideConfig; TestRecommendCorruptHistory
// needs only that a file which is not JSON is quarantined whole.

// o8run is one orchestr8 pipeline run: status "success", "failure" or
// "paused"; stage is failedStage.
type o8run struct{ item, status, stage string }

// seedHistory writes runs into a store at db, a day apart and oldest
// first, as orchestr8_history records of one file.
func seedHistory(t *testing.T, db string, runs ...o8run) {
	t.Helper()
	ctx := context.Background()
	st, err := query.Open(ctx, db, query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	const file = 9000 // beyond what ingest gives the files it reads here
	if err := tx.Exec(ctx, `INSERT INTO file_states (seq, file_id, path, kind)
		SELECT 9000, 9000, '/seeded/.claude/pipeline-history.json', 'orchestr8_history'
		WHERE NOT EXISTS (SELECT 1 FROM file_states WHERE file_id = 9000)`); err != nil {
		t.Fatal(err)
	}
	// Later calls add newer runs.
	var before int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM record_runs WHERE file_id = 9000`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	for j, r := range runs {
		i := before + j
		at := start.Add(time.Duration(i) * 24 * time.Hour)
		id := fmt.Sprintf("%s@%d", r.item, i)
		if err := tx.Exec(ctx, `INSERT INTO record_runs (file_id, system, run_id, item, source, status, ended_stage, started_at)
			VALUES (?, 'orchestr8', ?, ?, 'history', ?, nullif(?, ''), ?)`, file, id, r.item, r.status, r.stage, at); err != nil {
			t.Fatal(err)
		}
		if r.status == "failure" {
			if err := tx.Exec(ctx, `INSERT INTO record_attempts (file_id, system, run_id, item, source, attempt, ts, passed, stage)
				VALUES (?, 'orchestr8', ?, ?, 'history', 1, ?, false, nullif(?, ''))`, file, id, r.item, at, r.stage); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// runs makes n runs of which those at the given indexes failed at stage.
func runsFailing(n int, stage string, failed ...int) []o8run {
	out := make([]o8run, n)
	for i := range out {
		out[i] = o8run{fmt.Sprintf("f%d", i), "success", ""}
	}
	for _, i := range failed {
		out[i] = o8run{fmt.Sprintf("f%d", i), "failure", stage}
	}
	return out
}

type recommendJSON struct {
	Store string `json:"store"`
	Scope *struct {
		Paths       []string `json:"paths"`
		RunsLeftOut int64    `json:"runs_left_out"`
	} `json:"scope"`
	Stage          string   `json:"stage"`
	Attempt        int      `json:"attempt"`
	AttemptFrom    string   `json:"attempt_from"`
	Item           string   `json:"item"`
	System         string   `json:"system"`
	FailureRate    float64  `json:"failure_rate"`
	Numerator      int      `json:"numerator"`
	Denominator    int      `json:"denominator"`
	Runs           int      `json:"runs"`
	Window         int      `json:"window"`
	Threshold      float64  `json:"threshold"`
	MaxRetries     int      `json:"max_retries"`
	Strategy       string   `json:"strategy"`
	ShouldRetry    bool     `json:"should_retry"`
	Reason         string   `json:"reason"`
	Config         string   `json:"config"`
	ConfigDefaults []string `json:"config_defaults"`
	Warnings       []string `json:"warnings"`
}

// recommendJSONOut runs recommend --format json and decodes it; every
// recommendation exits 0.
func recommendJSONOut(t *testing.T, args ...string) recommendJSON {
	t.Helper()
	code, out, stderr := runCLI(t, "", append([]string{"recommend", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	var r recommendJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	if r.Warnings == nil || r.ConfigDefaults == nil {
		t.Errorf("%v: warnings and config_defaults must be lists, even empty: %s", args, out)
	}
	return r
}

func TestRecommendNoHistory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, ".claude", "retry-config.json")
	db := filepath.Join(dir, "none.duckdb")
	code, out, stderr := runCLI(t, "", "--db", db, "recommend", "--stage", "cass", "--config", cfg)
	if code != 0 || !strings.HasPrefix(out, "Recommended strategy: retry\n") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "orchstat: warning: no history") {
		t.Errorf("stderr %q", stderr)
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("a store was made with nothing to put in it")
	}
	r := recommendJSONOut(t, "--db", db, "--stage", "cass", "--config", cfg)
	if r.Strategy != "retry" || !r.ShouldRetry || r.Runs != 0 || r.FailureRate != 0 || r.Attempt != 1 || r.AttemptFrom != "default" ||
		len(r.ConfigDefaults) != 4 || len(r.Warnings) != 1 {
		t.Errorf("%+v", r)
	}
	// An empty store is no history too: a first failure is a simple retry
	// (orchestr8's adaptive retry spec, "Alternative: First Failure").
	seedHistory(t, db)
	r = recommendJSONOut(t, "--db", db, "--no-ingest", "--stage", "cass", "--config", cfg)
	if r.Strategy != "retry" || r.Reason != "no recorded runs: a first failure gets a simple retry" || len(r.Warnings) != 0 {
		t.Errorf("%+v", r)
	}
}

func TestRecommendByFailureRateAndAttempt(t *testing.T) {
	endToEnd(t, "recommends from a real store")
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "retry-config.json") // missing: the defaults
	db := filepath.Join(dir, "s.duckdb")
	// 12 runs: the two oldest failed at cass but fall out of the window of
	// 10, in which cass failed 3 times and nigel twice.
	runs := runsFailing(12, "cass", 0, 1, 4, 7, 11)
	runs[5] = o8run{"f5", "failure", "nigel"}
	runs[9] = o8run{"f9", "failure", "nigel"}
	runs[6] = o8run{"f6", "paused", ""}
	seedHistory(t, db, runs...)
	base := []string{"--db", db, "--no-ingest", "--config", cfg}
	for _, tc := range []struct {
		stage, attempt string
		rate           float64
		num            int
		strategy       string
		reason         string
	}{
		// 3 of 10 > 20%: cass's strategies by attempt (retry.js
		// recommendStrategy; orchestr8's T-SR-3 and T-SR-4).
		{"cass", "1", 0.3, 3, "reduce-stories", "cass failed in 3 of the last 10 runs (30%), above the 20% threshold: strategy 1 of cass's reduce-stories -> simplify-prompt"},
		{"cass", "2", 0.3, 3, "simplify-prompt", "strategy 2 of cass's"},
		{"cass", "3", 0.3, 3, "simplify-prompt", "strategy 2 of cass's"}, // the last once attempts outrun the list
		// Past maxRetries (T-SR-5): abort, whatever the rate.
		{"cass", "4", 0.3, 3, "abort-recommended", "attempt 4 is past maxRetries 3: abort, or skip the stage"},
		{"alex", "4", 0, 0, "abort-recommended", "past maxRetries 3"},
		// 2 of 10 is the threshold, not above it: a simple retry.
		{"nigel", "1", 0.2, 2, "retry", "nigel failed in 2 of the last 10 runs (20%), not above the 20% threshold: simple retry"},
		// A configured stage that never failed. (One that neither the
		// records nor the configuration name is an error:
		// TestRecommendStageNames.)
		{"alex", "1", 0, 0, "retry", "no run among the last 10 failed at alex: simple retry (no recorded run ever failed at alex; stages that failed: cass, nigel)"},
	} {
		r := recommendJSONOut(t, append(base, "--stage", tc.stage, "--attempt", tc.attempt)...)
		if r.Strategy != tc.strategy || r.FailureRate != tc.rate || r.Numerator != tc.num || r.Denominator != 10 || r.Runs != 12 ||
			r.Window != 10 || r.Threshold != 0.2 || r.MaxRetries != 3 || r.AttemptFrom != "flag" || r.ShouldRetry != (tc.strategy != "abort-recommended") ||
			!strings.Contains(r.Reason, tc.reason) || len(r.Warnings) != 0 || r.System != "all" {
			t.Errorf("%s attempt %s: %+v\nwant %s, rate %v, reason %q", tc.stage, tc.attempt, r, tc.strategy, tc.rate, tc.reason)
		}
	}

	// Text: orchestr8's prompt first, the reason, the settings, then the
	// store the history came from.
	code, out, stderr := runCLI(t, "", append([]string{"recommend", "--stage", "cass", "--attempt", "2"}, base...)...)
	want := "Recommended strategy: simplify-prompt\n" +
		"  cass, attempt 2: cass failed in 3 of the last 10 runs (30%), above the 20% threshold: strategy 2 of cass's reduce-stories -> simplify-prompt\n" +
		"  window 10 runs (12 recorded), threshold 20%, maxRetries 3; " + cfg + " (defaults)\n" +
		"  Store: " + db + " — scope: the whole store (12 runs)\n"
	if code != 0 || out != want || stderr != "" {
		t.Errorf("exit %d\n%s\nwant\n%s\nstderr %q", code, out, want, stderr)
	}

	// The configuration file's values are the rule's. In a window of 5
	// (runs 7 to 11) cass failed twice and nigel once, both above a 10%
	// threshold; the file's strategies replace the defaults whole, as
	// orchestr8 reads them, so cass has none left, and maxRetries 5 lets
	// attempt 4 through.
	os.WriteFile(cfg, []byte(`{"maxRetries": 5, "windowSize": 5, "highFailureThreshold": 0.1, "strategies": {"nigel": ["add-context"]}}`), 0o644)
	r := recommendJSONOut(t, append(base, "--stage", "cass", "--attempt", "4")...)
	if r.Strategy != "retry" || r.Denominator != 5 || r.Numerator != 2 || r.MaxRetries != 5 || len(r.ConfigDefaults) != 0 ||
		r.Reason != "cass failed in 2 of the last 5 runs (40%), above the 10% threshold, but no strategy is configured for cass: simple retry" {
		t.Errorf("cass, window 5: %+v", r)
	}
	r = recommendJSONOut(t, append(base, "--stage", "nigel", "--attempt", "3")...)
	if r.Strategy != "add-context" || r.FailureRate != 0.2 || !strings.Contains(r.Reason, "strategy 1 of nigel's add-context") {
		t.Errorf("nigel, window 5: %+v", r)
	}
}

func TestRecommendItemAttempts(t *testing.T) {
	endToEnd(t, "recommends from a real store")
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.duckdb")
	cfg := filepath.Join(dir, "retry-config.json")
	seedHistory(t, db,
		o8run{"feat", "failure", "cass"},
		o8run{"other", "success", ""},
		o8run{"feat", "failure", "cass"},
		o8run{"feat", "failure", "nigel"},
	)
	base := []string{"--db", db, "--no-ingest", "--config", cfg, "--stage", "cass"}
	// feat failed at cass twice: this failure is attempt 3, the last of
	// cass's list (2 of 4 runs is above 20%).
	r := recommendJSONOut(t, append(base, "--item", "feat")...)
	if r.Attempt != 3 || r.AttemptFrom != "history" || r.Item != "feat" || r.Strategy != "simplify-prompt" {
		t.Errorf("%+v", r)
	}
	code, out, _ := runCLI(t, "", append([]string{"recommend"}, append(base, "--item", "feat")...)...)
	if code != 0 || !strings.Contains(out, "cass, attempt 3 (feat failed at cass 2 times before): ") {
		t.Errorf("text: %s", out)
	}
	// --attempt wins; an item never seen starts at 1.
	if r := recommendJSONOut(t, append(base, "--item", "feat", "--attempt", "1")...); r.Attempt != 1 || r.AttemptFrom != "flag" {
		t.Errorf("%+v", r)
	}
	if r := recommendJSONOut(t, append(base, "--item", "new")...); r.Attempt != 1 || r.AttemptFrom != "history" || r.Strategy != "reduce-stories" {
		t.Errorf("%+v", r)
	}
	// A fourth failure at cass is past maxRetries.
	seedHistory(t, db, o8run{"feat", "failure", "cass"}, o8run{"feat", "failure", "cass"})
	if r := recommendJSONOut(t, append(base, "--item", "feat")...); r.Attempt != 5 || r.Strategy != "abort-recommended" || r.ShouldRetry {
		t.Errorf("%+v", r)
	}
}

func TestRecommendCorruptConfig(t *testing.T) {
	endToEnd(t, "recommends from a real store")
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.duckdb")
	seedHistory(t, db, runsFailing(10, "cass", 2, 5, 8)...)
	cfg := filepath.Join(dir, ".claude", "retry-config.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	// orchestr8's T-RC-6: not JSON at all, so the defaults, whole.
	os.WriteFile(cfg, []byte("{\n  \"maxRetries\": 5,\n  not valid json{{{"), 0o644)
	code, out, stderr := runCLI(t, "", "--db", db, "recommend", "--no-ingest", "--stage", "cass", "--config", cfg)
	if code != 0 || !strings.HasPrefix(out, "Recommended strategy: reduce-stories\n") || !strings.Contains(out, "maxRetries 3;") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if want := "orchstat: warning: retry configuration " + cfg + ":3: is not valid JSON"; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	r := recommendJSONOut(t, "--db", db, "--no-ingest", "--stage", "cass", "--attempt", "4", "--config", cfg)
	if r.Strategy != "abort-recommended" || r.MaxRetries != 3 || len(r.ConfigDefaults) != 4 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], cfg+":3:") {
		t.Errorf("%+v", r)
	}
	// Valid JSON with a bad value costs that value only: maxRetries 5 lets
	// attempt 4 have cass's last strategy.
	os.WriteFile(cfg, []byte("{\n  \"maxRetries\": 5,\n  \"windowSize\": \"ten\"\n}"), 0o644)
	r = recommendJSONOut(t, "--db", db, "--no-ingest", "--stage", "cass", "--attempt", "4", "--config", cfg)
	if r.Strategy != "simplify-prompt" || r.MaxRetries != 5 || r.Window != 10 ||
		strings.Join(r.ConfigDefaults, ",") != "windowSize,highFailureThreshold,strategies" ||
		len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], cfg+":3: windowSize: must be a whole number from 1 up, got \"ten\"; using the default 10") {
		t.Errorf("%+v", r)
	}
}

// TestRecommendCorruptHistory ingests a project whose history is not JSON
// (orchestr8's T-SH-2): the file is quarantined whole, and recommend says
// so and answers from the rest of the store. This needs only that ingest
// quarantines such a file, which it does with or without the parser.
func TestRecommendCorruptHistory(t *testing.T) {
	endToEnd(t, "recommends from a real store")
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.duckdb")
	proj := filepath.Join(dir, "proj")
	hist := filepath.Join(proj, ".claude", "pipeline-history.json")
	os.MkdirAll(filepath.Dir(hist), 0o755)
	os.WriteFile(hist, []byte("corrupted{{{"), 0o644)
	cfg := filepath.Join(proj, ".claude", "retry-config.json")

	code, out, stderr := runCLI(t, "", "--db", db, "recommend", "--stage", "cass", "--config", cfg, proj)
	if code != 0 || !strings.HasPrefix(out, "Recommended strategy: retry\n") {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	abs, _ := filepath.EvalSymlinks(hist)
	want := "orchstat: warning: history file " + abs + " is corrupt (line 1"
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "; recommending from the rest") {
		t.Errorf("stderr %q, want %q", stderr, want)
	}

	// With other runs in the store, --all recommends from them (proj
	// alone covers only proj's runs).
	seedHistory(t, db, runsFailing(5, "cass", 1, 3)...)
	r := recommendJSONOut(t, "--db", db, "--stage", "cass", "--config", cfg, "--all", proj)
	if r.Strategy != "reduce-stories" || r.FailureRate != 0.4 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "history file "+abs+" is corrupt") {
		t.Errorf("%+v", r)
	}
}

// orchestr8History is a pipeline-history.json as orchestr8's history.js
// writes it: orchestr8's T-SR-1 (cass failed twice in five runs).
const orchestr8History = `[
  {"slug": "a", "status": "success", "startedAt": "2026-02-01T10:00:00.000Z", "completedAt": "2026-02-01T10:10:00.000Z", "totalDurationMs": 600000},
  {"slug": "b", "status": "failed", "failedStage": "cass", "startedAt": "2026-02-02T10:00:00.000Z", "completedAt": "2026-02-02T10:05:00.000Z", "totalDurationMs": 300000},
  {"slug": "c", "status": "success", "startedAt": "2026-02-03T10:00:00.000Z", "completedAt": "2026-02-03T10:10:00.000Z", "totalDurationMs": 600000},
  {"slug": "b", "status": "failed", "failedStage": "cass", "startedAt": "2026-02-04T10:00:00.000Z", "completedAt": "2026-02-04T10:05:00.000Z", "totalDurationMs": 300000},
  {"slug": "d", "status": "success", "startedAt": "2026-02-05T10:00:00.000Z", "completedAt": "2026-02-05T10:10:00.000Z", "totalDurationMs": 600000}
]
`

// TestRecommendIngestsHistory needs ingest/orchestr8's parser.
func TestRecommendIngestsHistory(t *testing.T) {
	endToEnd(t, "recommends from a real store")
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.duckdb")
	proj := filepath.Join(dir, "proj")
	os.MkdirAll(filepath.Join(proj, ".claude"), 0o755)
	os.WriteFile(filepath.Join(proj, ".claude", "pipeline-history.json"), []byte(orchestr8History), 0o644)
	cfg := filepath.Join(proj, ".claude", "retry-config.json")
	os.WriteFile(cfg, []byte(`{"maxRetries": 3, "windowSize": 10, "highFailureThreshold": 0.2, "strategies": {"cass": ["reduce-stories", "simplify-prompt"]}}`), 0o644)

	r := recommendJSONOut(t, "--db", db, "--stage", "cass", "--item", "b", "--system", "orchestr8", "--config", cfg, proj)
	if r.FailureRate != 0.4 || r.Runs != 5 || r.Attempt != 3 || r.AttemptFrom != "history" || r.Strategy != "simplify-prompt" ||
		r.System != "orchestr8" || len(r.Warnings) != 0 || len(r.ConfigDefaults) != 0 {
		t.Errorf("%+v", r)
	}
	// The configuration file is ingested too, and is no history problem.
	if r := recommendJSONOut(t, "--db", db, "--stage", "cass", "--config", cfg, proj); r.Runs != 5 || len(r.Warnings) != 0 {
		t.Errorf("again: %+v", r)
	}
}

// TestRecommendDefaultsToHistoryBesideConfig: with no PATH, the history
// beside the configuration is ingested. Needs ingest/orchestr8's parser.
func TestRecommendDefaultsToHistoryBesideConfig(t *testing.T) {
	endToEnd(t, "recommends from a real store")
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.duckdb")
	cfg := filepath.Join(dir, "proj", ".claude", "retry-config.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(filepath.Join(filepath.Dir(cfg), "pipeline-history.json"), []byte(orchestr8History), 0o644)
	r := recommendJSONOut(t, "--db", db, "--stage", "cass", "--config", cfg)
	if r.Runs != 5 || r.Strategy != "reduce-stories" || len(r.Warnings) != 0 {
		t.Errorf("%+v", r)
	}
}

func TestRecommendUsage(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "s.duckdb")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"recommend"}, "--stage is required"},
		{[]string{"recommend", "--stage", "cass", "--attempt", "0"}, "--attempt must be 1 or more"},
		{[]string{"recommend", "--stage", "cass", "--system", "jenkins"}, `--system "jenkins": one of factory, claudestrator, orchestr8, exec`},
		{[]string{"recommend", "--stage", "cass", "--format", "yaml"}, `--format "yaml": text or json`},
		{[]string{"recommend", "--stage", "cass", "--input-format", "xml", "."}, `unknown records format "xml"`},
	} {
		code, _, stderr := runCLI(t, "", append([]string{"--db", db}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "", "--db", db, "recommend", "--stage", "cass", filepath.Join(t.TempDir(), "nowhere")); code != exitError || !strings.Contains(stderr, "nowhere is no such file or directory") {
		t.Errorf("a missing PATH: exit %d %q", code, stderr)
	}
}

// TestRecommendStageNames: --stage takes the stage as the report names it
// ("verify", which the factory's failure briefs call "verify_failed"), and
// a stage nothing names is a usage error with a suggestion and the known
// stages. Before, `--stage verfy` answered "retry" with exit 0, and
// `--stage verify` saw none of the runs that failed at verify_failed.
func TestRecommendStageNames(t *testing.T) {
	endToEnd(t, "recommends from a real store")
	t.Parallel()
	audit, err := filepath.Abs("../../testdata/factory/audit")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "s.duckdb")
	cfg := filepath.Join(dir, "none", "retry-config.json")
	if code, _, stderr := runCLI(t, "", "--db", db, "ingest", "-q", audit); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, stderr)
	}
	// The audit's ten runs: one ended at verify_failed.
	r := recommendJSONOut(t, "--db", db, "--no-ingest", "--config", cfg, "--stage", "verify")
	if r.Stage != "verify" || r.Numerator != 1 || r.Denominator != 10 || r.FailureRate != 0.1 {
		t.Errorf("verify: %+v", r)
	}
	for _, tc := range []struct{ stage, hint string }{
		{"verfy", `did you mean "verify"?`},
		{"verify_failed", `did you mean "verify"? (the report's name for it)`},
		{"nothing-like-it", ""},
	} {
		code, out, stderr := runCLI(t, "", "--db", db, "recommend", "--no-ingest", "--config", cfg, "--stage", tc.stage)
		if code != exitUsage || out != "" || !strings.Contains(stderr, tc.hint) ||
			!strings.Contains(stderr, "stages in the records: acceptance, apply, exception, llm_output_invalid, preflight, verify, write") ||
			!strings.Contains(stderr, "stages in the retry configuration: alex, cass, codey-implement, codey-plan, nigel") {
			t.Errorf("--stage %s: exit %d, stdout %q, stderr %q", tc.stage, code, out, stderr)
		}
	}
	// A configured stage the records do not name is still a question.
	if r := recommendJSONOut(t, "--db", db, "--no-ingest", "--config", cfg, "--stage", "nigel"); r.Strategy != "retry" || r.Numerator != 0 {
		t.Errorf("nigel: %+v", r)
	}
}
