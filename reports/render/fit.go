package render

import (
	"fmt"
	"slices"
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
//  1. Shrink the widest columns a little, wrapping cells of several words
//     onto up to three lines (ASCII tables) and cutting the others with
//     "…". A cut column keeps 60% of its width, never goes below its
//     header or minCol, and never cuts two different cells to the same
//     text. The first column (the row's name: a rule, a run id, a metric)
//     gives last.
//  2. Transpose: one row per column, one column per row, wrapping but
//     cutting nothing. A table with many columns and a row or few (By
//     day, Agents' model calls by system) reads well so; one of more
//     rows (maxTurned) would have their keys, model ids, as a header.
//  3. Leave out the last columns, one at a time, but never the columns
//     that tell the rows apart (the first, or the first two or three) nor
//     the one the rows are sorted by (Worst runs by retries:
//     provider_retries), until the rest fits as in 1; a line under the
//     table names the columns left out and says --wide shows them.
//     A table whose value columns are peers (simulate's policies, each
//     with its difference) is split instead, one part per policy, each
//     repeating the figure and the record.
//  4. Cut whatever still does not fit.
//
// Widths are display widths (a CJK character is two columns), as
// tablewriter measures them.

// maxTurned is the most rows a table turned round (step 2) has.
const maxTurned = 3

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
// whose name is cut can no longer be looked up in the docs. The first
// column, which names the row, gives only when no other can, and keeps a
// third of the line. Columns whose cells wrap (words[j], the narrowest
// column j wraps to losing nothing; nil: cells do not wrap) narrow first,
// widest first, the first column too; cutting comes after. gentle keeps
// every column at 60% of its width or more, so that a cut cell still
// reads, or at words[j], and never cuts two different cells of a column
// to the same text (distinct[j], nil for no such care); widths is
// changed either way.
func shrink(header []string, widths []int, width int, gentle bool, words, distinct []int) bool {
	floor := make([]int, len(widths))
	for j, h := range header {
		floor[j] = min(widths[j], max(twwidth.Width(h), minCol))
		if gentle {
			keep := (widths[j]*6 + 9) / 10
			if words != nil {
				keep = min(keep, words[j])
			}
			floor[j] = max(floor[j], keep)
		}
		if distinct != nil {
			floor[j] = max(floor[j], distinct[j])
		}
	}
	floor[0] = min(widths[0], max(floor[0], width/3))
	// First the columns that lose nothing by narrowing, cells of words
	// wrapping onto up to three lines, widest first, the first column
	// too: a class of failure wraps before a stage id is cut.
	for words != nil && tableWidth(widths) > width {
		pick := -1
		for j := range widths {
			lossless := max(floor[j], words[j])
			if j == 0 {
				lossless = max(words[0], min(widths[0], minCol))
			}
			if widths[j] > lossless && (pick < 0 || widths[j] > widths[pick]) {
				pick = j
			}
		}
		if pick < 0 {
			break
		}
		widths[pick]--
	}
	for tableWidth(widths) > width {
		pick := -1
		for j := len(widths) - 1; j >= 1; j-- {
			if widths[j] > floor[j] && (pick < 0 || widths[j] > widths[pick]) {
				pick = j
			}
		}
		if pick < 0 && widths[0] > floor[0] {
			pick = 0
		}
		if pick < 0 {
			return false
		}
		widths[pick]--
	}
	return true
}

// wrapWidths is, for each column, the narrowest it can be without losing
// anything: every cell of words still wraps onto three lines or fewer
// (as cutRows wraps them), every one-word cell (an id, a number, a time)
// is whole.
func wrapWidths(rows [][]string, n int) []int {
	out := make([]int, n)
	for _, row := range rows {
		for j, c := range row {
			full := twwidth.Width(c)
			if oneWord(c) {
				out[j] = max(out[j], full)
				continue
			}
			w := max(out[j], 1)
			for _, word := range strings.Fields(c) {
				w = max(w, twwidth.Width(word))
			}
			for ; w < full; w++ {
				if lines := wrapCell(c, w); len(lines) <= 3 && strings.Join(lines, " ") == c {
					break
				}
			}
			out[j] = max(out[j], w)
		}
	}
	return out
}

// cut shortens s to at most w display columns. A cell of words ends in
// "…"; an identifier (one word: a model id, a path, a session id) loses
// its middle instead, so that bedrock/au.anthropic…-v1:0 keeps both the
// family and the version that tell it from its neighbours.
func cut(s string, w int) string {
	if twwidth.Width(s) <= w {
		return s
	}
	if w <= 1 {
		return twwidth.Truncate(s, w)
	}
	if oneWord(s) && w >= 5 {
		if rest, ok := strings.CutPrefix(s, nestMark); ok && w >= 5+len([]rune(nestMark)) {
			return nestMark + cutMiddle(rest, w-twwidth.Width(nestMark))
		}
		return cutMiddle(s, w)
	}
	return twwidth.Truncate(s, w-1) + "…"
}

// nestMark starts a row nested under the one above it (a period's model:
// "└ claude-sonnet-4-5"); the name after it is one word for cutting and
// wrapping.
const nestMark = "└ "

// oneWord reports whether a cell is one word (an id, a path, a number, a
// nested row's name), which is cut in the middle rather than wrapped.
func oneWord(s string) bool {
	return !strings.ContainsAny(strings.TrimPrefix(s, nestMark), " \n")
}

// cutMiddle keeps s's head and tail around "…" in w display columns.
func cutMiddle(s string, w int) string {
	head := twwidth.Truncate(s, (w-1+1)/2)
	room := w - 1 - twwidth.Width(head)
	r := []rune(s)
	i := len(r)
	for i > 0 && twwidth.Width(string(r[i-1:])) <= room {
		i--
	}
	return head + "…" + string(r[i:])
}

// cutRows cuts every cell to its column's width. With wrap, a cell of
// words is wrapped onto up to three lines instead, when that loses
// nothing; ids, times and paths, which are one word, are cut.
func cutRows(widths []int, rows [][]string, wrap bool) [][]string {
	out := make([][]string, len(rows))
	for i, row := range rows {
		out[i] = make([]string, len(row))
		for j, c := range row {
			out[i][j] = cut(c, widths[j])
			if !wrap || out[i][j] == c || oneWord(c) {
				continue
			}
			if lines := wrapCell(c, widths[j]); len(lines) <= 3 && strings.Join(lines, " ") == c {
				// A cell's second line is indented, so that it does not
				// read as the next row's (check's "rule {labels}").
				if in := wrapCell(c, widths[j]-2); len(lines) > 1 && widths[j] > 10 && len(in) <= 3 && strings.Join(in, " ") == c {
					lines = in
					for k := 1; k < len(lines); k++ {
						lines[k] = "  " + lines[k]
					}
				}
				out[i][j] = strings.Join(lines, "\n")
			}
		}
	}
	return out
}

// fitPart is one table of a fitted grid: header, rows and alignment.
type fitPart struct {
	header  []string
	rows    [][]string
	numeric []bool
	// leftOut names the columns left out to fit, which a line under the
	// table names with the way to see them (--wide).
	leftOut []string
}

// fitTable lays out header and rows in at most width columns, as one or
// more tables; see the comment at the top of this file. sorted is the
// index of the column the rows are sorted by, or -1.
//
// wrap lets a cell of several words take several lines (the ASCII table
// can; a Markdown row cannot).
//
// peers says the value columns are peers (simulate's policies, each with
// its difference from the record): none of them can be left out, so a
// table that does not fit is split into parts, each repeating the keys.
func fitTable(header []string, rows [][]string, numeric []bool, sorted, width int, wrap, peers bool) []fitPart {
	whole := fitPart{header: header, rows: rows, numeric: numeric}
	if width <= 0 || tableWidth(naturalWidths(header, rows)) <= width {
		return []fitPart{whole}
	}
	// Cut a little, or turn the table round, before splitting it: one
	// table reads better than several.
	candidates := []fitPart{whole}
	if len(header) > 2 && len(rows) > 0 && len(rows) <= maxTurned {
		candidates = append(candidates, transpose(whole))
	}
	for i, c := range candidates {
		w := naturalWidths(c.header, c.rows)
		var words []int
		if wrap {
			words = wrapWidths(c.rows, len(c.header))
		}
		keep := distinctWidths(c.rows, len(c.header), wrap)
		if i > 0 {
			// A turned table's columns mix fields, so nothing in them is
			// cut: cells may only wrap.
			keep = unbreakableWidths(c.rows, len(c.header), wrap)
		} else {
			for j := range keyColumns(c) {
				keep[j] = max(keep[j], min(w[j], keyWidth))
			}
		}
		if shrink(c.header, w, width, true, words, keep) {
			return []fitPart{{header: c.header, rows: cutRows(w, c.rows, wrap), numeric: c.numeric}}
		}
	}
	if peers {
		var parts []fitPart
		for _, p := range pairParts(whole) {
			pw := naturalWidths(p.header, p.rows)
			if !shrink(p.header, pw, width, false, nil, nil) {
				hard(pw, width)
				p.header = cutRows(pw, [][]string{p.header}, false)[0]
			}
			p.rows = cutRows(pw, p.rows, wrap)
			parts = append(parts, p)
		}
		return parts
	}
	// Leave out the last columns, one at a time, never the keys nor the
	// column the rows are sorted by, until the rest fits; the line under
	// the table names what was left out. One table with a named gap reads
	// better than pieces of one column each repeating the keys.
	keys := keyColumns(whole)
	keep := make([]bool, len(header))
	for j := range keep {
		keep[j] = true
	}
	var left []int
	for _, j := range dropOrder(header, keys, sorted) {
		keep[j] = false
		left = append(left, j)
		slices.Sort(left)
		p := pick(whole, keep)
		w := naturalWidths(p.header, p.rows)
		var words []int
		if wrap {
			words = wrapWidths(p.rows, len(p.header))
		}
		if shrink(p.header, w, width, false, words, dropFloors(p, w, words, keys, wrap)) {
			p.rows = cutRows(w, p.rows, wrap)
			p.leftOut = names(header, left)
			return []fitPart{p}
		}
	}
	// The keys alone are wider than the terminal: cut what must be,
	// headers too, sharing out what is left.
	p := pick(whole, keep)
	p.leftOut = names(header, left)
	pw := naturalWidths(p.header, p.rows)
	if !shrink(p.header, pw, width, false, nil, nil) {
		hard(pw, width)
		p.header = cutRows(pw, [][]string{p.header}, false)[0]
	}
	p.rows = cutRows(pw, p.rows, wrap)
	return []fitPart{p}
}

// dropFloors are the widths p's columns (at widths w) keep while a
// column can still be left out instead: a key (a model, a run id) keeps
// keyWidth columns, its middle cut; any other column keeps what the
// first, gentle step keeps (60% of its width, or its longest word where
// cells wrap), and a number is never cut; no column cuts two different
// cells to the same text. Before, a stage id such as
// precondition_failed was cut to "prec…led" rather than a column being
// left out.
func dropFloors(p fitPart, w, words []int, keys int, wrap bool) []int {
	floor := distinctWidths(p.rows, len(p.header), wrap)
	for j := range floor {
		switch {
		case j < keys:
			floor[j] = max(floor[j], min(w[j], keyWidth))
		case p.numeric[j]:
			floor[j] = w[j]
		default:
			keep := (w[j]*6 + 9) / 10
			if words != nil {
				keep = min(keep, words[j])
			}
			floor[j] = max(floor[j], keep)
		}
	}
	return floor
}

// The order value columns are left out in: the details first (dates,
// breakdowns of a count, evidence), then the rest from the right, and
// last what a reader came for, rates, counts of failures and retries, the
// cost, the count of what the row is.
var (
	detailColumns = map[string]bool{
		"first_run": true, "last_run": true, "not_applicable": true, "other_status": true, "cancelled": true, "unfinished": true, "wasted_attempt_rate": true,
		"signature_repeat_rate": true, "failed_attempts": true, "unknown": true, "input": true, "output": true,
		"cache_write": true, "retries_total": true, "avg_duration": true, "avg_duration_ms": true, "tokens": true,
		"evidence": true, "backoff": true, "failed_attempt_tokens": true, "failed_attempt_cost": true, "started_at": true,
	}
	headlineColumns = []string{"runs", "calls", "requests", "cost", "cost_usd", "failed", "failures", "retried", "failure_rate", "retry_rate"}
)

// dropOrder is the value columns of header (after the keys, and never
// sorted) in the order fitTable leaves them out.
func dropOrder(header []string, keys, sorted int) []int {
	var details, rest, headline []int
	for j := len(header) - 1; j >= keys; j-- {
		switch {
		case j == sorted:
		case detailColumns[header[j]]:
			details = append(details, j)
		case slices.Contains(headlineColumns, header[j]):
			headline = append(headline, j)
		default:
			rest = append(rest, j)
		}
	}
	// The headline columns go least important first: the last of
	// headlineColumns first.
	slices.SortStableFunc(headline, func(a, b int) int {
		return slices.Index(headlineColumns, header[b]) - slices.Index(headlineColumns, header[a])
	})
	return append(append(details, rest...), headline...)
}

// pick is p with the columns keep says.
func pick(p fitPart, keep []bool) fitPart {
	var out fitPart
	for j, k := range keep {
		if k {
			out.header = append(out.header, p.header[j])
			out.numeric = append(out.numeric, p.numeric[j])
		}
	}
	for _, row := range p.rows {
		var r []string
		for j, k := range keep {
			if k {
				r = append(r, row[j])
			}
		}
		out.rows = append(out.rows, r)
	}
	return out
}

func names(header []string, idx []int) []string {
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = header[j]
	}
	return out
}

