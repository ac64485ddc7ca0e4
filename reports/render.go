package reports

import (
	"bytes"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Format is an output format of Render and RenderTable.
type Format string

// The formats. FormatTable is the default for humans; JSON and CSV are for
// programs and keep full precision.
const (
	FormatTable    Format = "table"
	FormatMarkdown Format = "markdown"
	FormatJSON     Format = "json"
	FormatCSV      Format = "csv"
)

// Formats lists every Format in the order help text shows them.
var Formats = []Format{FormatTable, FormatMarkdown, FormatJSON, FormatCSV}

// ParseFormat returns the Format named s, or an error listing the valid ones.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown format %q: valid formats are %s", s, strings.Join(names, ", "))
}

// Render writes r to w in format f. The output is built in memory first so
// that an error never leaves half a report on w.
func Render(w io.Writer, r *Report, f Format) error {
	if r == nil {
		return errors.New("reports: nil report")
	}
	var buf bytes.Buffer
	var err error
	switch f {
	case FormatTable, FormatMarkdown:
		err = writeGrids(&buf, reportGrids(r), f)
	case FormatJSON:
		err = writeJSON(&buf, jsonReport(r))
	case FormatCSV:
		err = writeReportCSV(&buf, r)
	default:
		_, err = ParseFormat(string(f))
	}
	if err != nil {
		return err
	}
	_, err = buf.WriteTo(w)
	return err
}

// Table is generic tabular output, for commands whose rows are not a Report
// (`orchstat sql`, `orchstat quarantine`).
//
// A cell may be nil, string, bool, any integer or float, time.Time, []byte,
// a pointer to one of these (nil pointers are nil), or anything fmt can
// print. Every row must have one cell per column.
type Table struct {
	Title   string
	Columns []string
	Rows    [][]any
}

// RenderTable writes t to w in format f:
//   - table, markdown: the title (if any), then the table; nil cells show as
//     "-", times as RFC 3339 in UTC, floats at full precision; a table without
//     rows shows "(none)".
//   - json: an array of objects keyed by column name, keys in column order;
//     nil is null, times are RFC 3339 strings in UTC, NaN and ±Inf are the
//     strings "NaN", "+Inf", "-Inf" (JSON has no such numbers).
//   - csv: a header of the column names, then one record per row; nil is an
//     empty field.
//
// In every format []byte shows as text when it is valid UTF-8 and as 0x-hex
// otherwise, so binary columns stay printable.
func RenderTable(w io.Writer, t Table, f Format) error {
	for i, row := range t.Rows {
		if len(row) != len(t.Columns) {
			return fmt.Errorf("reports: table %q row %d has %d cells, want %d", t.Title, i, len(row), len(t.Columns))
		}
	}
	rows := make([][]any, len(t.Rows))
	for i, row := range t.Rows {
		rows[i] = make([]any, len(row))
		for j, v := range row {
			rows[i][j] = plainCell(v)
		}
	}
	var buf bytes.Buffer
	var err error
	switch f {
	case FormatTable, FormatMarkdown:
		err = writeGrids(&buf, []grid{tableGrid(t.Title, t.Columns, rows)}, f)
	case FormatJSON:
		err = writeTableJSON(&buf, t.Columns, rows)
	case FormatCSV:
		cw := csv.NewWriter(&buf)
		cw.Write(t.Columns)
		for _, row := range rows {
			rec := make([]string, len(row))
			for j, v := range row {
				rec[j] = csvCell(v)
			}
			cw.Write(rec)
		}
		cw.Flush()
		err = cw.Error()
	default:
		_, err = ParseFormat(string(f))
	}
	if err != nil {
		return err
	}
	_, err = buf.WriteTo(w)
	return err
}

// plainCell reduces a cell to nil, string, bool, int64, uint64, float64 or a
// UTC time.Time, so each format handles only those.
func plainCell(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string, bool, int64, uint64, float64:
		return x
	case time.Time:
		return x.UTC()
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return "0x" + hex.EncodeToString(x)
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		// A pointer to a plain value (as database/sql scanning gives) is
		// that value; a pointer to another struct (*big.Int, an error)
		// carries the methods that print it.
		if _, isTime := v.(*time.Time); isTime || rv.Elem().Kind() != reflect.Struct {
			return plainCell(rv.Elem().Interface())
		}
	case reflect.Interface:
		if rv.IsNil() {
			return nil
		}
	}
	switch x := v.(type) {
	case fmt.Stringer:
		return x.String()
	case error:
		return x.Error()
	case interface{ Float64() float64 }:
		return x.Float64()
	}
	// Driver types such as duckdb.Decimal (what DuckDB returns for 0.1+0.2)
	// define their conversions on the pointer only: try them on a copy
	// rather than printing the struct's fields.
	if rv.Kind() == reflect.Struct {
		p := reflect.New(rv.Type())
		p.Elem().Set(rv)
		switch x := p.Interface().(type) {
		case fmt.Stringer:
			return x.String()
		case interface{ Float64() float64 }:
			return x.Float64()
		}
	}
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	case reflect.Bool:
		return rv.Bool()
	case reflect.String:
		return rv.String()
	}
	return fmt.Sprint(v)
}

