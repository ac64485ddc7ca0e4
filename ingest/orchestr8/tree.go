package orchestr8

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/orchstat/orchstat/model/records"
)

// node is a JSON value with where it was written, so that a problem can
// name its line, and with object keys in their order, so that stages keep
// the order the pipeline wrote them in.
type node struct {
	kind       byte // '{', '[', '"', 'n' (number), 'b' (bool), '0' (null)
	start, end int64
	str        string
	num        json.Number
	b          bool
	keys       []string
	vals       []*node // object values by key index, or array elements
}

// maxDepth bounds nesting: no record nests this deep, and the reader
// recurses once per level.
const maxDepth = 200

// parseTree reads one JSON value that must fill the file. Offsets are
// into b, which the caller has stripped of a byte order mark.
func parseTree(b []byte, field string) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	root, err := readNode(dec, b, 0, "")
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			off := dec.InputOffset()
			return nil, &records.Error{Line: lineOf(b, off), Offset: off, Field: field, Msg: "not JSON: data after the value"}
		}
		return root, nil
	}
	var rec *records.Error
	if errors.As(err, &rec) {
		return nil, rec
	}
	var pe *pathError
	if errors.As(err, &pe) && pe.path != "" {
		field = pe.path
	}
	off := dec.InputOffset()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	msg := err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "unexpected end of file"
		off = int64(len(b))
	}
	return nil, &records.Error{Line: lineOf(b, off), Offset: off, Field: field, Msg: "not JSON: " + msg}
}

// pathError is a syntax error with the path of the value it broke, such
// as "[3].stages.nigel", for the error's Field.
type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// at wraps an error with the path where it happened, once: the innermost
// path is the most precise.
func at(path string, err error) error {
	var pe *pathError
	if errors.As(err, &pe) {
		return err
	}
	return &pathError{path, err}
}

func readNode(dec *json.Decoder, b []byte, depth int, path string) (*node, error) {
	start := tokenStart(b, dec.InputOffset())
	if depth > maxDepth {
		return nil, &records.Error{Line: lineOf(b, start), Offset: start, Field: path,
			Msg: fmt.Sprintf("not JSON: nested too deep (more than %d levels)", maxDepth)}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, at(path, err)
	}
	n := &node{start: start}
	switch t := tok.(type) {
	case json.Delim:
		n.kind = byte(t)
		switch t {
		case '{':
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, at(path, err)
				}
				key, ok := kt.(string)
				if !ok {
					return nil, at(path, fmt.Errorf("object key is not a string"))
				}
				v, err := readNode(dec, b, depth+1, path+"."+key)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, key)
				n.vals = append(n.vals, v)
			}
		case '[':
			for dec.More() {
				v, err := readNode(dec, b, depth+1, fmt.Sprintf("%s[%d]", path, len(n.vals)))
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
		default:
			return nil, at(path, fmt.Errorf("unexpected %q", rune(t)))
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, at(path, err)
		}
	case string:
		n.kind, n.str = '"', t
	case json.Number:
		n.kind, n.num = 'n', t
	case bool:
		n.kind, n.b = 'b', t
	case nil:
		n.kind = '0'
	}
	n.end = dec.InputOffset()
	return n, nil
}

// stripBOM drops a UTF-8 byte order mark, which editors on Windows add.
func stripBOM(b []byte) []byte { return bytes.TrimPrefix(b, []byte("\ufeff")) }

// tokenStart skips the white space and separators before a token.
func tokenStart(b []byte, off int64) int64 {
	for off < int64(len(b)) {
		switch b[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

// lineOf is the 1-based line of a byte offset.
func lineOf(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	if off < 0 {
		off = 0
	}
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// get is an object's value for key; the last one wins when a key repeats,
// as in JSON.parse.
func (n *node) get(key string) *node {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i := len(n.keys) - 1; i >= 0; i-- {
		if n.keys[i] == key {
			return n.vals[i]
		}
	}
	return nil
}

// first is the value of the first of keys the object has, with its key.
func (n *node) first(keys ...string) (*node, string) {
	for _, k := range keys {
		if v := n.get(k); v != nil && v.kind != '0' {
			return v, k
		}
	}
	return nil, ""
}

// raw is the value's text as written, compacted.
func (n *node) raw(b []byte) []byte {
	if n == nil || n.start < 0 || n.end > int64(len(b)) || n.start >= n.end {
		return nil
	}
	var out bytes.Buffer
	if json.Compact(&out, b[n.start:n.end]) != nil {
		return nil
	}
	return out.Bytes()
}

// float reads a number value.
func (n *node) float() (float64, bool) {
	if n == nil || n.kind != 'n' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n.num), 64)
	return f, err == nil
}
