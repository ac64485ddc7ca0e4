package query_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/orchstat/orchstat/ingest"
	"github.com/orchstat/orchstat/query"
)

// A report computed in parts at once is the report computed one query
// after another, and leaves DuckDB's thread count as it found it.
func TestReportConcurrentlyIsReport(t *testing.T) {
	ctx := context.Background()
	st := openIngested(t, "../testdata/runs")
	if _, err := ingest.Run(ctx, st, ingest.Options{Paths: []string{"../testdata/factory", "../testdata/orchestr8"}}); err != nil {
		t.Fatal(err)
	}
	threads := func() string {
		var n string
		if err := st.Conn.QueryRowContext(ctx, `SELECT current_setting('threads')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := threads()
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range []query.Filter{{}, {Provider: "anthropic"}, {Since: &since}, {Runs: []string{"nope"}}} {
		want, err := query.Report(ctx, st.Conn, f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := st.ReportConcurrently(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		if string(g) != string(w) {
			t.Errorf("filter %+v: concurrently\n%s\nwant\n%s", f, g, w)
		}
		if f.Provider == "" && f.Runs == nil && (len(want.Systems.BySystem) < 2 || want.FactoryAudit == nil) {
			t.Errorf("filter %+v: %d record systems and no factory audit; the test data should hold them", f, len(want.Systems.BySystem))
		}
	}
	if got := threads(); got != before {
		t.Errorf("threads = %s after the report, was %s", got, before)
	}
}

// An error in one part is the report's error.
func TestReportConcurrentlyFails(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	st := openIngested(t, "../testdata/runs")
	cancel()
	if _, err := st.ReportConcurrently(ctx, query.Filter{}); err == nil {
		t.Fatal("a cancelled report succeeded")
	}
}
