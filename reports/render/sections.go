package render

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"

	"github.com/orchstat/orchstat/model/reports"
)

// A report reaches the flat formats (table, markdown, CSV) as a list of
// sections. Each section is described once — its fields or its columns —
// and that one description yields both the grid drawn for people and the
// rows of the long CSV, so a value added to the model is added to every
// format in one place.

// section is one part of a flat report.
type section struct {
	name string // the CSV's section column
	// title is the grid's title, kept when the grid is left out so that
	// the view can still name the section; "" for a CSV-only section.
	title string
	grid  *grid // nil when the table and markdown formats leave it out
	csv   []csvRow
}

// field is one named value: anything plainCell accepts, or a
// reports.Metric, whose CSV row also carries numerator and denominator.
type field struct {
	name  string
	value any
}

// csvRow is one row of the long CSV under its section: the field is the
// metric and value columns.
type csvRow struct {
	key string
	field
}

// fieldsSection lays fields out as a two-column field/value grid titled
// title (none when title is empty) and as CSV rows with an empty key.
func fieldsSection(name, title string, fields []field, numericValues bool) section {
	s := section{name: name, title: title}
	for _, f := range fields {
		s.csv = append(s.csv, csvRow{"", f})
	}
	if title == "" {
		return s
	}
	s.grid = &grid{title: title, columns: []string{"field", "value"}, numeric: []bool{false, numericValues}}
	for _, f := range fields {
		s.grid.rows = append(s.grid.rows, []string{f.name, displayCell(plainCell(f.value), "-")})
	}
	return s
}

// column is one field of a row type: a grid column, and unless value is
// nil a CSV row per row. Columns with a nil value make up the grid's key
// (the CSV says it in its key column instead); columns with a nil text
// appear only in CSV-only sections.
type column[T any] struct {
	name string
	// title, when set, heads the grid's column instead of name: a cell
	// that shows "4.6 s" is not under a heading that says milliseconds,
	// which the CSV's values are.
	title   string
	numeric bool           // right-aligned in the grid
	text    func(T) string // the cell as people read it
	value   func(T) any    // the CSV's value, as for field
}

// rowTable describes a section with one grid row per model row.
type rowTable[T any] struct {
	name    string         // the CSV's section
	title   string         // the grid's title; empty: CSV only
	key     func(T) string // the CSV's key column
	columns []column[T]
	// more, when set, adds CSV rows after the columns' (a row's metrics).
	more func(T) []field
}

func (t rowTable[T]) section(rows []T) section {
	s := section{name: t.name, title: t.title}
	for _, r := range rows {
		k := t.key(r)
		for _, c := range t.columns {
			if c.value != nil {
				s.csv = append(s.csv, csvRow{k, field{c.name, c.value(r)}})
			}
		}
		if t.more != nil {
			for _, f := range t.more(r) {
				s.csv = append(s.csv, csvRow{k, f})
			}
		}
	}
	if t.title == "" {
		return s
	}
	g := &grid{title: t.title, sorted: sortedBy[t.name]}
	for _, c := range t.columns {
		title := c.name
		if c.title != "" {
			title = c.title
		}
		g.columns = append(g.columns, title)
		g.numeric = append(g.numeric, c.numeric)
	}
	for _, r := range rows {
		cells := make([]string, len(t.columns))
		for i, c := range t.columns {
			cells[i] = c.text(r)
		}
		g.rows = append(g.rows, cells)
	}
	s.grid = g
	return s
}

// sortedBy names, for each section whose rows are sorted by one of its
// columns, that column: a table split to fit a terminal keeps it in its
// first part, beside the row's key (see fitTable). The order is the
// store's (query.ReportConcurrently's breakdowns).
var sortedBy = map[string]string{
	"worst_runs_by_retries":    "provider_retries",
	"worst_runs_by_iterations": "repair_iterations",
}

// Column kinds, each shown and written one way.

// keyCol is a grid-only column: the CSV carries it in its key.
func keyCol[T any](name string, text func(T) string) column[T] {
	return column[T]{name: name, text: text}
}

func textCol[T any](name string, get func(T) string) column[T] {
	return column[T]{name: name, text: get, value: func(r T) any { return get(r) }}
}

func intCol[T any](name string, get func(T) int64) column[T] {
	return column[T]{name: name, numeric: true,
		text: func(r T) string { return itoa(get(r)) }, value: func(r T) any { return get(r) }}
}

// rateCol is a ratio shown as a percentage; the CSV keeps its parts.
func rateCol[T any](name string, get func(T) reports.Metric) column[T] {
	return column[T]{name: name, numeric: true,
		text: func(r T) string { return rateText(get(r)) }, value: func(r T) any { return get(r) }}
}

// numCol is a float shown by show (countPtrText, durationText, costText).
func numCol[T any, V float64 | *float64](name string, get func(T) V, show func(V) string) column[T] {
	return column[T]{name: name, numeric: true,
		text: func(r T) string { return show(get(r)) }, value: func(r T) any { return get(r) }}
}

// csvCol is a value only the CSV carries.
func csvCol[T any](name string, get func(T) any) column[T] {
	return column[T]{name: name, value: get}
}

// presentMetrics are the metrics of ms named in order, skipping those ms
// lacks: a missing metric gets no CSV row rather than one claiming null.
func presentMetrics(ms reports.Metrics, order []string) []field {
	var out []field
	for _, n := range order {
		if m, ok := ms[n]; ok {
			out = append(out, field{n, m})
		}
	}
	return out
}

// metricNames are the names of ms, in no order.
func metricNames(ms reports.Metrics) []string {
	names := make([]string, 0, len(ms))
	for n := range ms {
		names = append(names, n)
	}
	return names
}

// grids are the sections' grids, in order, leaving out CSV-only ones.
func grids(sections []section) []grid {
	var out []grid
	for _, s := range sections {
		if s.grid != nil {
			out = append(out, *s.grid)
		}
	}
	return out
}

// csvRecords are the sections' rows as CSV records: section, key, metric,
// value, numerator, denominator.
func csvRecords(sections []section) [][]string {
	var out [][]string
	for _, s := range sections {
		for _, r := range s.csv {
			out = append(out, csvRecord(s.name, r))
		}
	}
	return out
}

func csvRecord(section string, r csvRow) []string {
	if m, ok := r.value.(reports.Metric); ok {
		return []string{section, csvText(r.key), r.name,
			csvCell(plainCell(m.Value)), csvCell(plainCell(m.Numerator)), csvCell(plainCell(m.Denominator))}
	}
	return []string{section, csvText(r.key), r.name, csvCell(plainCell(r.value)), "", ""}
}

// csvHeader heads the long CSV.
var csvHeader = []string{"section", "key", "metric", "value", "numerator", "denominator"}

// writeCSV writes the header and the sections' rows.
func writeCSV(buf *bytes.Buffer, sections []section) error {
	cw := csv.NewWriter(buf)
	cw.Write(csvHeader)
	cw.WriteAll(csvRecords(sections))
	cw.Flush()
	return cw.Error()
}

// joinKey joins the parts of a composite CSV key: "system/stage".
func joinKey(parts ...string) string { return strings.Join(parts, "/") }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