// keyWidth is the least a key column keeps while value columns can be
// left out: claude-sonnet-4-5-20250929 as claude-sonnet…20250929.
const keyWidth = 20

// leftOutNote is the line under a table whose columns were left out,
// wrapped to the width.
func leftOutNote(cols []string, width int) string {
	return strings.Join(wrapText(fmt.Sprintf("(left out at %d columns: %s; --wide shows every column)", width, strings.Join(cols, ", ")), width), "\n")
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

// pairParts splits a table whose first two columns are its keys (simulate's
// figure and record) and whose others come in pairs (a policy and its
// difference from the record) into one part per pair, each repeating the
// keys: a policy's figures stay beside their difference and the record.
func pairParts(p fitPart) []fitPart {
	if len(p.header) <= 4 {
		return []fitPart{p}
	}
	var parts []fitPart
	for j := 2; j < len(p.header); j += 2 {
		keep := make([]bool, len(p.header))
		keep[0], keep[1] = true, true
		keep[j] = true
		if j+1 < len(p.header) {
			keep[j+1] = true
		}
		parts = append(parts, pick(p, keep))
	}
	return parts
}

// keyColumns is how many leading columns each part of a split table
// repeats: the fewest (up to 3) that tell its rows apart, so that a row
// of a later part can be matched with its row in the first (By provider
// and model needs provider and model).
func keyColumns(p fitPart) int {
	limit := min(3, len(p.header)-1)
	for k := 1; k < limit; k++ {
		seen := map[string]bool{}
		unique := true
		for _, row := range p.rows {
			key := strings.Join(row[:k], "\x00")
			if seen[key] {
				unique = false
				break
			}
			seen[key] = true
		}
		if unique {
			return k
		}
	}
	return max(1, limit)
}

// unbreakableWidths is, for each column, its widest cell that cannot wrap
// (with wrap, a cell of one word; without, any cell).
func unbreakableWidths(rows [][]string, n int, wrap bool) []int {
	out := make([]int, n)
	for _, row := range rows {
		for j, c := range row {
			if !wrap || oneWord(c) {
				out[j] = max(out[j], twwidth.Width(c))
			}
		}
	}
	return out
}

// distinctWidths is, for each column, the narrowest it can be cut to
// while cells that differ still differ: a cut that makes gemini-2.5-pro
// and gemini-2.5-flash both "gemini-2.5-…" loses the row. With wrap,
// cells of several words are left out: they wrap rather than being cut.
func distinctWidths(rows [][]string, n int, wrap bool) []int {
	out := make([]int, n)
	for j := range n {
		var vals []string
		seen := map[string]bool{}
		for _, row := range rows {
			c := row[j]
			if seen[c] || (wrap && !oneWord(c)) {
				continue
			}
			seen[c] = true
			vals = append(vals, c)
		}
		widest := 0
		for _, v := range vals {
			widest = max(widest, twwidth.Width(v))
		}
		for w := 1; w < widest; w++ {
			cuts := map[string]bool{}
			for _, v := range vals {
				cuts[cut(v, w)] = true
			}
			if len(cuts) == len(vals) {
				out[j] = w
				break
			}
			out[j] = w + 1
		}
	}
	return out
}

// wrapCell wraps a cell as wrapText does, but keeps the items of a list
// ("a; b; c", as several rules' thresholds are shown) whole where it can.
func wrapCell(s string, width int) []string {
	var items []string
	for _, item := range strings.SplitAfter(s, "; ") {
		items = append(items, strings.TrimSuffix(item, " "))
	}
	return pack(items, width, func(item string) []string { return wrapText(item, width) })
}

// wrapText breaks s into lines of at most width display columns, at
// spaces where it can, inside a word longer than a line where it cannot.
// Width 0 leaves s as it is.
func wrapText(s string, width int) []string {
	if width <= 0 || twwidth.Width(s) <= width {
		return []string{s}
	}
	return pack(strings.Split(s, " "), width, func(word string) []string {
		var pieces []string
		for twwidth.Width(word) > width {
			head := twwidth.Truncate(word, width)
			if head == "" {
				break
			}
			pieces = append(pieces, head)
			word = word[len(head):]
		}
		return append(pieces, word)
	})
}

// pack joins tokens with spaces into lines of at most width columns. A
// token wider than a line is broken by split; its pieces are lines of
// their own but the last, which goes on with the tokens that follow.
func pack(tokens []string, width int, split func(string) []string) []string {
	var lines []string
	line := ""
	for _, tok := range tokens {
		if twwidth.Width(tok) > width {
			if line != "" {
				lines = append(lines, line)
				line = ""
			}
			pieces := split(tok)
			lines = append(lines, pieces[:len(pieces)-1]...)
			tok = pieces[len(pieces)-1]
		}
		switch {
		case line == "":
			line = tok
		case twwidth.Width(line)+1+twwidth.Width(tok) <= width:
			line += " " + tok
		default:
			lines = append(lines, line)
			line = tok
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
