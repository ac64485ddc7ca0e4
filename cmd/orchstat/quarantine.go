package main

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/query"
	"github.com/orchstat/orchstat/reports/render"
)

type quarantineOptions struct {
	g      *globals
	Format string
	Limit  int
	Full   bool
}

func newQuarantineCmd(g *globals, runF func(context.Context, *quarantineOptions) error) *cobra.Command {
	o := &quarantineOptions{g: g}
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "List the lines ingest could not use, and why",
		Long: `List quarantined lines with their file, line number, byte offset, the field
at fault, the reason and the raw text (kept up to 64 KiB; raw_bytes is the
full length). In table and markdown output the raw text is cut to 80
characters unless --full is given.`,
		Example: `  orchstat quarantine
  orchstat quarantine --format json --limit 0`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := render.ParseFormat(o.Format); err != nil {
				return usageError{err}
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return quarantineRun(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Format, "format", "f", "table", "output format: table, markdown, json or csv")
	cmd.Flags().IntVar(&o.Limit, "limit", 100, "show at most this many lines (0 for all)")
	cmd.Flags().BoolVar(&o.Full, "full", false, "show the whole raw text in table and markdown output")
	return cmd
}

func quarantineRun(ctx context.Context, o *quarantineOptions) error {
	format, _ := render.ParseFormat(o.Format)
	st, err := o.g.openExisting(ctx, false)
	if err != nil {
		return err
	}
	defer st.Close()
	t, err := query.Quarantined(ctx, st, o.Limit)
	if err != nil {
		return err
	}
	if (format == render.FormatTable || format == render.FormatMarkdown) && !o.Full {
		for _, r := range t.Rows {
			if s, ok := r[5].(string); ok && utf8.RuneCountInString(s) > 80 {
				r[5] = string([]rune(s)[:79]) + "…"
			}
		}
	}
	if len(t.Rows) == 0 && format == render.FormatTable {
		fmt.Fprintln(o.g.io.Out, "no quarantined lines")
		return nil
	}
	return render.RenderTable(o.g.io.Out, t, format)
}
