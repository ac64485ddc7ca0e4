// Package render draws the reports model as a table, Markdown, JSON, CSV
// or an HTML page, and writes Prometheus textfiles. It does no I/O besides writing the
// output.
package render

import (
	"bytes"
	"encoding"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/orchstat/orchstat/model/reports"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Format is an output format of Render and RenderTable.
type Format string

// The formats. FormatTable is the default for humans; JSON and CSV are for
// programs and keep full precision; HTML is one self-contained page with
// charts (see html.go).
const (
	FormatTable    Format = "table"
	FormatMarkdown Format = "markdown"
	FormatJSON     Format = "json"
	FormatCSV      Format = "csv"
	FormatHTML     Format = "html"
)

// Formats lists the formats of every command that prints tables, in the
// order help text shows them.
var Formats = []Format{FormatTable, FormatMarkdown, FormatJSON, FormatCSV}

// PageFormats are Formats and HTML: the formats of report and simulate,
// whose output is a document worth a page of charts.
var PageFormats = append(Formats[:len(Formats):len(Formats)], FormatHTML)

// ParseFormat returns the Format named s, or an error listing the valid ones.
func ParseFormat(s string) (Format, error) { return parseFormat(s, Formats) }

// ParsePageFormat is ParseFormat for report and simulate (PageFormats).
func ParsePageFormat(s string) (Format, error) { return parseFormat(s, PageFormats) }

func parseFormat(s string, valid []Format) (Format, error) {
	for _, f := range valid {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(valid))
	for i, f := range valid {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown format %q: valid formats are %s", s, strings.Join(names, ", "))
}

// RenderReport writes r to w in format f, the table, Markdown and HTML
// formats as o says; JSON and CSV carry every section whatever o says.
// The output is built in memory first so that an error never leaves half
// a report on w.
//
// Floats are never rounded in JSON and CSV. A non-finite float (a sum that
// overflowed, say) is JSON null, as a value that does not exist is: JSON has
// no such numbers, and a string where readers expect a number or null
// breaks them; the other formats print +Inf, -Inf and NaN. Times are RFC 3339 in UTC; one
// outside years 0000-9999 keeps the same layout with a longer or negative
// year (10000-01-01T00:00:00Z, -0001-01-01T00:00:00Z) rather than failing.
// Table and Markdown output escape control characters in the report's text
// (see escapeControls); JSON and CSV keep it exact.
func RenderReport(w io.Writer, r *reports.Report, f Format, o Options) error {
	if r == nil {
		return errors.New("reports: nil report")
	}
	var buf bytes.Buffer
	var err error
	switch f {
	case FormatTable, FormatMarkdown:
		err = writeReportText(&buf, r, f, o)
	case FormatJSON:
		err = writeJSON(&buf, jsonReport(r))
	case FormatCSV:
		err = writeReportCSV(&buf, r)
	case FormatHTML:
		err = writeReportHTML(&buf, r, o)
	default:
		_, err = ParseFormat(string(f))
	}
	if err != nil {
		return err
	}
	_, err = buf.WriteTo(w)
	return err
}

// RenderTable writes t to w in format f:
//   - table, markdown: the title (if any), then the table; nil cells show as
//     t.Null ("-" when empty), times as RFC 3339 in UTC, floats at full precision; a table without
//     rows shows "(none)". Control characters in the title, column names and
//     cells are escaped (see escapeControls).
//   - json: an array of objects keyed by column name, keys in column order;
//     nil is null, times are RFC 3339 strings in UTC, NaN and ±Inf are null
//     (JSON has no such numbers).
//   - csv: a header of the column names, then one record per row; nil is an
//     empty field.
//   - html: a page holding the table, cells as in csv, nil as in table.
//
// In every format:
//   - []byte shows as text when it is valid UTF-8 and as 0x-hex otherwise, so
//     binary columns stay printable.
//   - Lists, structs and maps are nested JSON values in json output and
//     compact JSON text elsewhere ([1,2], {"a":1}). Map keys become strings
//     (as DuckDB's to_json does) and object keys are sorted: the driver hands
//     over STRUCT fields as a Go map, so their declared order is lost.
//   - *big.Int (HUGEINT) and decimals are exact numbers, a decimal with its
//     scale's digits as DuckDB prints it (0.30 for DECIMAL(3,2)); they are
//     JSON numbers.
//   - An interval reads as DuckDB prints one (see intervalText), e.g.
//     "1 year 2 months 3 days 04:05:06.5", so `orchstat sql` shows what the
//     duckdb CLI would; JSON has it as that string.
//   - A 16-byte array whose type is named UUID is the canonical
//     8-4-4-4-12 hex form. (go-duckdb returns a UUID scanned into any as a
//     plain []byte, which cannot be told from a BLOB here: callers that know
//     the column type should convert it first.)
//   - Times outside years 0000-9999 keep the RFC 3339 layout with a longer or
//     negative year instead of failing.
func RenderTable(w io.Writer, t reports.Table, f Format) error {
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
		null := t.Null
		if null == "" {
			null = "-"
		}
		g := tableGrid(t.Title, t.Columns, rows, null)
		g.peers = t.Peers
		err = writeGrids(&buf, []grid{g}, f, t.Width)
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
	case FormatHTML:
		err = writeTableHTML(&buf, t, rows)
	default:
		_, err = ParseFormat(string(f))
	}
	if err != nil {
		return err
	}
	_, err = buf.WriteTo(w)
	return err
}

// plainCell reduces a cell to nil, string, bool, int64, uint64, float64,
// json.Number (an exact number: *big.Int, a decimal), a UTC time.Time,
// []any (a list of plain cells) or map[string]any (an object of plain
// cells), so each format handles only those.
//
// It knows Go's own types only: the store converts DuckDB's (decimals,
// intervals, UUIDs, maps) before a value reaches a reports.Table.
func plainCell(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string, bool, int64, uint64, float64, json.Number:
		return x
	case time.Time:
		return x.UTC()
	case []byte:
		return bytesCell(x)
	case *big.Int:
		if x == nil {
			return nil
		}
		return json.Number(x.String())
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
	if c, ok := methodCell(v, rv); ok {
		return c
	}
	return kindCell(v, rv)
}

// methodCell is a value that says how it prints: a Stringer, an error, or
// an exact or floating number.
func methodCell(v any, rv reflect.Value) (any, bool) {
	switch x := v.(type) {
	case fmt.Stringer:
		return x.String(), true
	case error:
		return x.Error(), true
	case interface{ Float64() float64 }:
		return x.Float64(), true
	}
	if rv.Kind() != reflect.Struct {
		return nil, false
	}
	// Some types define their conversions on the pointer only: try them on
	// a copy rather than printing the struct's fields.
	p := reflect.New(rv.Type())
	p.Elem().Set(rv)
	switch x := p.Interface().(type) {
	case *big.Int:
		return json.Number(x.String()), true
	case fmt.Stringer:
		return x.String(), true
	case interface{ Float64() float64 }:
		return x.Float64(), true
	}
	return nil, false
}

// kindCell reduces a value by its kind: named numbers, strings and bools
// to their plain type, slices and arrays to lists (bytes to text), maps to
// objects with text keys.
func kindCell(v any, rv reflect.Value) any {
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
	case reflect.Slice:
		if rv.IsNil() {
			return nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return bytesCell(rv.Bytes())
		}
		return listCell(rv)
	case reflect.Array:
		if rv.Type().Elem().Kind() != reflect.Uint8 {
			return listCell(rv)
		}
		b := make([]byte, rv.Len())
		for i := range b {
			b[i] = byte(rv.Index(i).Uint())
		}
		return bytesCell(b)
	case reflect.Map:
		if rv.IsNil() {
			return nil
		}
		// STRUCT (map[string]any) and MAP (a map[any]any).
		obj := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			obj[mapKeyText(it.Key())] = plainCell(it.Value().Interface())
		}
		return obj
	}
	return fmt.Sprint(v)
}

