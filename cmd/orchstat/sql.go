package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports"
)

type sqlOptions struct {
	g       *globals
	Query   string
	Format  string
	Timeout time.Duration
}

func newSQLCmd(g *globals, runF func(context.Context, *sqlOptions) error) *cobra.Command {
	o := &sqlOptions{g: g}
	cmd := &cobra.Command{
		Use:   "sql QUERY",
		Short: "Run a read-only SQL query against the store",
		Long: `Run one read-only DuckDB SQL query against the store and print the result.

The query must be one query statement (SELECT, WITH, FROM, VALUES, TABLE,
DESCRIBE, SHOW, SUMMARIZE, or EXPLAIN of one), as DuckDB's own parser reads
it; anything else is refused before it runs. The store is opened read-only
with external access disabled, and the query reads a snapshot of the store,
so a long query keeps no other orchstat waiting. It is stopped after
--timeout. The tables and views are documented in the README; start with
events, runs and provider_requests.`,
		Example: `  orchstat sql "SELECT status, count(*) AS runs FROM runs GROUP BY ALL ORDER BY runs DESC"
  orchstat sql --format csv "SELECT provider, model, avg(retries) FROM provider_requests GROUP BY ALL"
  orchstat sql "SELECT payload->>'error' AS error, count(*) FROM events WHERE type = 'ProviderRequestFinished' GROUP BY ALL"`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Query = args[0]
			if _, err := reports.ParseFormat(o.Format); err != nil {
				return usageError{err}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return sqlRun(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Format, "format", "f", "table", "output format: table, markdown, json or csv")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 60*time.Second, "stop the query after this long (0: no limit)")
	return cmd
}

func sqlRun(ctx context.Context, o *sqlOptions) error {
	format, _ := reports.ParseFormat(o.Format)
	st, err := o.g.openExisting(ctx, true)
	if err != nil {
		return err
	}
	defer st.Close()
	qctx := ctx
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		qctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	t, err := query.ReadOnly(qctx, st, o.Query)
	if errors.Is(err, query.ErrEmptyQuery) {
		return usageError{err}
	}
	if err != nil && qctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		return fmt.Errorf("the query was stopped after --timeout %v", o.Timeout)
	}
	var se *query.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("syntax error in the query: %s", strings.TrimPrefix(se.Msg, "syntax error "))
	}
	if err != nil {
		// Statements other than queries are refused before they run; a
		// query can still try to read files.
		msg := err.Error()
		if strings.Contains(msg, "disabled by configuration") || strings.Contains(msg, "disabled through configuration") || strings.Contains(msg, "enable_external_access") {
			return fmt.Errorf("orchstat sql is read-only and cannot touch files outside the store: %s", msg)
		}
		return err
	}
	t.Null = "NULL" // not "-", which a string can be
	return reports.RenderTable(o.g.io.Out, t, format)
}
