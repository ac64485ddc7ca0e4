package tracegen

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// jw appends JSON with keys in the order they are written. The orchestrator's
// files come from JSON.stringify, whose key order is insertion order, so
// encoding/json with maps or structs could not reproduce them.
type jw struct {
	b []byte
	// stack holds, per open container, its closing byte and whether a value
	// has been written in it (so the next one needs a comma).
	stack    []frame
	afterKey bool
}

type frame struct {
	closer byte
	filled bool
}

func (j *jw) pre() {
	if j.afterKey {
		j.afterKey = false
		return
	}
	if n := len(j.stack); n > 0 {
		if j.stack[n-1].filled {
			j.b = append(j.b, ',')
		}
		j.stack[n-1].filled = true
	}
}

func (j *jw) key(k string) *jw {
	j.pre()
	j.b = appendJSString(j.b, k)
	j.b = append(j.b, ':')
	j.afterKey = true
	return j
}

func (j *jw) obj() *jw { return j.open('{', '}') }
func (j *jw) arr() *jw { return j.open('[', ']') }

func (j *jw) open(o, c byte) *jw {
	j.pre()
	j.b = append(j.b, o)
	j.stack = append(j.stack, frame{closer: c})
	return j
}

func (j *jw) end() *jw {
	n := len(j.stack) - 1
	j.b = append(j.b, j.stack[n].closer)
	j.stack = j.stack[:n]
	return j
}

func (j *jw) str(v string) *jw   { j.pre(); j.b = appendJSString(j.b, v); return j }
func (j *jw) num(v int64) *jw    { j.pre(); j.b = strconv.AppendInt(j.b, v, 10); return j }
func (j *jw) null() *jw          { j.pre(); j.b = append(j.b, "null"...); return j }
func (j *jw) boolean(v bool) *jw { j.pre(); j.b = strconv.AppendBool(j.b, v); return j }

// float prints like JavaScript's Number#toString for the magnitudes we use
// (costs, confidences): shortest round-trip digits, no exponent.
func (j *jw) float(v float64) *jw {
	j.pre()
	j.b = strconv.AppendFloat(j.b, v, 'f', -1, 64)
	return j
}

func (j *jw) ts(ms int64) *jw {
	j.pre()
	j.b = append(j.b, '"')
	j.b = appendISO(j.b, ms)
	j.b = append(j.b, '"')
	return j
}

func (j *jw) strs(vs []string) *jw {
	j.arr()
	for _, v := range vs {
		j.str(v)
	}
	return j.end()
}

func (j *jw) kstr(k, v string) *jw       { return j.key(k).str(v) }
func (j *jw) knum(k string, v int64) *jw { return j.key(k).num(v) }
func (j *jw) kbool(k string, v bool) *jw { return j.key(k).boolean(v) }

// appendISO formats like Date#toISOString: UTC, milliseconds, trailing Z.
func appendISO(b []byte, ms int64) []byte {
	return time.UnixMilli(ms).UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
}

const hexDigits = "0123456789abcdef"

// appendJSString escapes as JSON.stringify does: only quote, backslash and
// control characters; everything else, including non-ASCII, is written raw.
// Go's encoding/json would also escape <, >, & and U+2028/9, which the real
// writer never does.
func appendJSString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
