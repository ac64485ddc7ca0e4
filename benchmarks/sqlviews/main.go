// Command sqlviews times the views orchstat sql-views prints for DuckDB
// over a lake, beside report --lake (the baseline, which reads the lake
// into its replica): it makes the views in a new in-memory DuckDB (the
// same duckdb-go and DuckDB 1.5.6 orchstat links), reads orchstat_metrics
// -n times, printing each read's wall-clock time, and, given report
// --lake's JSON (-report), fails unless every metric the views compute
// equals the report's.
//
//	orchstat sql-views --lake LAKE > views.sql
//	orchstat report --lake LAKE --format json > report.json
//	go run ./benchmarks/sqlviews -views views.sql -report report.json -n 5
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {
	views := flag.String("views", "", "the DuckDB views sql-views printed (required)")
	report := flag.String("report", "", "report --lake --format json of the same lake, to compare with")
	n := flag.Int("n", 3, "how many times to read orchstat_metrics")
	flag.Parse()
	if err := run(*views, *report, *n); err != nil {
		fmt.Fprintln(os.Stderr, "sqlviews:", err)
		os.Exit(1)
	}
}

type metric struct {
	Value, Numerator, Denominator *float64
}

func run(viewsFile, reportFile string, n int) error {
	text, err := os.ReadFile(viewsFile)
	if err != nil {
		return err
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	start := time.Now()
	if _, err := db.ExecContext(ctx, string(text)); err != nil {
		return fmt.Errorf("making the views: %w", err)
	}
	fmt.Printf("views made in %.3f s\n", time.Since(start).Seconds())
	var got map[string]metric
	for i := range n {
		start := time.Now()
		if got, err = readMetrics(ctx, db); err != nil {
			return err
		}
		fmt.Printf("read %d: %d metrics in %.3f s\n", i+1, len(got), time.Since(start).Seconds())
	}
	if reportFile == "" {
		return nil
	}
	return compare(got, reportFile)
}

func readMetrics(ctx context.Context, db *sql.DB) (map[string]metric, error) {
	rows, err := db.QueryContext(ctx, "SELECT metric, value, numerator, denominator FROM orchstat_metrics")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]metric{}
	for rows.Next() {
		var name string
		var v [3]sql.NullFloat64
		if err := rows.Scan(&name, &v[0], &v[1], &v[2]); err != nil {
			return nil, err
		}
		p := func(x sql.NullFloat64) *float64 {
			if !x.Valid {
				return nil
			}
			return &x.Float64
		}
		out[name] = metric{p(v[0]), p(v[1]), p(v[2])}
	}
	return out, rows.Err()
}

// compare fails unless each metric the views compute equals the report's.
func compare(got map[string]metric, reportFile string) error {
	b, err := os.ReadFile(reportFile)
	if err != nil {
		return err
	}
	var r struct{ Metrics map[string]metric }
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", reportFile, err)
	}
	bad := 0
	for name, g := range got {
		w, ok := r.Metrics[name]
		if !ok {
			return fmt.Errorf("%s is not in the report", name)
		}
		for _, p := range [][2]*float64{{g.Value, w.Value}, {g.Numerator, w.Numerator}, {g.Denominator, w.Denominator}} {
			if (p[0] == nil) != (p[1] == nil) || p[0] != nil && math.Abs(*p[0]-*p[1]) > 1e-9*math.Max(1, math.Abs(*p[1])) {
				fmt.Printf("%s differs: views %+v, report %+v\n", name, g, w)
				bad++
				break
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d metrics differ from the report", bad)
	}
	fmt.Printf("all %d metrics equal report --lake's\n", len(got))
	return nil
}
