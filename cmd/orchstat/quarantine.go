package main

import (
	"context"

	"github.com/spf13/cobra"

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
characters unless --full is given.

On a terminal the lines are listed under their file instead, each with its
line, byte offset and reason and its raw text beneath, cut to the terminal's
width; --wide prints the whole table, as it is printed to a pipe or a file.
When --limit leaves lines out, a last line says how many are shown of how
many.`,
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
	addWideFlag(cmd, g.io)
	return cmd
}

func quarantineRun(ctx context.Context, o *quarantineOptions) error {
	format, _ := render.ParseFormat(o.Format)
	st, err := o.g.openExisting(ctx, false)
	if err != nil {
		return err
	}
	defer st.Close()
	t, err := st.Quarantined(ctx, o.Limit)
	if err != nil {
		return err
	}
	total := int64(len(t.Rows))
	if o.Limit > 0 && len(t.Rows) == o.Limit {
		if total, err = st.QuarantineCount(ctx); err != nil {
			return err
		}
	}
	io := o.g.io
	return render.RenderQuarantine(io.Out, io.Err, render.Quarantine{Lines: t, Total: total, Full: o.Full}, format, io.OutWidth)
}
