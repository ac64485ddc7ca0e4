package sqlviews

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/reports"
)

var update = flag.Bool("update", false, "rewrite testdata/*.sql from the views rendered now")

// testLake is a small lake's tables: those the views read, with a column
// or two each (the DDL dialects declare them).
func testLake() []Table {
	var out []Table
	for _, name := range []string{"files", "run_spans", "run_events", "escalations", "provider_request_finishes",
		"l2_events", "l3_candidates", "diagnoses", "judge_calls", "record_runs", "record_attempts", "calls"} {
		out = append(out, Table{Name: name, Columns: []Column{{"file_id", "INTEGER"}, {"run_id", "VARCHAR"}, {"ts", "TIMESTAMP"}}})
	}
	return out
}

// TestGolden holds each dialect's output to testdata/<dialect>.sql, over
// a local lake and an S3 one; go test ./reports/sqlviews -update rewrites
// them.
func TestGolden(t *testing.T) {
	for _, name := range DialectNames {
		for _, lake := range []string{"/data/lake", "s3://ci-traces/orchstat"} {
			file := name + ".sql"
			if strings.HasPrefix(lake, "s3://") {
				file = name + "-s3.sql"
			}
			t.Run(file, func(t *testing.T) {
				loc, err := ParseLocation(lake)
				if err != nil {
					t.Fatal(err)
				}
				v, err := Render(Dialects[name], loc, testLake())
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join("testdata", file)
				if *update {
					if err := os.WriteFile(path, []byte(v.SQL), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (go test ./reports/sqlviews -update writes it)", err)
				}
				if v.SQL != string(want) {
					t.Errorf("%s differs from the views rendered now; go test ./reports/sqlviews -update rewrites it", path)
				}
				if strings.Contains(v.SQL, "{{") {
					t.Errorf("%s: a template action was left unexpanded", name)
				}
			})
		}
	}
}

// TestEveryMetricIsViewedOrLeftOut: each catalog metric is a row of
// orchstat_metrics or named as left out, with why; only the costs, which
// need the price table, are left out.
func TestEveryMetricIsViewedOrLeftOut(t *testing.T) {
	loc, _ := ParseLocation("/data/lake")
	v, err := Render(duckDB, loc, testLake())
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, l := range v.LeftOut {
		if l.Why == "" {
			t.Errorf("%s left out without a why", l.Metric)
		}
		left = append(left, l.Metric)
	}
	slices.Sort(left)
	if want := []string{"call_cost_usd", "failed_attempt_cost_usd"}; !slices.Equal(left, want) {
		t.Errorf("left out %v, want %v", left, want)
	}
	metrics, _, _ := strings.Cut(v.SQL, "VIEW orchstat_metrics_left_out")
	for _, s := range reports.Catalog {
		row := "SELECT '" + s.Name + "' AS metric"
		if in := strings.Contains(metrics, row); in == slices.Contains(left, s.Name) {
			t.Errorf("%s: in orchstat_metrics %v, left out %v", s.Name, in, slices.Contains(left, s.Name))
		}
	}
}

// TestUndeclaredCount: a catalog metric naming a count no family declares
// is an error, not a metric dropped in silence.
func TestUndeclaredCount(t *testing.T) {
	saved := reports.Catalog
	defer func() { reports.Catalog = saved }()
	reports.Catalog = append(slices.Clone(saved), reports.MetricSpec{Name: "new_metric", Family: reports.FamilyRecord,
		Kind: reports.Count, Num: "no_such_count"})
	loc, _ := ParseLocation("/data/lake")
	_, err := Render(duckDB, loc, testLake())
	if err == nil || !strings.Contains(err.Error(), `new_metric: the record family declares no count "no_such_count"`) {
		t.Errorf("got %v", err)
	}
}

func TestParseLocation(t *testing.T) {
	for _, c := range []struct{ in, dir, bucket, prefix, err string }{
		{in: "/data/lake/", dir: "/data/lake"},
		{in: "s3://b", bucket: "b"},
		{in: "s3://b/p/q/", bucket: "b", prefix: "p/q"},
		{in: "s3://", err: "no bucket"},
		{in: "lake", err: "absolute"},
		{in: "/data/it's", err: "quote"},
	} {
		t.Run(c.in, func(t *testing.T) {
			l, err := ParseLocation(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want an error with %q", err, c.err)
				}
				return
			}
			if err != nil || l != (Location{Dir: c.dir, Bucket: c.bucket, Prefix: c.prefix}) {
				t.Errorf("got %+v, %v", l, err)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	if _, err := Lookup("Trino"); err != nil {
		t.Error(err)
	}
	if _, err := Lookup("oracle"); err == nil || !strings.Contains(err.Error(), "duckdb, trino, spark, clickhouse") {
		t.Errorf("got %v", err)
	}
}

// TestAbsentTable: a table a local lake holds no file of becomes an empty
// view of its columns in DuckDB and ClickHouse, whose readers fail on a
// glob that matches nothing, and is named; Trino and Spark declare it as
// any other.
func TestAbsentTable(t *testing.T) {
	lake := testLake()
	for i := range lake {
		lake[i].Absent = lake[i].Name == "calls"
	}
	loc, _ := ParseLocation("/data/lake")
	for _, name := range DialectNames {
		v, err := Render(Dialects[name], loc, lake)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(v.Absent, []string{"calls"}) {
			t.Errorf("%s: absent %v, want [calls]", name, v.Absent)
		}
		empty := strings.Contains(v.SQL, "-- The lake holds no file of calls yet")
		if want := name == "duckdb" || name == "clickhouse"; empty != want {
			t.Errorf("%s: an empty view of calls %v, want %v", name, empty, want)
		}
		if reads := strings.Contains(v.SQL, "/data/lake/calls"); reads == empty {
			t.Errorf("%s: reads calls' files %v, an empty view %v", name, reads, empty)
		}
	}
}