// bytesCell shows b as text when it is valid UTF-8, else as 0x-hex.
func bytesCell(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return "0x" + hex.EncodeToString(b)
}

// listCell converts each element of a slice or array with plainCell.
func listCell(rv reflect.Value) []any {
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = plainCell(rv.Index(i).Interface())
	}
	return out
}

// mapKeyText is a map key as a JSON object key: a string stays itself, any
// other key is its CSV text (numbers, true, times, nested keys as JSON).
func mapKeyText(k reflect.Value) string {
	c := plainCell(k.Interface())
	if c == nil {
		return "null"
	}
	return csvCell(c)
}

// displayCell formats a plainCell value for table and markdown output;
// nil shows as null.
func displayCell(v any, null string) string {
	switch x := v.(type) {
	case nil:
		return null
	case time.Time:
		return x.Format(time.RFC3339)
	}
	return csvCell(v)
}

// csvCell formats a plainCell value for CSV: full precision, nil empty,
// lists and objects as compact JSON.
func csvCell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return csvText(x)
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return formatFloat(x)
	case json.Number:
		return string(x)
	case time.Time:
		// Format, unlike MarshalJSON, accepts any year.
		return x.Format(time.RFC3339Nano)
	case []any, map[string]any:
		var buf bytes.Buffer
		if err := newJSONWriter(&buf).value(reflect.ValueOf(x)); err != nil {
			return fmt.Sprint(x) // unreachable: plain cells always encode
		}
		return buf.String()
	}
	return fmt.Sprint(v)
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
	case int64, uint64, float64, json.Number:
		return true
	}
	return false
}

