package main

import (
	"context"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/spf13/cobra"

	"github.com/orchstat/orchstat/model/reports"
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
	t, err := query.Quarantined(ctx, st, o.Limit)
	if err != nil {
		return err
	}
	total := int64(len(t.Rows))
	if o.Limit > 0 && len(t.Rows) == o.Limit {
		if total, err = query.QuarantineCount(ctx, st); err != nil {
			return err
		}
	}
	text := format == render.FormatTable || format == render.FormatMarkdown
	if text && !o.Full {
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
	if width := o.g.io.OutWidth; width > 0 && format == render.FormatTable {
		writeQuarantineList(o.g.io.Out, t, width, o.Full)
	} else {
		// Markdown at a terminal fits it, as report's tables do.
		t.Width = o.g.io.OutWidth
		if err := render.RenderTable(o.g.io.Out, t, format); err != nil {
			return err
		}
	}
	if shown := int64(len(t.Rows)); shown < total {
		// Said beneath a table; on stderr beside JSON or CSV, which
		// programs read.
		w := o.g.io.Out
		if !text {
			w = o.g.io.Err
		}
		fmt.Fprintf(w, "%d of %d quarantined lines shown; --limit 0 shows them all\n", shown, total)
	}
	return nil
}

// writeQuarantineList draws t (Quarantined's columns) for a terminal
// width columns wide: eight columns of a table do not fit 80 (the raw text
// alone takes 80), so the lines are listed under their file, each with
// its line, byte offset and reason, and its raw text beneath, cut to the
// width unless full. Every cell is escaped, as in a table.
func writeQuarantineList(w io.Writer, t reports.Table, width int, full bool) {
	fmt.Fprintln(w, t.Title)
	last := ""
	for _, r := range t.Rows {
		path := render.EscapeControls(cellText(r[0]))
		if path != last || last == "" {
			fmt.Fprintf(w, "\n%s\n", cutLeft(path, width))
			last = path
		}
		head := fmt.Sprintf("  line %s, byte %s: %s", cellText(r[1]), cellText(r[2]), render.EscapeControls(cellText(r[4])))
		fmt.Fprintln(w, cutRight(head, width))
		raw := "    " + render.EscapeControls(cellText(r[5]))
		if !full {
			raw = cutRight(raw, width)
		}
		fmt.Fprintln(w, raw)
	}
}

func cellText(v any) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprint(v)
}

// cutRight shortens s to width display columns, ending in "…" when cut.
func cutRight(s string, width int) string {
	if twwidth.Width(s) <= width {
		return s
	}
	return twwidth.Truncate(s, width-1) + "…"
}

// cutLeft shortens s to width display columns from the left, so a long
// path keeps its file name.
func cutLeft(s string, width int) string {
	if twwidth.Width(s) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && twwidth.Width(string(r))+1 > width {
		r = r[1:]
	}
	return "…" + string(r)
}
