package query_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/episode"
	"github.com/orchstat/orchstat/model/failure"
	"github.com/orchstat/orchstat/model/reports"
	"github.com/orchstat/orchstat/query"
)

// testCall is one row of the calls table as a test writes it.
type testCall struct {
	system, run, provider, model string
	success                      bool
	attempts                     int // 0: unknown
	evidence                     string
	backoffMS                    float64 // 0: unknown
	failedTokens                 float64 // 0: unknown
}

// TestCallMetrics checks the calls section and metrics against sums the
// test makes itself over the rows it wrote, and that calls whose
// attempts are unknown are counted apart, never as single attempts.
func TestCallMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := query.Open(ctx, filepath.Join(t.TempDir(), "c.duckdb"), query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	calls := []testCall{
		{"claude-code", "s1", "anthropic", "claude-sonnet-4-5", true, 3, "transcript", 1500, 0},
		{"claude-code", "s1", "anthropic", "claude-sonnet-4-5", true, 1, "transcript", 0, 0},
		{"claude-code", "s1", "anthropic", "claude-sonnet-4-5", false, 4, "transcript", 3000, 0},
		{"otel", "t1", "openai", "gpt-4o", true, 2, "http_spans", 200, 40},
		{"otel", "t1", "openai", "gpt-4o", true, 0, "none", 0, 0},
		{"codex", "r1", "openai", "gpt-5-codex", true, 0, "none", 0, 0},
	}
	arrange(ctx, t, st, calls)

	r, err := st.Report(ctx, query.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	// The expected values, from the rows.
	var n, failed, known, attempts, retried, unknown float64
	var backoff, failedTokens float64
	for _, c := range calls {
		n++
		if !c.success {
			failed++
		}
		if c.attempts == 0 {
			unknown++
			continue
		}
		known++
		attempts += float64(c.attempts)
		if c.attempts > 1 {
			retried++
		}
		backoff += c.backoffMS
		failedTokens += c.failedTokens
	}
	m := r.Metrics
	checkMetric(t, m, "calls", n, 0, 0)
	checkMetric(t, m, "call_retry_rate", retried/known, retried, known)
	checkMetric(t, m, "call_failure_rate", failed/n, failed, n)
	checkMetric(t, m, "attempts_per_call", attempts/known, attempts, known)
	checkMetric(t, m, "call_retries_total", attempts-known, 0, 0)
	checkMetric(t, m, "calls_attempts_unknown", unknown, 0, 0)
	checkMetric(t, m, "call_backoff_seconds", backoff/1000, 0, 0)
	checkMetric(t, m, "failed_attempt_tokens", failedTokens, 0, 0)

	if len(r.Calls.BySystem) != 3 || len(r.Calls.ByModel) != 3 {
		t.Fatalf("calls section: %d systems, %d models; want 3 and 3", len(r.Calls.BySystem), len(r.Calls.ByModel))
	}
	codex := r.Calls.BySystem[1] // claude-code, codex, otel
	if codex.System != "codex" || codex.Calls != 1 || codex.WithAttempts != 0 || codex.Evidence != "none 1" {
		t.Errorf("codex row = %+v", codex)
	}
	if v := codex.Metrics["call_retry_rate"].Value; v != nil {
		t.Errorf("codex call_retry_rate = %v, want none: its attempts are unknown", *v)
	}
	otel := r.Calls.BySystem[2]
	if otel.Evidence != "http_spans 1, none 1" {
		t.Errorf("otel evidence = %q", otel.Evidence)
	}

	// A provider filter keeps that provider's calls.
	r, err = st.Report(ctx, query.Filter{Provider: "OpenAI"})
	if err != nil {
		t.Fatal(err)
	}
	checkMetric(t, r.Metrics, "calls", 3, 0, 0)

	// Rules split the metrics by provider and model.
	series, err := st.CallSeries(ctx, query.Filter{}, "call_retry_rate", []string{"provider", "model"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range series {
		got = append(got, s.Labels["provider"]+"/"+s.Labels["model"]+"="+metricText(s.Metric))
	}
	want := "anthropic/claude-sonnet-4-5=2/3 openai/gpt-4o=1/1 openai/gpt-5-codex=-"
	if strings.Join(got, " ") != want {
		t.Errorf("series = %s, want %s", strings.Join(got, " "), want)
	}
	if _, err := st.CallSeries(ctx, query.Filter{}, "calls", []string{"run"}); err == nil {
		t.Error("a split by an unknown label was accepted")
	}

	// Replay: one provider episode per call with known attempts.
	eps, err := st.Episodes(ctx, query.Filter{}, func(string) failure.Class { return failure.ClassServer })
	if err != nil {
		t.Fatal(err)
	}
	var replayed int
	for _, e := range eps {
		if e.Kind != episode.KindProvider {
			continue
		}
		replayed++
		if !strings.HasPrefix(e.ID, "claude-code:") && !strings.HasPrefix(e.ID, "otel:") {
			t.Errorf("episode %s of a call with unknown attempts", e.ID)
		}
		if e.Attempts[len(e.Attempts)-1].OK != e.Success {
			t.Errorf("episode %s: last attempt's OK is not the call's success", e.ID)
		}
	}
	if replayed != int(known) {
		t.Errorf("%d episodes, want %v (the calls whose attempts are known)", replayed, known)
	}
}

func arrange(ctx context.Context, t *testing.T, st *query.Store, calls []testCall) {
	t.Helper()
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	runs := map[string]bool{}
	for i, c := range calls {
		if !runs[c.system+c.run] {
			runs[c.system+c.run] = true
			if err := tx.Exec(ctx, `INSERT INTO record_runs (file_id, system, run_id, started_at, status) VALUES (1, ?, ?, ?, 'success')`,
				c.system, c.run, start); err != nil {
				t.Fatal(err)
			}
		}
		var attempts, backoff, failedTokens any
		if c.attempts > 0 {
			attempts = c.attempts
		}
		if c.backoffMS > 0 {
			backoff = c.backoffMS
		}
		if c.failedTokens > 0 {
			failedTokens = c.failedTokens
		}
		if err := tx.Exec(ctx, `INSERT INTO calls (file_id, system, run_id, call_id, line, ts, provider, model, success, attempts, evidence,
			backoff_ms, failed_input_tokens, error) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.system, c.run, "c"+string(rune('a'+i)), i+1, start.Add(time.Duration(i)*time.Minute), c.provider, c.model,
			c.success, attempts, c.evidence, backoff, failedTokens, map[bool]any{true: nil, false: "overloaded"}[c.success]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func checkMetric(t *testing.T, m reports.Metrics, name string, value, num, den float64) {
	t.Helper()
	got, ok := m[name]
	if !ok || got.Value == nil {
		t.Errorf("%s: no value, want %v", name, value)
		return
	}
	if diff := *got.Value - value; diff > 1e-9 || diff < -1e-9 {
		t.Errorf("%s = %v, want %v", name, *got.Value, value)
	}
	if den != 0 && (got.Numerator == nil || *got.Numerator != num || *got.Denominator != den) {
		t.Errorf("%s = %v/%v, want %v/%v", name, got.Numerator, got.Denominator, num, den)
	}
}

func metricText(m reports.Metric) string {
	if m.Value == nil {
		return "-"
	}
	return strconv.FormatFloat(*m.Numerator, 'f', -1, 64) + "/" + strconv.FormatFloat(*m.Denominator, 'f', -1, 64)
}

// TestCallCopiesCountOnce: a sub-agent's file that replays its parent's
// message holds the same call again; it counts once, in the parent's run.
func TestCallCopiesCountOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := query.Open(ctx, filepath.Join(t.TempDir(), "c.duckdb"), query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for _, r := range []struct {
		file int
		run  string
	}{{2, "s1/agent-a"}, {1, "s1"}} {
		if err := tx.Exec(ctx, `INSERT INTO record_runs (file_id, system, run_id, batch, started_at, status) VALUES (?, 'claude-code', ?, 's1', ?, 'success')`,
			r.file, r.run, at); err != nil {
			t.Fatal(err)
		}
		if err := tx.Exec(ctx, `INSERT INTO calls (file_id, system, run_id, session, call_id, line, ts, provider, model, success, attempts, evidence)
			VALUES (?, 'claude-code', ?, 's1', 'msg_01', 1, ?, 'anthropic', 'claude-sonnet-4-5', true, 2, 'transcript')`, r.file, r.run, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := st.Report(ctx, query.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	checkMetric(t, r.Metrics, "calls", 1, 0, 0)
	r, err = st.Report(ctx, query.Filter{Runs: []string{"s1/agent-a"}})
	if err != nil {
		t.Fatal(err)
	}
	checkMetric(t, r.Metrics, "calls", 0, 0, 0)
}