// writeJSON writes v indented by two spaces, as encoding/json's Encoder
// with SetIndent("", "  ") would, but through jsonWriter so that non-finite
// floats and out-of-range times do not fail. HTML escaping is off because
// reasons and SQL results are shown to people, not embedded in pages.
func writeJSON(buf *bytes.Buffer, v any) error {
	var raw bytes.Buffer
	if err := newJSONWriter(&raw).value(reflect.ValueOf(v)); err != nil {
		return err
	}
	return indentJSON(buf, raw.Bytes())
}

// MarshalJSON is v as indented JSON followed by a newline, the way every
// orchstat command writes JSON: a non-finite float is null (where
// encoding/json fails), and HTML is not escaped.
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeJSON(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func indentJSON(buf *bytes.Buffer, raw []byte) error {
	if err := json.Indent(buf, raw, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	return nil
}

// writeTableJSON writes rows as an array of objects. It writes the objects by
// hand because a map would sort the keys, and column order is part of the
// output.
func writeTableJSON(buf *bytes.Buffer, columns []string, rows [][]any) error {
	var raw bytes.Buffer
	jw := newJSONWriter(&raw)
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
			if err := jw.leaf(col); err != nil {
				return err
			}
			raw.WriteByte(':')
			if err := jw.value(reflect.ValueOf(row[j])); err != nil {
				return err
			}
		}
		raw.WriteByte('}')
	}
	raw.WriteByte(']')
	return indentJSON(buf, raw.Bytes())
}

// jsonWriter writes compact JSON as encoding/json does (struct fields in
// order under their json tags with omitempty and omitzero, sorted map keys,
// Marshalers and TextMarshalers called, HTML escaping off) with two
// differences, which are why it exists:
//   - a non-finite float is null where encoding/json fails;
//   - a time.Time is formatted here as RFC 3339 with nanoseconds, as
//     MarshalJSON does, but a year outside 0000-9999 gives a longer or
//     negative year where MarshalJSON fails.
//
// Finite floats, strings and Marshalers are written by encoding/json itself,
// so they come out byte for byte as before. Embedded struct fields and the
// ",string" option are refused rather than encoded differently: no type
// rendered here uses them.
type jsonWriter struct {
	buf *bytes.Buffer
	enc *json.Encoder
}

func newJSONWriter(buf *bytes.Buffer) *jsonWriter {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return &jsonWriter{buf: buf, enc: enc}
}

