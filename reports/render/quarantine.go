package render

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/orchstat/orchstat/model/reports"
)

// Quarantine is `orchstat quarantine`'s output: the store's quarantined
// lines (query.Quarantined's columns: path, line, offset, field, reason,
// raw text, ...), up to a limit, of Total in all.
type Quarantine struct {
	Lines reports.Table
	Total int64
	// Full shows the whole raw text in table and Markdown output, which
	// otherwise cut it to 80 characters.
	Full bool
}

// RenderQuarantine writes q in format f, width columns wide (0: any). A
// table on a terminal (width > 0) lists the lines under their file. When
// lines are left out, a last line says how many are shown: beneath a
// table, or on errw beside JSON or CSV, which programs read.
func RenderQuarantine(w, errw io.Writer, q Quarantine, f Format, width int) error {
	t := q.Lines
	text := f == FormatTable || f == FormatMarkdown
	if text && !q.Full {
		for _, r := range t.Rows {
			if s, ok := r[5].(string); ok && utf8.RuneCountInString(s) > 80 {
				r[5] = string([]rune(s)[:79]) + "…"
			}
		}
	}
	if len(t.Rows) == 0 && f == FormatTable {
		fmt.Fprintln(w, "no quarantined lines")
		return nil
	}
	if width > 0 && f == FormatTable {
		writeQuarantineList(w, t, width, q.Full)
	} else {
		// Markdown at a terminal fits it, as report's tables do.
		t.Width = width
		if err := RenderTable(w, t, f); err != nil {
			return err
		}
	}
	if shown := int64(len(t.Rows)); shown < q.Total {
		out := w
		if !text {
			out = errw
		}
		fmt.Fprintf(out, "%d of %d quarantined lines shown; --limit 0 shows them all\n", shown, q.Total)
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
		path := escapeControls(cellText(r[0]))
		if path != last || last == "" {
			fmt.Fprintf(w, "\n%s\n", cutLeft(path, width))
			last = path
		}
		// A parser's reason may name the line again ("line 47: ..."):
		// the head names it once.
		reason := strings.TrimPrefix(cellText(r[4]), "line "+cellText(r[1])+": ")
		head := fmt.Sprintf("  line %s, byte %s: %s", cellText(r[1]), cellText(r[2]), escapeControls(reason))
		fmt.Fprintln(w, cutRight(head, width))
		raw := "    " + escapeControls(cellText(r[5]))
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
