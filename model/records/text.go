package records

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// Excerpt is s without surrounding space, cut to at most n bytes without
// splitting a character: the record formats keep error text short.
func Excerpt(s string, n int) string { return Cut(strings.TrimSpace(s), n) }

// Cut shortens s to at most n bytes without splitting a character.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Line is one non-blank line of a JSON-lines file: its 1-based number,
// the offset of its first byte, and its text without the line ending.
type Line struct {
	No  int
	Off int64
	B   []byte
}

// BOM is the UTF-8 byte-order mark some editors put before a file's
// first line.
const BOM = "\uFEFF"

// Lines cuts b into its non-blank lines, after a UTF-8 byte-order mark
// and without CR-LF endings. Blank lines hold no record, so they are
// neither read nor counted, but numbers and offsets are the file's.
func Lines(b []byte) []Line {
	var out []Line
	var off int64
	if bytes.HasPrefix(b, []byte(BOM)) {
		b, off = b[len(BOM):], int64(len(BOM))
	}
	for no := 1; len(b) > 0; no++ {
		raw := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			raw, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		start := off
		off += int64(len(raw)) + 1
		raw = bytes.TrimSuffix(raw, []byte{'\r'})
		if len(bytes.TrimSpace(raw)) > 0 {
			out = append(out, Line{No: no, Off: start, B: raw})
		}
	}
	return out
}