var (
	timeType          = reflect.TypeFor[time.Time]()
	numberType        = reflect.TypeFor[json.Number]()
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	jsonNumberSyntax  = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
)

// leaf writes v with encoding/json, less the newline Encode appends. Encode
// writes nothing when it fails.
func (w *jsonWriter) leaf(v any) error {
	if err := w.enc.Encode(v); err != nil {
		return err
	}
	w.buf.Truncate(w.buf.Len() - 1)
	return nil
}

func (w *jsonWriter) value(v reflect.Value) error {
	if !v.IsValid() {
		w.buf.WriteString("null")
		return nil
	}
	t := v.Type()
	switch t {
	case timeType:
		return w.leaf(v.Interface().(time.Time).Format(time.RFC3339Nano))
	case numberType:
		s := v.String()
		if s == "" {
			s = "0" // as encoding/json writes an empty Number
		}
		if !jsonNumberSyntax.MatchString(s) {
			return fmt.Errorf("reports: invalid number literal %q", s)
		}
		w.buf.WriteString(s)
		return nil
	}
	// *time.Time has MarshalJSON too, which must not be called.
	if t.Kind() == reflect.Pointer && t.Elem() == timeType && !v.IsNil() {
		return w.value(v.Elem())
	}
	if t.Implements(marshalerType) || t.Implements(textMarshalerType) {
		return w.leaf(v.Interface())
	}
	// encoding/json also calls pointer-receiver methods on addressable
	// values (a struct field reached through a pointer).
	if pt := reflect.PointerTo(t); v.CanAddr() && (pt.Implements(marshalerType) || pt.Implements(textMarshalerType)) {
		return w.leaf(v.Addr().Interface())
	}
	switch v.Kind() {
	case reflect.Bool:
		w.buf.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.buf.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		w.buf.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			w.buf.WriteString("null") // JSON has no such number; see Render
			return nil
		}
		return w.leaf(v.Interface())
	case reflect.String:
		return w.leaf(v.String())
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			w.buf.WriteString("null")
			return nil
		}
		return w.value(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			w.buf.WriteString("null")
			return nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return w.leaf(v.Bytes()) // base64, as encoding/json
		}
		return w.array(v)
	case reflect.Array:
		return w.array(v)
	case reflect.Map:
		return w.object(v)
	case reflect.Struct:
		return w.structFields(v)
	default:
		return &json.UnsupportedTypeError{Type: t}
	}
	return nil
}

func (w *jsonWriter) array(v reflect.Value) error {
	w.buf.WriteByte('[')
	for i := 0; i < v.Len(); i++ {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		if err := w.value(v.Index(i)); err != nil {
			return err
		}
	}
	w.buf.WriteByte(']')
	return nil
}

// object writes a map with its keys sorted, keyed as encoding/json keys
// them: string kinds as themselves, then TextMarshalers, then integers.
func (w *jsonWriter) object(v reflect.Value) error {
	if v.IsNil() {
		w.buf.WriteString("null")
		return nil
	}
	type entry struct {
		key string
		val reflect.Value
	}
	entries := make([]entry, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		k := it.Key()
		var key string
		switch {
		case k.Kind() == reflect.String:
			key = k.String()
		case k.Type().Implements(textMarshalerType):
			if k.Kind() == reflect.Pointer && k.IsNil() {
				break
			}
			b, err := k.Interface().(encoding.TextMarshaler).MarshalText()
			if err != nil {
				return err
			}
			key = string(b)
		case k.CanInt():
			key = strconv.FormatInt(k.Int(), 10)
		case k.CanUint():
			key = strconv.FormatUint(k.Uint(), 10)
		default:
			return &json.UnsupportedTypeError{Type: v.Type()}
		}
		entries = append(entries, entry{key, it.Value()})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	w.buf.WriteByte('{')
	for i, e := range entries {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		if err := w.leaf(e.key); err != nil {
			return err
		}
		w.buf.WriteByte(':')
		if err := w.value(e.val); err != nil {
			return err
		}
	}
	w.buf.WriteByte('}')
	return nil
}

func (w *jsonWriter) structFields(v reflect.Value) error {
	t := v.Type()
	w.buf.WriteByte('{')
	first := true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		if f.Anonymous {
			return fmt.Errorf("reports: JSON for embedded field %s.%s is not implemented", t, f.Name)
		}
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		fv := v.Field(i)
		skip := false
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				skip = skip || isEmptyJSONValue(fv)
			case "omitzero":
				skip = skip || isZeroJSONValue(fv)
			case "string":
				return fmt.Errorf("reports: JSON option \",string\" of %s.%s is not implemented", t, f.Name)
			}
		}
		if skip {
			continue
		}
		if !first {
			w.buf.WriteByte(',')
		}
		first = false
		if err := w.leaf(name); err != nil {
			return err
		}
		w.buf.WriteByte(':')
		if err := w.value(fv); err != nil {
			return err
		}
	}
	w.buf.WriteByte('}')
	return nil
}

