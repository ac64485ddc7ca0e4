package query_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/rules/retry"
)

// The record parsers are written separately, so these tests put rows in
// the record tables the way ingest's recordRows does, and the files and
// quarantine rows the way readRunFile does.

func openEmpty(t *testing.T) *query.Store {
	t.Helper()
	st, err := query.Open(context.Background(), filepath.Join(t.TempDir(), "s.duckdb"), query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func sqlExec(t *testing.T, st *query.Store, q string, args ...any) {
	t.Helper()
	if _, err := query.ConnOf(st).ExecContext(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func oc(stage string, failed bool) episode.StageOutcome {
	return episode.StageOutcome{Stage: stage, Failed: failed}
}

// addFile records a source file as ingest's file_states does.
func addFile(t *testing.T, st *query.Store, id int, path, kind string) {
	sqlExec(t, st, `INSERT INTO file_states (seq, file_id, path, kind) VALUES (?, ?, ?, ?)`, id, id, path, kind)
}

// addRun adds a record run; started and finished are timestamps or nil.
func addRun(t *testing.T, st *query.Store, file int, system, run, item, source, status, stage string, started, finished any) {
	sqlExec(t, st, `INSERT INTO record_runs (file_id, system, run_id, item, source, status, ended_stage, started_at, finished_at)
		VALUES (?, ?, ?, ?, ?, ?, nullif(?, ''), ?::TIMESTAMP, ?::TIMESTAMP)`, file, system, run, item, source, status, stage, started, finished)
}

func TestStageHistoryOrderAndOutcomes(t *testing.T) {
	ctx := context.Background()
	st := openEmpty(t)
	addFile(t, st, 1, "/p/.claude/pipeline-history.json", "orchestr8_history")
	// Inserted out of order: the history is ordered by time.
	addRun(t, st, 1, "orchestr8", "e3", "feat-b", "history", "success", "", "2026-02-03T00:00:00Z", nil)
	addRun(t, st, 1, "orchestr8", "e1", "feat-a", "history", "failure", "cass", "2026-02-01T00:00:00Z", nil)
	addRun(t, st, 1, "orchestr8", "e5", "feat-c", "history", "paused", "", "2026-02-05T00:00:00Z", nil)
	addRun(t, st, 1, "orchestr8", "e2", "feat-a", "history", "success", "", "2026-02-02T00:00:00Z", nil)
	addRun(t, st, 1, "orchestr8", "e4", "feat-b", "history", "failure", "cass", "2026-02-04T00:00:00Z", nil)
	// No start: its completedAt places it.
	addRun(t, st, 1, "orchestr8", "e0", "feat-z", "history", "failure", "nigel", nil, "2026-01-31T00:00:00Z")

	got, warns, err := st.StageHistory(ctx, "orchestr8", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []episode.StageOutcome{oc("nigel", true), oc("cass", true), oc("", false), oc("", false), oc("cass", true), oc("", false)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("history %v, want %v", got, want)
	}
	if len(warns) != 0 {
		t.Errorf("warnings %q", warns)
	}
	// Through the core, as `orchstat recommend` uses it: orchestr8's
	// T-SR-1 shape, 2 cass failures among the last 5 runs.
	a := retry.Adaptive{Window: 5, Threshold: 0.2, MaxRetries: 3, Strategies: map[string][]string{"cass": {"reduce-stories", "simplify-prompt"}}}
	if r := a.FailureRate("cass", got); r != 0.4 {
		t.Errorf("failure rate %v, want 0.4", r)
	}
	if s := a.Recommend("cass", 2, got); s != "simplify-prompt" {
		t.Errorf("recommend %q", s)
	}

	// A single run counted twice (two copies of a file) counts once.
	addFile(t, st, 2, "/p/copy/pipeline-history.json", "orchestr8_history")
	addRun(t, st, 2, "orchestr8", "e4", "feat-b", "history", "failure", "cass", "2026-02-04T00:00:00Z", nil)
	if got, _, _ := st.StageHistory(ctx, "orchestr8", nil); len(got) != 6 {
		t.Errorf("a copied run counted again: %v", got)
	}
}

func TestStageHistoryOrderFallbacks(t *testing.T) {
	ctx := context.Background()
	st := openEmpty(t)
	addFile(t, st, 1, "/r/run_summary.json", "factory_summary")
	addRun(t, st, 1, "factory", "late", "wo-1", "run_summary", "failure", "verify", "2026-03-03T00:00:00Z", nil)
	// No run times: the first attempt's time places it.
	addRun(t, st, 1, "factory", "by-attempt", "wo-2", "run_summary", "failure", "acceptance", nil, nil)
	sqlExec(t, st, `INSERT INTO record_attempts (file_id, system, run_id, item, source, attempt, ts, passed, stage) VALUES
		(1, 'factory', 'by-attempt', 'wo-2', 'run_summary', 2, '2026-03-02T00:00:00Z', false, 'acceptance'),
		(1, 'factory', 'by-attempt', 'wo-2', 'run_summary', 1, '2026-03-01T00:00:00Z', false, 'acceptance')`)
	// No time at all: first, so it is the first to leave the window.
	addRun(t, st, 1, "factory", "timeless", "wo-3", "run_summary", "success", "", nil, nil)
	got, _, err := st.StageHistory(ctx, "factory", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []episode.StageOutcome{oc("", false), oc("acceptance", true), oc("verify", true)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("history %v, want %v", got, want)
	}
}

func TestStageHistorySystems(t *testing.T) {
	ctx := context.Background()
	st := openEmpty(t)
	addFile(t, st, 1, "/p/.claude/pipeline-history.json", "orchestr8_history")
	addFile(t, st, 2, "/r/run_summary.json", "factory_summary")
	addRun(t, st, 1, "orchestr8", "e1", "f", "history", "failure", "cass", "2026-02-01T00:00:00Z", nil)
	addRun(t, st, 2, "factory", "w1", "wo", "run_summary", "success", "", "2026-02-02T00:00:00Z", nil)
	sqlExec(t, st, `INSERT INTO record_stages (file_id, system, run_id, item, source, attempt, seq, stage, passed)
		VALUES (2, 'factory', 'w1', 'wo', 'run_summary', 1, 1, 'verify', true)`)
	// exec's runs have no stages: they stay out of "every system".
	sqlExec(t, st, `INSERT INTO record_runs (file_id, system, run_id, status, started_at) VALUES (3, 'exec', 'x1', 'failure', '2026-02-03T00:00:00Z')`)

	for _, tc := range []struct {
		system string
		want   []episode.StageOutcome
		mixed  bool
	}{
		{"orchestr8", []episode.StageOutcome{oc("cass", true)}, false},
		{"factory", []episode.StageOutcome{oc("", false)}, false},
		{"exec", []episode.StageOutcome{oc("", true)}, false},
		{"claudestrator", nil, false},
		{"", []episode.StageOutcome{oc("cass", true), oc("", false)}, true},
	} {
		got, warns, err := st.StageHistory(ctx, tc.system, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.system, got, tc.want)
		}
		mixed := len(warns) == 1 && warns[0] == "the history mixes the runs of factory (1), orchestr8 (1) in one window, oldest first; name one system to keep them apart"
		if mixed != tc.mixed || !tc.mixed && len(warns) > 0 {
			t.Errorf("%q: warnings %q", tc.system, warns)
		}
	}
}

func TestStageHistoryQuarantinedFiles(t *testing.T) {
	ctx := context.Background()
	st := openEmpty(t)
	// Quarantined whole, as readRunFile does with a parser's *records.Error.
	addFile(t, st, 1, "/p/.claude/pipeline-history.json", "orchestr8_history")
	sqlExec(t, st, `INSERT INTO quarantine (file_id, path, line, byte_offset, field, reason, raw, raw_bytes)
		VALUES (1, '/p/.claude/pipeline-history.json', 3, 40, '[1].status', 'line 3: [1].status: not a string', '...', 100)`)
	// Read in part: two records skipped, the rest kept.
	addFile(t, st, 2, "/q/.claude/pipeline-history.json", "orchestr8_history")
	addRun(t, st, 2, "orchestr8", "e1", "f", "history", "failure", "cass", "2026-02-01T00:00:00Z", nil)
	sqlExec(t, st, `INSERT INTO quarantine (file_id, path, line, byte_offset, field, reason) VALUES
		(2, '/q/.claude/pipeline-history.json', 9, 90, '[3].failedStage', 'not a string'),
		(2, '/q/.claude/pipeline-history.json', 5, 50, '[2].completedAt', 'not a date')`)
	// Not history: the config (recommend reads it itself), a trace line.
	addFile(t, st, 3, "/p/.claude/retry-config.json", "orchestr8_config")
	sqlExec(t, st, `INSERT INTO quarantine (file_id, path, line, reason) VALUES (3, '/p/.claude/retry-config.json', 0, 'orchestr8 records are not read yet')`)
	addFile(t, st, 4, "/r/runs/1/trace.jsonl", "trace")
	sqlExec(t, st, `INSERT INTO quarantine (file_id, path, line, reason) VALUES (4, '/r/runs/1/trace.jsonl', 7, 'bad JSON')`)
	// Another system's file, whole, with neither line nor field.
	addFile(t, st, 5, "/w/run_summary.json", "factory_summary")
	sqlExec(t, st, `INSERT INTO quarantine (file_id, path, line, reason) VALUES (5, '/w/run_summary.json', 0, 'factory records are not read yet')`)

	want := []string{
		"history file /p/.claude/pipeline-history.json is corrupt (line 3, field [1].status): not a string; recommending from the rest",
		"history file /q/.claude/pipeline-history.json: 2 records were skipped (the first at line 5, field [2].completedAt: not a date); recommending from the rest",
	}
	got, warns, err := st.StageHistory(ctx, "orchestr8", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(warns, want) {
		t.Errorf("history %v, warnings\n%s\nwant\n%s", got, strings.Join(warns, "\n"), strings.Join(want, "\n"))
	}
	_, warns, _ = st.StageHistory(ctx, "", nil)
	wantAll := append([]string{}, want...)
	wantAll = append(wantAll, "record file /w/run_summary.json is corrupt: factory records are not read yet; recommending from the rest")
	if !reflect.DeepEqual(warns, wantAll) {
		t.Errorf("every system: warnings\n%s", strings.Join(warns, "\n"))
	}
	if _, warns, _ := st.StageHistory(ctx, "claudestrator", nil); len(warns) != 0 {
		t.Errorf("claudestrator: %q", warns)
	}
}

func TestStageAttempts(t *testing.T) {
	ctx := context.Background()
	st := openEmpty(t)
	addFile(t, st, 1, "/p/.claude/pipeline-history.json", "orchestr8_history")
	// Runs without attempts count once each where they failed.
	addRun(t, st, 1, "orchestr8", "e1", "feat", "history", "failure", "cass", "2026-02-01T00:00:00Z", nil)
	addRun(t, st, 1, "orchestr8", "e2", "feat", "history", "failure", "cass", "2026-02-02T00:00:00Z", nil)
	addRun(t, st, 1, "orchestr8", "e3", "feat", "history", "failure", "nigel", "2026-02-03T00:00:00Z", nil)
	addRun(t, st, 1, "orchestr8", "e4", "other", "history", "failure", "cass", "2026-02-04T00:00:00Z", nil)
	addRun(t, st, 1, "orchestr8", "e5", "feat", "history", "success", "", "2026-02-05T00:00:00Z", nil)
	// A run with attempts counts its failed attempts at the stage.
	addFile(t, st, 2, "/r/run_summary.json", "factory_summary")
	addRun(t, st, 2, "factory", "w1", "feat", "run_summary", "failure", "cass", "2026-02-06T00:00:00Z", nil)
	sqlExec(t, st, `INSERT INTO record_attempts (file_id, system, run_id, item, source, attempt, passed, stage) VALUES
		(2, 'factory', 'w1', 'feat', 'run_summary', 1, false, 'cass'),
		(2, 'factory', 'w1', 'feat', 'run_summary', 2, false, 'verify'),
		(2, 'factory', 'w1', 'feat', 'run_summary', 3, NULL, 'cass'),
		(2, 'factory', 'w1', 'feat', 'run_summary', 4, true, NULL)`)
	for _, tc := range []struct {
		system, item, stage string
		want                int
	}{
		{"orchestr8", "feat", "cass", 2},
		{"orchestr8", "feat", "nigel", 1},
		{"orchestr8", "feat", "alex", 0},
		{"orchestr8", "nobody", "cass", 0},
		{"factory", "feat", "cass", 2},
		{"", "feat", "cass", 4},
	} {
		n, err := st.StageAttempts(ctx, tc.system, tc.item, tc.stage)
		if err != nil {
			t.Fatal(err)
		}
		if n != tc.want {
			t.Errorf("%q %q %q: %d, want %d", tc.system, tc.item, tc.stage, n, tc.want)
		}
	}
}
