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
	// With the real samples the lake holds several systems of each
	// family, so every split must have two groups or more; testdata's
	// two runners hold one agent system.
	least := 1
	if _, err := os.Stat(externalData); err == nil {
		least = 2
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
	db := viewsDB(t, views)
	report := lakeReportJSON(t, "report", "--lake", lake)
	got := queryMetrics(t, db, "orchstat_metrics", nil)[""]
	nonzero := map[reports.Family]int{}
	for _, s := range reports.Catalog {
		if _, ok := got[s.Name]; s.Kind == reports.Cost {
			if ok {
				t.Errorf("%s: a cost is in the views, which have no price table", s.Name)
			}
			continue
		}
		if sameMetric(t, s.Name, got[s.Name], report["metrics"].(map[string]any)[s.Name]) && got[s.Name][0] != nil && *got[s.Name][0] != 0 {
			nonzero[s.Family]++
		}
	}
	// A lake with nothing in a family would make its comparison empty.
	for _, f := range []reports.Family{reports.FamilyTrace, reports.FamilyRecord, reports.FamilyCall} {
		if nonzero[f] < 3 {
			t.Errorf("only %d %s metrics have a value other than 0: the lake tests too little", nonzero[f], f)
		}
	}
	checkLeftOut(t, db)
	checkByProvider(t, db, report)

	// The report's splits: record runs by system, calls by system and by
	// system, provider and model.
	for _, g := range []struct {
		view, section, rows string
		keys                []string
	}{
		{"orchstat_record_metrics_by_system", "systems", "by_system", []string{"system"}},
		{"orchstat_call_metrics_by_system", "calls", "by_system", []string{"system"}},
		{"orchstat_call_metrics_by_system_provider_model", "calls", "by_provider_model", []string{"system", "provider", "model"}},
	} {
		views := queryMetrics(t, db, g.view, g.keys)
		section, _ := report[g.section].(map[string]any)
		rows, ok := section[g.rows].([]any)
		if !ok {
			t.Errorf("the report has no %s.%s", g.section, g.rows)
			continue
		}
		if len(rows) < least || len(views) != len(rows) {
			t.Errorf("%s: %d groups, the report's %s.%s %d (want the same, at least %d)", g.view, len(views), g.section, g.rows, len(rows), least)
		}
		for _, r := range rows {
			row := r.(map[string]any)
			var key []string
			for _, k := range g.keys {
				v, _ := row[k].(string)
				key = append(key, v)
			}
			group := strings.Join(key, "/")
			for name, want := range row["metrics"].(map[string]any) {
				if s, _ := reports.Spec(name); s.Kind != reports.Cost {
					sameMetric(t, g.view+" "+group+" "+name, views[group][name], want)
				}
			}
		}
	}
}

// checkByProvider compares orchstat_trace_metrics_by_provider_model
// with the report's by-provider table, row for row.
func checkByProvider(t *testing.T, db *sql.DB, report map[string]any) {
	t.Helper()
	views := queryMetrics(t, db, "orchstat_trace_metrics_by_provider_model", []string{"provider", "model"})
	rows, _ := report["breakdowns"].(map[string]any)["by_provider"].([]any)
	if len(rows) < 2 || len(views) != len(rows) {
		t.Errorf("by provider and model: %d groups in the views, %d in the report (want the same, at least 2)", len(views), len(rows))
	}
	for _, r := range rows {
		row := r.(map[string]any)
		model, _ := row["model"].(string)
		group := row["provider"].(string) + "/" + model
		for name, want := range map[string]any{
			"provider_requests":      map[string]any{"value": row["requests"]},
			"provider_retries_total": map[string]any{"value": row["retries_total"]},
			"provider_retry_rate":    row["retry_rate"],
			"provider_failure_rate":  row["failure_rate"],
		} {
			sameMetric(t, "by provider and model "+group+" "+name, views[group][name], want)
		}
	}
}

// sameMetric reports whether the views' value, numerator and denominator
// of a metric equal the report's JSON of it, failing the test if not.
func sameMetric(t *testing.T, what string, g [3]*float64, want any) bool {
	t.Helper()
	w, ok := want.(map[string]any)
	if !ok {
		t.Errorf("%s: not in the report", what)
		return false
	}
	same := true
	for i, key := range []string{"value", "numerator", "denominator"} {
		wv, has := w[key].(float64)
		switch {
		case !has && g[i] != nil:
			t.Errorf("%s %s: views %v, report none", what, key, *g[i])
			same = false
		case has && (g[i] == nil || math.Abs(*g[i]-wv) > 1e-9*math.Max(1, math.Abs(wv))):
			t.Errorf("%s %s: views %v, report %v", what, key, show(g[i]), wv)
			same = false
		}
	}
	return same
}

func show(v *float64) any {
	if v == nil {
		return "none"
	}
	return *v
}

// viewsDB runs the views on a new in-memory DuckDB.
func viewsDB(t *testing.T, views string) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(context.Background(), views); err != nil {
		t.Fatalf("running the views: %v", err)
	}
	return db
}

// queryMetrics reads a metrics view: per group (its keys' values joined
// by "/", "" without keys), each metric's value, numerator and
// denominator.
func queryMetrics(t *testing.T, db *sql.DB, view string, keys []string) map[string]map[string][3]*float64 {
	t.Helper()
	cols := strings.Join(append(slices.Clone(keys), "metric", "value", "numerator", "denominator"), ", ")
	rows, err := db.QueryContext(context.Background(), "SELECT "+cols+" FROM "+view)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]map[string][3]*float64{}
	for rows.Next() {
		key := make([]string, len(keys))
		var name string
		var v [3]sql.NullFloat64
		dest := []any{}
		for i := range key {
			dest = append(dest, &key[i])
		}
		if err := rows.Scan(append(dest, &name, &v[0], &v[1], &v[2])...); err != nil {
			t.Fatal(err)
		}
		var m [3]*float64
		for i := range v {
			if v[i].Valid {
				m[i] = &v[i].Float64
			}
		}
		group := strings.Join(key, "/")
		if out[group] == nil {
			out[group] = map[string][3]*float64{}
		}
		if _, dup := out[group][name]; dup {
			t.Errorf("%s has two rows of %s in group %q", view, name, group)
		}
		out[group][name] = m
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkLeftOut checks that orchstat_metrics_left_out names the costs.
func checkLeftOut(t *testing.T, db *sql.DB) {
	t.Helper()
	var left []string
	lr, err := db.QueryContext(context.Background(), "SELECT metric FROM orchstat_metrics_left_out ORDER BY metric")
	if err != nil {
		t.Fatal(err)
	}
	defer lr.Close()
	for lr.Next() {
		var m string
		if err := lr.Scan(&m); err != nil {
			t.Fatal(err)
		}
		left = append(left, m)
	}
	if want := []string{"call_cost_usd", "failed_attempt_cost_usd"}; !slices.Equal(left, want) {
		t.Errorf("orchstat_metrics_left_out: %v, want %v", left, want)
	}
}