// isEmptyJSONValue is encoding/json's test for omitempty.
func isEmptyJSONValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// isZeroJSONValue is encoding/json's test for omitzero: an IsZero method
// if the type has one, else the zero value.
func isZeroJSONValue(v reflect.Value) bool {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok {
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return true
		}
		return z.IsZero()
	}
	return v.IsZero()
}

// grid is one titled table of display strings: what the table and markdown
// renderers draw for a report section or a Table.
type grid struct {
	title   string
	columns []string
	rows    [][]string
	numeric []bool // right-align this column
	// sorted names the column the rows are sorted by, which a table
	// fitted to a terminal keeps; "" for none.
	sorted string
	// leftOut names the columns its maker left out to fit the terminal
	// (the usage view chooses its own); the line under the table names
	// them with those fitTable leaves out.
	leftOut []string
	// peers: the value columns are peers, split rather than left out
	// (see fitTable).
	peers bool
}

// tableGrid formats plainCell rows for display. A column is numeric when
// every non-nil cell in it is a number.
func tableGrid(title string, columns []string, rows [][]any, null string) grid {
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
			cells[j] = displayCell(v, null)
		}
		g.rows = append(g.rows, cells)
	}
	return g
}

// writeGrids draws each grid under its title, separated by blank lines,
// fitted to width columns (0: not fitted).
func writeGrids(buf *bytes.Buffer, grids []grid, f Format, width int) error {
	for i, g := range grids {
		if i > 0 {
			buf.WriteByte('\n')
		}
		if g.title != "" {
			title := escapeControls(g.title)
			if f == FormatMarkdown {
				title = "## " + title
			}
			for _, line := range wrapText(title, width) {
				buf.WriteString(line + "\n")
			}
			if f == FormatMarkdown {
				buf.WriteByte('\n')
			}
		}
		if len(g.rows) == 0 {
			buf.WriteString("(none)\n")
			continue
		}
		if err := drawGrid(buf, g, f, width); err != nil {
			return fmt.Errorf("reports: rendering %q: %w", g.title, err)
		}
	}
	return nil
}

