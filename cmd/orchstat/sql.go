package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/render"
)

type sqlOptions struct {
	g       *globals
	Query   string
	File    string
	Format  string
	Timeout time.Duration
	Prices  string
}

func newSQLCmd(g *globals, runF func(context.Context, *sqlOptions) error) *cobra.Command {
	o := &sqlOptions{g: g}
	cmd := &cobra.Command{
		Use:   "sql QUERY | sql - | sql --file FILE",
		Short: "Run a read-only SQL query against the store",
		Long: `Run one read-only DuckDB SQL query against the store and print the result.

The query must be one query statement (SELECT, WITH, FROM, VALUES, TABLE,
DESCRIBE, SHOW, SUMMARIZE, or EXPLAIN of one), as DuckDB's own parser reads
it; anything else is refused before it runs. The store is opened read-only
with external access disabled, and the query reads a snapshot of the store,
so a long query keeps no other orchstat waiting. It is stopped after
--timeout. The tables and views are documented in docs/schema.md; start with
events, runs and provider_requests; agents' calls with their cost, recorded
or priced (--prices FILE extends the built-in table), are in the view
priced_calls (docs/prices.md).

The query is the argument, or the contents of --file FILE, or standard input
when the argument is - (a query too long, or too full of quotes, for a shell
line). A query DuckDB cannot parse is reported as a syntax error, with where.`,
		Example: `  orchstat sql "SELECT status, count(*) AS runs FROM runs GROUP BY ALL ORDER BY runs DESC"
  orchstat sql --format csv "SELECT provider, model, avg(retries) FROM provider_requests GROUP BY ALL"
  orchstat sql "SELECT payload->>'error' AS error, count(*) FROM events WHERE type = 'ProviderRequestFinished' GROUP BY ALL"
  orchstat sql --file retries.sql
  orchstat sql - < retries.sql`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.readQuery(args); err != nil {
				return err
			}
			if _, err := render.ParseFormat(o.Format); err != nil {
				return usageError{err}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return sqlRun(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Format, "format", "f", "table", "output format: table, markdown, json or csv")
	cmd.Flags().StringVar(&o.File, "file", "", "read the query from this file instead of the argument")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 60*time.Second, "stop the query after this long (0: no limit)")
	addPricesFlag(cmd, &o.Prices)
	return cmd
}

// sqlMaxQuery bounds a query read from a file or standard input: a query
// is text a person wrote, and a mistaken path (a store, a log) should not
// be read whole into memory.
const sqlMaxQuery = 1 << 20

// readQuery takes the query from the argument, --file, or standard input
// for "-": exactly one of them.
func (o *sqlOptions) readQuery(args []string) error {
	switch {
	case o.File != "" && len(args) > 0:
		return usageError{errors.New("give the query as an argument or with --file, not both")}
	case o.File == "" && len(args) == 0:
		return usageError{errors.New("no query: give it as an argument, with --file FILE, or - to read standard input")}
	case o.File == "":
		if args[0] != "-" {
			o.Query = args[0]
			return nil
		}
		return o.readFrom("standard input", o.g.io.In)
	}
	f, err := os.Open(o.File)
	if err != nil {
		return usageError{fmt.Errorf("--file: %w", err)}
	}
	defer f.Close()
	return o.readFrom(o.File, f)
}

func (o *sqlOptions) readFrom(name string, r io.Reader) error {
	if r == nil {
		r = strings.NewReader("")
	}
	b, err := io.ReadAll(io.LimitReader(r, sqlMaxQuery+1))
	if err != nil {
		return fmt.Errorf("reading the query from %s: %w", name, err)
	}
	if len(b) > sqlMaxQuery {
		return usageError{fmt.Errorf("the query in %s is over %d bytes; is it the right file?", name, sqlMaxQuery)}
	}
	if !utf8.Valid(b) {
		return usageError{fmt.Errorf("the query in %s is not UTF-8 text", name)}
	}
	o.Query = string(b)
	return nil
}

func sqlRun(ctx context.Context, o *sqlOptions) error {
	format, _ := render.ParseFormat(o.Format)
	table, err := loadPrices(o.g.io, o.Prices)
	if err != nil {
		return err
	}
	st, err := o.g.openExisting(ctx, true)
	if err != nil {
		return err
	}
	defer st.Close()
	st.UsePrices(table)
	qctx := ctx
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		qctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	t, err := st.ReadOnly(qctx, o.Query)
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
	return render.RenderTable(o.g.io.Out, t, format)
}