// displayCell formats a plainCell value for table and markdown output.
func displayCell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case time.Time:
		return x.Format(time.RFC3339)
	}
	return csvCell(v)
}

// csvCell formats a plainCell value for CSV: full precision, nil empty.
func csvCell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return formatFloat(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}

// jsonCell converts a plainCell value to what encoding/json should write.
func jsonCell(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return formatFloat(x)
		}
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	return v
}

// formatFloat prints v at full precision the way encoding/json does: plain
// decimals (383, not 383.0 or 3.83e+02), exponents only for tiny or huge
// magnitudes.
func formatFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64) // NaN, +Inf, -Inf
	}
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	return strconv.FormatFloat(v, format, -1, 64)
}

// isNumber reports whether a plainCell value is numeric, so its column is
// right-aligned.
func isNumber(v any) bool {
	switch v.(type) {
	case int64, uint64, float64:
		return true
	}
	return false
}

// writeJSON writes v indented by two spaces. HTML escaping is off because
// reasons and SQL results are shown to people, not embedded in pages.
func writeJSON(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeTableJSON writes rows as an array of objects. It writes the objects by
// hand because a map would sort the keys, and column order is part of the
// output.
func writeTableJSON(buf *bytes.Buffer, columns []string, rows [][]any) error {
	var raw bytes.Buffer
	raw.WriteByte('[')
	for i, row := range rows {
		if i > 0 {
			raw.WriteByte(',')
		}
		raw.WriteByte('{')
		for j, col := range columns {
			if j > 0 {
				raw.WriteByte(',')
			}
			if err := writeJSON(&raw, col); err != nil {
				return err
			}
			raw.WriteByte(':')
			if err := writeJSON(&raw, jsonCell(row[j])); err != nil {
				return err
			}
		}
		raw.WriteByte('}')
	}
	raw.WriteByte(']')
	if err := json.Indent(buf, raw.Bytes(), "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	return nil
}

// grid is one titled table of display strings: what the table and markdown
// renderers draw for a report section or a Table.
type grid struct {
	title   string
	columns []string
	rows    [][]string
	numeric []bool // right-align this column
}

// tableGrid formats plainCell rows for display. A column is numeric when
// every non-nil cell in it is a number.
func tableGrid(title string, columns []string, rows [][]any) grid {
	g := grid{title: title, columns: columns, numeric: make([]bool, len(columns))}
	for j := range columns {
		seen := false
		g.numeric[j] = true
		for _, row := range rows {
			if row[j] != nil {
				seen = true
				g.numeric[j] = g.numeric[j] && isNumber(row[j])
			}
		}
		g.numeric[j] = g.numeric[j] && seen
	}
	for _, row := range rows {
		cells := make([]string, len(row))
		for j, v := range row {
			cells[j] = displayCell(v)
		}
		g.rows = append(g.rows, cells)
	}
	return g
}

// writeGrids draws each grid under its title, separated by blank lines.
func writeGrids(buf *bytes.Buffer, grids []grid, f Format) error {
	for i, g := range grids {
		if i > 0 {
			buf.WriteByte('\n')
		}
		if g.title != "" {
			if f == FormatMarkdown {
				fmt.Fprintf(buf, "## %s\n\n", g.title)
			} else {
				fmt.Fprintf(buf, "%s\n", g.title)
			}
		}
		if len(g.rows) == 0 {
			buf.WriteString("(none)\n")
			continue
		}
		if err := drawGrid(buf, g, f); err != nil {
			return fmt.Errorf("reports: rendering %q: %w", g.title, err)
		}
	}
	return nil
}

// drawGrid draws one grid with tablewriter: ASCII borders for the table
// format (safe in logs, mail and any font), GitHub pipe tables for markdown.
// Nothing is coloured, and cells and headers are printed exactly as given.
func drawGrid(w io.Writer, g grid, f Format) error {
	cfg := tablewriter.NewConfigBuilder().Build()
	// tablewriter upper-cases headers and turns "_" into spaces by default;
	// the column names are the JSON/CSV names and must read the same.
	cfg.Header.Formatting.AutoFormat = tw.Off
	// Wrapping would split run ids and reasons across lines; let the table
	// be as wide as its content instead.
	cfg.Header.Formatting.AutoWrap = tw.WrapNone
	cfg.Row.Formatting.AutoWrap = tw.WrapNone
	align := make([]tw.Align, len(g.columns))
	for i := range align {
		align[i] = tw.AlignLeft
		if g.numeric[i] {
			align[i] = tw.AlignRight
		}
	}
	cfg.Header.Alignment.PerColumn = align
	cfg.Row.Alignment.PerColumn = align

	rows := g.rows
	var rend tw.Renderer
	if f == FormatMarkdown {
		rend = renderer.NewMarkdown()
		rows = make([][]string, len(g.rows))
		for i, row := range g.rows {
			rows[i] = make([]string, len(row))
			for j, c := range row {
				rows[i][j] = markdownEscaper.Replace(c)
			}
		}
	} else {
		rend = renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})
	}
	t := tablewriter.NewTable(w, tablewriter.WithRenderer(rend), tablewriter.WithConfig(cfg))
	t.Header(g.columns)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}

// markdownEscaper keeps a cell inside its pipe-table column: a "|" would end
// the cell and a newline the row.
var markdownEscaper = strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ", "\r", " ")
