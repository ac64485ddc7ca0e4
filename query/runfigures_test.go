package query

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// A store an older orchstat made has events and no figures: opened for
// writing it gets every run's figures once, from the events; read as it
// is, a report computes them from the events instead.
func TestOlderStoreGetsFigures(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.duckdb")
	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO run_spans VALUES (1, 'r1', '2026-01-01 10:00:00', '2026-01-01 10:05:00', 4), (2, 'r2', '2026-01-02 10:00:00', '2026-01-02 10:01:00', 2)`,
		`INSERT INTO provider_request_finishes (file_id, line, run_id, ts, provider, success, retries) VALUES
			(1, 1, 'r1', '2026-01-01 10:01:00', 'anthropic', true, 2), (1, 2, 'r1', '2026-01-01 10:02:00', 'openai', false, 0),
			(2, 1, 'r2', '2026-01-02 10:00:30', 'anthropic', true, 0)`,
		`INSERT INTO l2_events (file_id, line, run_id, ts, type, iteration) VALUES (1, 3, 'r1', '2026-01-01 10:03:00', 'RepairAttempted', 3)`,
		`INSERT INTO run_events (file_id, line, run_id, ts, type, status) VALUES (2, 2, 'r2', '2026-01-02 10:01:00', 'RunFinished', 'failure')`,
		// What an older orchstat's store lacks.
		`DROP TABLE run_figures`, `DROP TABLE run_provider_figures`,
		`DELETE FROM meta WHERE key = 'run_figures'`,
		`UPDATE meta SET value = 'old' WHERE key = 'schema_hash'`,
	} {
		if _, err := st.conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st.Close()

	st, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !st.figures {
		t.Fatal("the upgraded store does not say it keeps figures")
	}
	var runs, requests, failed int64
	var retries, repair float64
	if err := st.conn.QueryRowContext(ctx, `SELECT count(*), sum(requests), sum(requests_failed), sum(request_retries),
		max(repair_max_iteration) FROM run_figures`).Scan(&runs, &requests, &failed, &retries, &repair); err != nil {
		t.Fatal(err)
	}
	if runs != 2 || requests != 3 || failed != 1 || retries != 2 || repair != 3 {
		t.Errorf("figures: %d runs, %d requests, %d failed, %g retries, repair %g; want 2, 3, 1, 2, 3", runs, requests, failed, retries, repair)
	}
	if drift, err := st.FiguresDrift(ctx); err != nil || drift != 0 {
		t.Errorf("figures drift from the events in %d rows (%v)", drift, err)
	}
	for _, f := range []Filter{{}, {Provider: "OpenAI"}} {
		kept, err := st.Metrics(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		st.figures = false
		fromEvents, err := st.Metrics(ctx, f)
		st.figures = true
		if err != nil {
			t.Fatal(err)
		}
		for name, m := range kept {
			if g, w := fromEvents[name], m; show(g.Value) != show(w.Value) || show(g.Denominator) != show(w.Denominator) {
				t.Errorf("%+v: %s from the events %s/%s, from the figures %s/%s", f, name, show(g.Value), show(g.Denominator), show(w.Value), show(w.Denominator))
			}
		}
		if f.Provider != "" && *kept["provider_requests"].Value != 1 {
			t.Errorf("--provider openai counts %v requests, want openai's 1", *kept["provider_requests"].Value)
		}
	}
}

func show(v *float64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}