// drawGrid draws one grid with tablewriter: ASCII borders for the table
// format (safe in logs, mail and any font), GitHub pipe tables for markdown.
// Nothing is coloured, and cells and headers are printed as given except
// for escapeControls (and, in Markdown, an escaped "|").
func drawGrid(w *bytes.Buffer, g grid, f Format, width int) error {
	cfg := tablewriter.NewConfigBuilder().Build()
	// tablewriter upper-cases headers and turns "_" into spaces by default;
	// the column names are the JSON/CSV names and must read the same.
	cfg.Header.Formatting.AutoFormat = tw.Off
	// Wrapping would split run ids and reasons across lines; let the table
	// be as wide as its content instead.
	cfg.Header.Formatting.AutoWrap = tw.WrapNone
	cfg.Row.Formatting.AutoWrap = tw.WrapNone
	escape := escapeControls
	if f == FormatMarkdown {
		escape = func(s string) string { return markdownEscaper.Replace(escapeControls(s)) }
	}
	header := make([]string, len(g.columns))
	for j, c := range g.columns {
		header[j] = escape(c)
	}
	rows := make([][]string, len(g.rows))
	for i, row := range g.rows {
		rows[i] = make([]string, len(row))
		for j, c := range row {
			rows[i][j] = escape(c)
		}
	}
	parts := fitTable(header, rows, g.numeric, slices.Index(g.columns, g.sorted), width, f == FormatTable, g.peers)
	defer func() {
		// One line names every column left out, the maker's and fitTable's.
		left := slices.Clone(g.leftOut)
		if len(parts) > 0 {
			left = append(left, parts[0].leftOut...)
		}
		if len(left) > 0 {
			w.WriteString(leftOutNote(left, width) + "\n")
		}
	}()
	for i, p := range parts {
		if i > 0 {
			w.WriteByte('\n')
		}
		align := make([]tw.Align, len(p.header))
		for j := range align {
			align[j] = tw.AlignLeft
			if p.numeric[j] {
				align[j] = tw.AlignRight
			}
		}
		cfg.Header.Alignment.PerColumn = align
		cfg.Row.Alignment.PerColumn = align
		var rend tw.Renderer
		if f == FormatMarkdown {
			rend = renderer.NewMarkdown()
		} else {
			rend = renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})
		}
		t := tablewriter.NewTable(w, tablewriter.WithRenderer(rend), tablewriter.WithConfig(cfg))
		t.Header(p.header)
		if err := t.Bulk(p.rows); err != nil {
			return err
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	return nil
}

// markdownEscaper keeps a cell inside its pipe-table column: a "|" would end
// the cell. (Newlines, which would end the row, are gone by then: see
// escapeControls.)
var markdownEscaper = strings.NewReplacer("|", `\|`)

// EscapeControls is escapeControls, for text printed outside a table: a
// path or a message that holds a file's name.
func EscapeControls(s string) string { return escapeControls(s) }

// escapeControls makes user text (reasons, raw trace lines, run ids, SQL
// results) safe to print in a table: C0 controls U+0000-U+001F, DEL and C1
// controls U+0080-U+009F are shown as strconv.Quote shows them inside its
// quotes (\x1b, \n, \t, \x7f, \u0085), so an escape sequence cannot drive
// the terminal and a newline or tab cannot break a row. A byte that is not
// valid UTF-8 is shown as \xNN too, as strconv.Quote does, since a terminal
// may read a stray 0x80-0x9f byte as a C1 control. Nothing else changes and
// no quotes are added; a backslash already in the text stays as it is.
func escapeControls(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return isControl(r) || r == utf8.RuneError })
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case isControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// csvText escapes a CSV cell's controls as tables do (escapeControls),
// but for tab, newline and carriage return, which a quoted CSV field holds
// as they are: ESC, NUL and BEL would reach whatever shows the file.
func csvText(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return isControl(r) && r != '\t' && r != '\n' && r != '\r' || r == utf8.RuneError }) {
		return s
	}
	var b strings.Builder
	for _, part := range strings.SplitAfter(s, "\n") {
		line := strings.TrimSuffix(part, "\n")
		for i, field := range strings.Split(line, "\t") {
			if i > 0 {
				b.WriteByte('\t')
			}
			cr := strings.HasSuffix(field, "\r")
			b.WriteString(escapeControls(strings.TrimSuffix(field, "\r")))
			if cr {
				b.WriteByte('\r')
			}
		}
		if len(part) > len(line) {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// isControl reports whether r is a C0 control, DEL, a C1 control, or a
// bidirectional control (U+202A-U+202E, U+2066-U+2069, the marks U+200E,
// U+200F and U+061C), which reorders what a terminal shows after it
// ("Trojan Source").
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// SizeText is a file's size as people read it: 812 bytes, 80 KB, 1.4 MB.
func SizeText(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d bytes", n)
	case n < 10_000:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	case n < 1_000_000:
		return fmt.Sprintf("%.0f KB", float64(n)/1e3)
	case n < 10_000_000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.0f MB", float64(n)/1e6)
}
