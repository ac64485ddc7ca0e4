package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/sqlviews"
)

type sqlViewsOptions struct {
	g       *globals
	Dialect string
	Lake    string
}

func newSQLViewsCmd(g *globals, runF func(context.Context, *sqlViewsOptions) error) *cobra.Command {
	o := &sqlViewsOptions{g: g}
	cmd := &cobra.Command{
		Use:   "sql-views --lake DIR|s3://BUCKET/PREFIX [--dialect duckdb|trino|spark|clickhouse]",
		Short: "Print SQL views over a lake that compute the report's metrics",
		Long: `Print the statements that make a lake's tables readable by an SQL engine and
the views over them that compute the report's metrics, as report --lake does
over every run: orchstat_metrics, one row per metric (metric, family, kind,
value, numerator, denominator; a ratio whose denominator is 0 has no value),
orchstat_<family>_counts with the counts behind them, the same split as the
report splits them (orchstat_trace_metrics_by_provider_model,
orchstat_record_metrics_by_system, orchstat_call_metrics_by_system and
orchstat_call_metrics_by_system_provider_model), and
orchstat_metrics_left_out, the metrics the views cannot compute and why (the
calls' costs, which need orchstat's price table). The views are generated
from the metric catalog the report uses.

The dialects: duckdb (read_parquet over the files; run in orchstat's tests
against report --lake), trino (Hive connector external tables), spark
(CREATE TABLE ... USING parquet) and clickhouse (views over the file() or
s3() table function). What each was checked against, and how they differ, is
in docs/sql-views.md. The output names the metrics it leaves out, and
standard error says so too.`,
		Example: `  orchstat sql-views --lake /mnt/orchstat-lake | duckdb lake.duckdb
  orchstat sql-views --dialect trino --lake s3://ci-traces/orchstat > views.sql
  duckdb lake.duckdb "SELECT metric, value FROM orchstat_metrics"`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Lake == "" {
				return usageError{fmt.Errorf("--lake is required")}
			}
			if _, err := sqlviews.Lookup(o.Dialect); err != nil {
				return usageError{err}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return sqlViewsRun(o)
		},
	}
	cmd.Flags().StringVar(&o.Dialect, "dialect", "duckdb", "the engine the views are written for: "+strings.Join(sqlviews.DialectNames, ", "))
	cmd.Flags().StringVar(&o.Lake, "lake", "", "the lake the views read: a folder (made absolute) or s3://BUCKET/PREFIX")
	return cmd
}

func sqlViewsRun(o *sqlViewsOptions) error {
	d, err := sqlviews.Lookup(o.Dialect)
	if err != nil {
		return usageError{err}
	}
	where := o.Lake
	if !strings.HasPrefix(where, "s3://") {
		if where, err = filepath.Abs(where); err != nil {
			return err
		}
	}
	loc, err := sqlviews.ParseLocation(filepath.ToSlash(where))
	if err != nil {
		return usageError{err}
	}
	tables := lakeTables()
	if loc.Dir != "" {
		for i, t := range tables {
			files, err := filepath.Glob(filepath.Join(loc.Dir, t.Name, "*", "*", "*", "*.parquet"))
			if err != nil {
				return err
			}
			tables[i].Absent = len(files) == 0
		}
	}
	v, err := sqlviews.Render(d, loc, tables)
	if err != nil {
		return err
	}
	fmt.Fprint(o.g.io.Out, v.SQL)
	// One line for all of them: a lake of agents' calls alone lacks every
	// orchestrator table, and a line each buried the rest.
	if len(v.Absent) > 0 {
		fmt.Fprintf(o.g.io.Err, "orchstat: sql-views: the lake at %s holds no file of %s yet, so the metrics made of them count nothing; run sql-views again once it has\n",
			loc.Dir, strings.Join(v.Absent, ", "))
	}
	for _, l := range v.LeftOut {
		fmt.Fprintf(o.g.io.Err, "orchstat: sql-views leaves out %s: %s\n", l.Metric, l.Why)
	}
	return nil
}

// lakeTables are the lake's tables as sqlviews reads them.
func lakeTables() []sqlviews.Table {
	var out []sqlviews.Table
	for _, t := range query.LakeTables() {
		st := sqlviews.Table{Name: t.Name}
		for _, c := range t.Columns {
			if c.Name != "system" { // a partition key in the lake
				st.Columns = append(st.Columns, sqlviews.Column{Name: c.Name, Type: c.Type})
			}
		}
		out = append(out, st)
	}
	return out
}
