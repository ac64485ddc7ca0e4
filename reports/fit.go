package reports

import (
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// Fitting tables to a terminal.
//
// A table drawn for a person at a terminal must not be wider than the
// terminal: a wrapped border line turns a table into noise. Width 0 means
// "not a terminal" (a pipe, a file, --wide): nothing is fitted, so what
// programs and golden files read never depends on the terminal.
//
// In order, until the table fits:
//  1. Shrink the widest columns, cutting their cells with "…". The first
//     column (the row's name: a rule, a run id, a metric) is cut last,
//     and no column goes below its header or minCol.
//  2. Transpose: one row per column, one column per row. A table with many
//     columns and few rows (By day) reads well this way.
//  3. Split the columns into several tables, each repeating the first.
//  4. Cut whatever still does not fit.
//
// Widths are display widths (a CJK character is two columns), as
// tablewriter measures them.

// minCol is the narrowest a shrunk column gets, so a cut cell still says
// something.
const minCol = 8

// tableWidth is the width of a table drawn with these column widths, for
// both the ASCII and the Markdown renderer: "| a | b |".
func tableWidth(widths []int) int {
	w := 1
	for _, c := range widths {
		w += c + 3
	}
	return w
}

// naturalWidths is each column's widest cell, header included.
func naturalWidths(header []string, rows [][]string) []int {
	widths := make([]int, len(header))
	for j, h := range header {
		widths[j] = twwidth.Width(h)
	}
	for _, row := range rows {
		for j, c := range row {
			widths[j] = max(widths[j], twwidth.Width(c))
		}
	}
	return widths
}

// shrink narrows the widest columns until the table is at most width
// wide, and reports whether it got there. Headers are not cut: a column
// whose name is cut can no longer be looked up in the docs.
func shrink(header []string, widths []int, width int) bool {
	floor := make([]int, len(widths))
	for j, h := range header {
		floor[j] = min(widths[j], max(twwidth.Width(h), minCol))
	}
	// The first column names the row: it keeps up to a third of the line
	// while other columns can give.
	first := min(widths[0], max(floor[0], width/3))
	for tableWidth(widths) > width {
		// The widest column that can still give, the first column last.
		pick := -1
		for j := len(widths) - 1; j >= 1; j-- {
			if widths[j] > floor[j] && (pick < 0 || widths[j] > widths[pick]) {
				pick = j
			}
		}
		switch {
		case pick < 0 && widths[0] > floor[0]:
			pick = 0
		case pick < 0:
			return false
		case widths[0] > first:
			pick = 0
		}
		widths[pick]--
	}
	return true
}

// cut shortens s to at most w display columns, ending in "…" when cut.
func cut(s string, w int) string {
	if twwidth.Width(s) <= w {
		return s
	}
	if w <= 1 {
		return twwidth.Truncate(s, w)
	}
	return twwidth.Truncate(s, w-1) + "…"
}

// cutRows cuts every cell to its column's width.
func cutRows(widths []int, rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for i, row := range rows {
		out[i] = make([]string, len(row))
		for j, c := range row {
			out[i][j] = cut(c, widths[j])
		}
	}
	return out
}

// fitPart is one table of a fitted grid: header, rows and alignment.
type fitPart struct {
	header  []string
	rows    [][]string
	numeric []bool
}

// fitTable lays out header and rows in at most width columns, as one or
// more tables; see the comment at the top of this file.
func fitTable(header []string, rows [][]string, numeric []bool, width int) []fitPart {
	whole := fitPart{header, rows, numeric}
	if width <= 0 {
		return []fitPart{whole}
	}
	widths := naturalWidths(header, rows)
	if tableWidth(widths) <= width {
		return []fitPart{whole}
	}
	if shrink(header, widths, width) {
		return []fitPart{{header, cutRows(widths, rows), numeric}}
	}
	if len(header) > 2 && len(rows) > 0 {
		t := transpose(whole)
		tw := naturalWidths(t.header, t.rows)
		if shrink(t.header, tw, width) {
			return []fitPart{{t.header, cutRows(tw, t.rows), t.numeric}}
		}
	}
	var parts []fitPart
	for _, p := range splitColumns(whole, width) {
		pw := naturalWidths(p.header, p.rows)
		if !shrink(p.header, pw, width) {
			// One column wider than the terminal even at its floor: cut
			// headers too, sharing out what is left.
			hard(pw, width)
			p.header = cutRows(pw, [][]string{p.header})[0]
		}
		p.rows = cutRows(pw, p.rows)
		parts = append(parts, p)
	}
	return parts
}

// hard narrows widths, widest first, until the table fits, down to one
// column each.
func hard(widths []int, width int) {
	for tableWidth(widths) > width {
		pick := 0
		for j := range widths {
			if widths[j] > widths[pick] {
				pick = j
			}
		}
		if widths[pick] <= 1 {
			return
		}
		widths[pick]--
	}
}

// transpose turns columns into rows: the first column's cells become the
// header, the other columns' names the first column.
func transpose(p fitPart) fitPart {
	t := fitPart{header: []string{p.header[0]}}
	for _, row := range p.rows {
		t.header = append(t.header, row[0])
	}
	t.numeric = make([]bool, len(t.header))
	for j := 1; j < len(p.header); j++ {
		row := []string{p.header[j]}
		for _, r := range p.rows {
			row = append(row, r[j])
		}
		t.rows = append(t.rows, row)
		for i := 1; i < len(t.header); i++ {
			t.numeric[i] = t.numeric[i] || p.numeric[j]
		}
	}
	return t
}

// splitColumns splits p's columns into parts that each fit width once
// shrunk, every part starting with the first column.
func splitColumns(p fitPart, width int) []fitPart {
	floor := func(j int) int {
		w := naturalWidths([]string{p.header[j]}, columnOf(p.rows, j))[0]
		return min(w, max(twwidth.Width(p.header[j]), minCol))
	}
	var parts []fitPart
	var cols []int
	used := tableWidth([]int{floor(0)})
	flush := func() {
		part := fitPart{}
		for _, j := range append([]int{0}, cols...) {
			part.header = append(part.header, p.header[j])
			part.numeric = append(part.numeric, p.numeric[j])
		}
		for _, row := range p.rows {
			r := []string{row[0]}
			for _, j := range cols {
				r = append(r, row[j])
			}
			part.rows = append(part.rows, r)
		}
		parts = append(parts, part)
	}
	for j := 1; j < len(p.header); j++ {
		f := floor(j) + 3
		if len(cols) > 0 && used+f > width {
			flush()
			cols, used = nil, tableWidth([]int{floor(0)})
		}
		cols = append(cols, j)
		used += f
	}
	if len(cols) > 0 || len(parts) == 0 {
		flush()
	}
	return parts
}

func columnOf(rows [][]string, j int) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = []string{r[j]}
	}
	return out
}

// wrapText breaks s into lines of at most width display columns, at
// spaces where it can, inside a word longer than a line where it cannot.
// Width 0 leaves s as it is.
func wrapText(s string, width int) []string {
	if width <= 0 || twwidth.Width(s) <= width {
		return []string{s}
	}
	var lines []string
	line := ""
	for _, word := range strings.Split(s, " ") {
		for twwidth.Width(word) > width {
			if line != "" {
				lines = append(lines, line)
				line = ""
			}
			head := twwidth.Truncate(word, width)
			if head == "" {
				break
			}
			lines = append(lines, head)
			word = word[len(head):]
		}
		switch {
		case line == "":
			line = word
		case twwidth.Width(line)+1+twwidth.Width(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
