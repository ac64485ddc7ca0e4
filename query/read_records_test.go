package query_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/orchstat/orchstat/query"
)

// TestRecordMetrics checks every record metric against counts made by
// hand over record runs and attempts written straight into the store:
// the record metrics' oracle, as reports/reference is the trace metrics'.
func TestRecordMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := query.Open(ctx, filepath.Join(t.TempDir(), "records.duckdb"), query.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	type attempt struct {
		passed                 any // nil: unknown outcome
		stage, class, err, sig string
	}
	type run struct {
		system, id, status string
		attempts           any // nil: the record gives no count
		tried              []attempt
	}
	fail := func(class, sig string) attempt { return attempt{false, class, class, "", sig} }
	runs := []run{
		{"factory", "r1", "success", 1, []attempt{{true, "", "", "", ""}}},
		// A precondition failure no retry can change: both retries after
		// it are wasted; the second repeats its signature, the third not.
		{"factory", "r2", "failure", 3, []attempt{fail("preflight", "A"), fail("verify_failed", "A"), fail("verify_failed", "B")}},
		// A retriable failure, repeated.
		{"factory", "r3", "failure", 2, []attempt{fail("verify_failed", "C"), fail("verify_failed", "C")}},
		// An acceptance command that does not parse is told by its text:
		// the retry after it is wasted though it passed.
		{"factory", "r4", "failure", 2, []attempt{
			{false, "acceptance_failed", "acceptance_failed", "Failed to parse acceptance command: No closing quotation", "D"},
			{true, "", "", "", ""}}},
		// No attempt count, and not finished.
		{"claudestrator", "r5", "cancelled", nil, nil},
		// An attempt of unknown outcome.
		{"claudestrator", "r6", "success", 2, []attempt{{nil, "", "", "", ""}, {true, "", "", "", ""}}},
	}
	tx, err := st.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	for i, r := range runs {
		if err := tx.Exec(ctx, `INSERT INTO record_runs (file_id, system, run_id, source, started_at, status, attempts)
			VALUES (1, ?, ?, 'summary', ?, ?, ?)`, r.system, r.id, start.Add(time.Duration(i)*time.Hour), r.status, r.attempts); err != nil {
			t.Fatal(err)
		}
		for n, a := range r.tried {
			if err := tx.Exec(ctx, `INSERT INTO record_attempts (file_id, system, run_id, source, attempt, passed, stage, class, error, signature)
				VALUES (1, ?, ?, 'summary', ?, ?, ?, ?, ?, ?)`, r.system, r.id, n+1, a.passed,
				orNull(a.stage), orNull(a.class), orNull(a.err), orNull(a.sig)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := st.Metrics(ctx, query.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	checkMetric(t, m, "record_runs", 6, 0, 0)
	// Attempt counts above 1: r2, r3, r4, r6, of the five that give one.
	checkMetric(t, m, "record_retry_rate", 4.0/5, 4, 5)
	// Failures r2, r3, r4 of the five that finished (not r5).
	checkMetric(t, m, "record_failure_rate", 3.0/5, 3, 5)
	// Failed attempts: 3 in r2, 2 in r3, 1 in r4; of the 9 whose outcome
	// is known (r6's first is not).
	checkMetric(t, m, "attempt_failure_rate", 6.0/9, 6, 9)
	// Retries: r2's 2, r3's 1, r4's 1, r6's 1; wasted: r2's two and r4's.
	checkMetric(t, m, "wasted_attempt_rate", 3.0/5, 3, 5)
	// Repeats: r2's second (A after A), r3's second (C after C).
	checkMetric(t, m, "signature_repeat_rate", 2.0/5, 2, 5)
}
