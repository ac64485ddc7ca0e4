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
// after another, and leaves DuckDB's thread count as it found it. Both run
// on one DuckDB thread: with more, sums of non-integers (record stages'
// costs) can differ in their last digit from one run to the next.
func TestReportConcurrentlyIsReport(t *testing.T) {
	skipShort(t, "end-to-end: reports from many processes at once against one store")
	ctx := context.Background()
	st := openIngested(t, "../testdata/runs")
	if _, err := ingest.Run(ctx, st, ingest.Options{Paths: []string{"../testdata/factory", "../testdata/orchestr8"}}); err != nil {
		t.Fatal(err)
	}
	threads := func(set string) string {
		if set != "" {
			if _, err := query.ConnOf(st).ExecContext(ctx, "SET threads = "+set); err != nil {
				t.Fatal(err)
			}
		}
		var n string
		if err := query.ConnOf(st).QueryRowContext(ctx, `SELECT current_setting('threads')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range []query.Filter{{}, {Provider: "anthropic"}, {Since: &since}, {Runs: []string{"nope"}}} {
		threads("1")
		want, err := st.Report(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		threads("3")
		got, err := st.ReportConcurrently(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		if string(g) != string(w) {
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			t.Errorf("filter %+v: concurrently\n%s\nwant\n%s", f, g[max(0, i-300):min(len(g), i+200)], w[max(0, i-300):min(len(w), i+200)])
		}
		if f.Provider == "" && f.Runs == nil && (len(want.Systems.BySystem) < 2 || want.FactoryAudit == nil) {
			t.Errorf("filter %+v: %d record systems and no factory audit; the test data should hold them", f, len(want.Systems.BySystem))
		}
	}
	if n := threads(""); n != "3" {
		t.Errorf("threads = %s after the report, was 3", n)
	}
}

// A cancelled report is an error, not a report with parts left empty.
func TestReportConcurrentlyFails(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	st := openIngested(t, "../testdata/runs")
	cancel()
	if _, err := st.ReportConcurrently(ctx, query.Filter{}); err == nil {
		t.Fatal("a cancelled report succeeded")
	}
}
