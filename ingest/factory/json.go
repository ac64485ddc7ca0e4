package factory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/records"
)

// The factory writes its records with Python's json module. encoding/json
// into map[string]any would read them, but it forgets where each value
// was, and a wrong-typed field must be reported by line. So records are
// decoded into a tree of nodes that keep their byte offsets.

type kind uint8

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

func (k kind) String() string {
	switch k {
	case kBool:
		return "true or false"
	case kNumber:
		return "a number"
	case kString:
		return "a string"
	case kArray:
		return "an array"
	case kObject:
		return "an object"
	}
	return "null"
}

// node is one decoded JSON value.
type node struct {
	kind kind
	off  int64 // of the value's first byte, within the decoded text
	str  string
	num  json.Number
	b    bool
	arr  []*node
	obj  map[string]*node // a repeated key keeps its last value, as encoding/json does
}

// maxDepth bounds nesting as encoding/json does, so that hostile input
// cannot exhaust the stack.
const maxDepth = 10000

// text is a decoded JSON text and where it sits in its file, so that
// offsets within it become file lines and offsets.
type text struct {
	b    []byte
	line int   // line of b's first byte in the file
	base int64 // offset of b's first byte in the file
}

// locate turns an offset within t into a located error.
func (t text) errAt(off int64, field, msg string) *records.Error {
	if off < 0 {
		off = 0
	}
	if off > int64(len(t.b)) {
		off = int64(len(t.b))
	}
	return &records.Error{
		Line:   t.line + bytes.Count(t.b[:off], []byte{'\n'}),
		Offset: t.base + off,
		Field:  field,
		Msg:    msg,
	}
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// decode reads exactly one JSON value from t.
func decode(t text) (*node, *records.Error) {
	if bytes.HasPrefix(t.b, bom) {
		t.b = t.b[len(bom):]
		t.base += int64(len(bom))
	}
	d := &decoder{t: t, dec: json.NewDecoder(bytes.NewReader(t.b))}
	d.dec.UseNumber()
	n, err := d.value(0)
	if err != nil {
		return nil, err
	}
	off := d.dec.InputOffset()
	if _, terr := d.dec.Token(); !errors.Is(terr, io.EOF) {
		return nil, t.errAt(d.skipSpace(off), "", "data after the JSON value")
	}
	return n, nil
}

type decoder struct {
	t   text
	dec *json.Decoder
}

// skipSpace moves off past white space and the separators the decoder
// consumes with the next token, to the first byte of that token.
func (d *decoder) skipSpace(off int64) int64 {
	for off < int64(len(d.t.b)) {
		switch d.t.b[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

func (d *decoder) fail(err error) *records.Error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return d.t.errAt(se.Offset, "", "not JSON: "+se.Error())
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if len(bytes.TrimSpace(d.t.b)) == 0 {
			return d.t.errAt(0, "", "empty")
		}
		return d.t.errAt(int64(len(d.t.b)), "", "not JSON: unexpected end of input")
	}
	return d.t.errAt(d.dec.InputOffset(), "", "not JSON: "+err.Error())
}

func (d *decoder) value(depth int) (*node, *records.Error) {
	off := d.skipSpace(d.dec.InputOffset())
	tok, err := d.dec.Token()
	if err != nil {
		return nil, d.fail(err)
	}
	n := &node{off: off}
	switch v := tok.(type) {
	case nil:
		n.kind = kNull
	case bool:
		n.kind, n.b = kBool, v
	case json.Number:
		n.kind, n.num = kNumber, v
	case string:
		n.kind, n.str = kString, v
	case json.Delim:
		if depth >= maxDepth {
			return nil, d.t.errAt(off, "", fmt.Sprintf("nested too deep (more than %d levels)", maxDepth))
		}
		if v == '[' {
			n.kind = kArray
			for d.dec.More() {
				e, err := d.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, e)
			}
		} else {
			n.kind, n.obj = kObject, map[string]*node{}
			for d.dec.More() {
				kt, err := d.dec.Token()
				if err != nil {
					return nil, d.fail(err)
				}
				key, _ := kt.(string)
				e, rerr := d.value(depth + 1)
				if rerr != nil {
					return nil, rerr
				}
				n.obj[key] = e
			}
		}
		if _, err := d.dec.Token(); err != nil { // the closing delimiter
			return nil, d.fail(err)
		}
	}
	return n, nil
}

// get is an object's member, or nil when n is not an object or lacks it.
func (n *node) get(key string) *node {
	if n == nil || n.kind != kObject {
		return nil
	}
	return n.obj[key]
}

// absent reports whether a field is missing or null: both leave the
// record's field nil.
func (n *node) absent() bool { return n == nil || n.kind == kNull }

// fields reads typed fields out of one record, keeping the first error so
// that a reader can read every field and check once.
type fields struct {
	t   text
	err *records.Error
}

func (f *fields) wrong(n *node, path, want string) {
	if f.err == nil {
		f.err = f.t.errAt(n.off, path, fmt.Sprintf("want %s, got %s", want, n.kind))
	}
}

func (f *fields) bad(n *node, path, msg string) {
	if f.err == nil {
		f.err = f.t.errAt(n.off, path, msg)
	}
}

func (f *fields) str(n *node, path string) string {
	if n.absent() {
		return ""
	}
	if n.kind != kString {
		f.wrong(n, path, "a string")
		return ""
	}
	return n.str
}

// integer reads a whole number that fits the store's INTEGER columns.
// Python may write 2.0 for 2; that is still 2.
func (f *fields) integer(n *node, path string) *int {
	if n.absent() {
		return nil
	}
	if n.kind != kNumber {
		f.wrong(n, path, "an integer")
		return nil
	}
	v, err := strconv.ParseInt(n.num.String(), 10, 32)
	if err != nil {
		x, ferr := strconv.ParseFloat(n.num.String(), 64)
		if ferr != nil || x != math.Trunc(x) || x < math.MinInt32 || x > math.MaxInt32 {
			f.bad(n, path, fmt.Sprintf("want an integer from %d to %d, got %s", math.MinInt32, math.MaxInt32, n.num))
			return nil
		}
		v = int64(x)
	}
	return records.Int(int(v))
}

func (f *fields) number(n *node, path string) *float64 {
	if n.absent() {
		return nil
	}
	if n.kind != kNumber {
		f.wrong(n, path, "a number")
		return nil
	}
	x, err := strconv.ParseFloat(n.num.String(), 64)
	if err != nil || math.IsInf(x, 0) {
		f.bad(n, path, "number out of range: "+n.num.String())
		return nil
	}
	return &x
}

func (f *fields) boolean(n *node, path string) *bool {
	if n.absent() {
		return nil
	}
	if n.kind != kBool {
		f.wrong(n, path, "true or false")
		return nil
	}
	return records.Bool(n.b)
}

// timeLayouts are the forms Python writes: isoformat() with and without
// an offset, and strftime with a literal Z.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999"}

// when reads a timestamp; one without an offset is UTC, as the factory's
// are written in UTC ("started_utc").
func (f *fields) when(n *node, path string) *time.Time {
	s := f.str(n, path)
	if s == "" {
		return nil
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			t = t.UTC()
			return &t
		}
	}
	f.bad(n, path, fmt.Sprintf("not a timestamp: %q", s))
	return nil
}

// array reads an array; a missing or null one is empty.
func (f *fields) array(n *node, path string) []*node {
	if n.absent() {
		return nil
	}
	if n.kind != kArray {
		f.wrong(n, path, "an array")
		return nil
	}
	return n.arr
}

// object checks that n is an object (or absent) and returns it.
func (f *fields) object(n *node, path string) *node {
	if n.absent() {
		return nil
	}
	if n.kind != kObject {
		f.wrong(n, path, "an object")
		return nil
	}
	return n
}

// command reads a command as the factory records it: an argv list in
// command results, a string in failure briefs.
func (f *fields) command(n *node, path string) string {
	if n.absent() {
		return ""
	}
	if n.kind == kString {
		return n.str
	}
	if n.kind != kArray {
		f.wrong(n, path, "a string or an array of strings")
		return ""
	}
	argv := make([]string, len(n.arr))
	for i, a := range n.arr {
		if a.kind != kString {
			f.wrong(a, fmt.Sprintf("%s[%d]", path, i), "a string")
			return ""
		}
		argv[i] = a.str
	}
	return joinArgv(argv)
}

// joinArgv joins an argv as Python's shlex.join does, so that a command
// with spaces in an argument reads back as the same argv.
func joinArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}
