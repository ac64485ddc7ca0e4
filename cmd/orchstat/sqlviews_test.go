package main

import (
	"context"
	"database/sql"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/reports"
)

// TestSQLViewsDuckDB is issue 41's "done when" for the views: runners
// export testdata (and, when it is there, the real samples of
// ../shared/testdata-external) to a lake, the DuckDB views run on it, and
// every metric equals report --lake's, value, numerator and denominator;
// the metrics the views leave out are named, in the output and in
// orchstat_metrics_left_out.
func TestSQLViewsDuckDB(t *testing.T) {
	endToEnd(t, "exports a lake and runs the views on DuckDB")
	t.Parallel()
	a, b := newLakeRunners(t)
	lake := filepath.Join(t.TempDir(), "lake")
	for _, r := range []*lakeRunner{a, b} {
		r.ingestInto(t, r.db)
		r.export(t, lake)
	}
	if _, err := os.Stat(externalData); err == nil {
		db := filepath.Join(t.TempDir(), "ext.duckdb")
		if code, _, stderr := runCLI(t, "", "--db", db, "ingest", "--quiet", externalData); code != 0 && code != 1 {
			t.Fatalf("ingesting %s: exit %d\n%s", externalData, code, stderr)
		}
		(&lakeRunner{name: "runner-ext", db: db}).export(t, lake)
	} else {
		t.Logf("%s is absent: two runners of testdata only", externalData)
	}

	code, views, stderr := runCLI(t, "", "sql-views", "--lake", lake)
	if code != 0 {
		t.Fatalf("sql-views: exit %d\n%s", code, stderr)
	}
	for _, m := range []string{"call_cost_usd", "failed_attempt_cost_usd"} {
		if !strings.Contains(stderr, "leaves out "+m+":") || !strings.Contains(views, "-- Left out: "+m+":") {
			t.Errorf("sql-views does not say it leaves %s out:\n%s", m, stderr)
		}
	}
	got := viewMetrics(t, views)
	want := lakeReportJSON(t, "report", "--lake", lake)["metrics"].(map[string]any)
	nonzero := map[reports.Family]int{}
	for _, s := range reports.Catalog {
		g, ok := got[s.Name]
		if s.Kind == reports.Cost {
			if ok {
				t.Errorf("%s: a cost is in the views, which have no price table", s.Name)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: not in orchstat_metrics", s.Name)
			continue
		}
		w := want[s.Name].(map[string]any)
		for i, key := range []string{"value", "numerator", "denominator"} {
			wv, _ := w[key].(float64)
			if _, has := w[key]; !has || w[key] == nil {
				if g[i] != nil {
					t.Errorf("%s %s: views %v, report none", s.Name, key, *g[i])
				}
				continue
			}
			if g[i] == nil || math.Abs(*g[i]-wv) > 1e-9*math.Max(1, math.Abs(wv)) {
				t.Errorf("%s %s: views %v, report %v", s.Name, key, show(g[i]), wv)
			}
		}
		if g[0] != nil && *g[0] != 0 {
			nonzero[s.Family]++
		}
	}
	// A lake with nothing in a family would make its comparison empty.
	for _, f := range []reports.Family{reports.FamilyTrace, reports.FamilyRecord, reports.FamilyCall} {
		if nonzero[f] < 3 {
			t.Errorf("only %d %s metrics have a value other than 0: the lake tests too little", nonzero[f], f)
		}
	}
}

func show(v *float64) any {
	if v == nil {
		return "none"
	}
	return *v
}

// viewMetrics runs the views on DuckDB and reads orchstat_metrics: each
// metric's value, numerator and denominator; and checks that
// orchstat_metrics_left_out names the costs.
func viewMetrics(t *testing.T, views string) map[string][3]*float64 {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, views); err != nil {
		t.Fatalf("running the views: %v", err)
	}
	rows, err := db.QueryContext(ctx, "SELECT metric, value, numerator, denominator FROM orchstat_metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][3]*float64{}
	for rows.Next() {
		var name string
		var v [3]sql.NullFloat64
		if err := rows.Scan(&name, &v[0], &v[1], &v[2]); err != nil {
			t.Fatal(err)
		}
		var m [3]*float64
		for i := range v {
			if v[i].Valid {
				m[i] = &v[i].Float64
			}
		}
		if _, dup := out[name]; dup {
			t.Errorf("orchstat_metrics has two rows of %s", name)
		}
		out[name] = m
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var left []string
	lr, err := db.QueryContext(ctx, "SELECT metric FROM orchstat_metrics_left_out ORDER BY metric")
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	for lr.Next() {
		var m string
		lr.Scan(&m)
		left = append(left, m)
	}
	if want := []string{"call_cost_usd", "failed_attempt_cost_usd"}; !slices.Equal(left, want) {
		t.Errorf("orchstat_metrics_left_out: %v, want %v", left, want)
	}
	return out
}
