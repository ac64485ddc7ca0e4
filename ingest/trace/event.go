// Package trace parses the orchestrator's trace.jsonl files: it splits a
// stream into lines, validates each line and extracts the fields orchstat
// indexes. It is pure Go so it can be fuzzed and tested without DuckDB.
package trace

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Event is one accepted trace line. Payload aliases the line's bytes.
type Event struct {
	Type          string
	RunID         string
	Time          time.Time // UTC
	SchemaVersion int64
	HasSchema     bool // schemaVersion was an integer
	Payload       []byte
}

// LineError says why a line was quarantined. Field is the top-level key at
// fault, or "" when the line as a whole is bad.
type LineError struct {
	Field  string
	Reason string
}

func (e *LineError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return fmt.Sprintf("field %q: %s", e.Field, e.Reason)
}

// Parse validates one line (without its newline) and returns the event.
func Parse(line []byte) (Event, *LineError) {
	var ev Event
	raw, le := scanEnvelope(line)
	if le != nil {
		return ev, le
	}
	if ev.Type, le = requiredString("type", raw.typ, raw.typSeen, true); le != nil {
		return ev, le
	}
	if ev.RunID, le = requiredString("runId", raw.run, raw.runSeen, true); le != nil {
		return ev, le
	}
	if ev.Time, le = eventTime(raw.ts, raw.tsSeen); le != nil {
		return ev, le
	}
	if len(raw.payload) == 0 {
		return ev, &LineError{Field: "payload", Reason: "missing"}
	}
	if raw.payload[0] != '{' {
		return ev, &LineError{Field: "payload", Reason: "not a JSON object"}
	}
	ev.Payload = raw.payload
	if n, ok := integer(raw.sv); ok {
		ev.SchemaVersion, ev.HasSchema = n, true
	}
	return ev, nil
}

// rawEnvelope holds the raw values of a line's top-level keys, aliasing
// the line, and which of the required ones were seen.
type rawEnvelope struct {
	typ, run, ts, sv, payload []byte
	typSeen, runSeen, tsSeen  bool
}

// scanEnvelope checks that a line is one JSON object and picks out its
// envelope's values.
func scanEnvelope(line []byte) (rawEnvelope, *LineError) {
	var raw rawEnvelope
	if !utf8.Valid(line) {
		return raw, &LineError{Reason: "invalid UTF-8"}
	}
	s := scanner{b: line}
	s.ws()
	if s.i >= len(line) {
		return raw, &LineError{Reason: "not JSON: empty"}
	}
	isObject := line[s.i] == '{'
	var err error
	if isObject {
		err = s.object(func(key []byte, esc bool, start int) {
			k := string(key)
			if esc {
				k = unescape(key)
			}
			v := line[start:s.i]
			switch k {
			case "type":
				raw.typ, raw.typSeen = v, true
			case "runId":
				raw.run, raw.runSeen = v, true
			case "timestamp":
				raw.ts, raw.tsSeen = v, true
			case "schemaVersion":
				raw.sv = v
			case "payload":
				raw.payload = v
			}
		})
	} else {
		err = s.value()
	}
	if err == nil {
		s.ws()
		if s.i != len(line) {
			err = errSyntax
		}
	}
	if err != nil {
		return raw, &LineError{Reason: "not JSON: " + (&SyntaxError{Offset: s.i, Deep: err == errTooDeep}).Error()}
	}
	if !isObject {
		return raw, &LineError{Reason: "not a JSON object"}
	}
	return raw, nil
}

// eventTime reads the timestamp, a string of an RFC 3339 time in the
// years 1 to 9999.
func eventTime(raw []byte, seen bool) (time.Time, *LineError) {
	text, le := requiredString("timestamp", raw, seen, false)
	if le != nil {
		return time.Time{}, le
	}
	t, err := ParseTime(text)
	if err != nil {
		return time.Time{}, &LineError{Field: "timestamp", Reason: fmt.Sprintf("unparsable timestamp %q", clip(text, 64))}
	}
	if y := t.Year(); y < 1 || y > 9999 {
		return time.Time{}, &LineError{Field: "timestamp", Reason: fmt.Sprintf("timestamp %q is outside the years 1 to 9999 (UTC)", clip(text, 64))}
	}
	// The store keeps microseconds; truncating here keeps every comparison
	// (time filters, a run's start) the same in Go and in SQL.
	return t.Truncate(time.Microsecond), nil
}

func requiredString(field string, raw []byte, seen, nonEmpty bool) (string, *LineError) {
	if !seen {
		return "", &LineError{Field: field, Reason: "missing"}
	}
	if raw[0] != '"' {
		return "", &LineError{Field: field, Reason: "not a string"}
	}
	s := stringValue(raw)
	if nonEmpty && s == "" {
		return "", &LineError{Field: field, Reason: "empty"}
	}
	return s, nil
}

// stringValue decodes a validated JSON string token.
func stringValue(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			_ = json.Unmarshal(raw, &s) // already validated
			return s
		}
	}
	return string(inner)
}

func unescape(key []byte) string {
	q := make([]byte, 0, len(key)+2)
	q = append(append(append(q, '"'), key...), '"')
	return stringValue(q)
}

// integer returns a JSON number token's value when it is an integer that
// fits in int64.
func integer(raw []byte) (int64, bool) {
	if len(raw) == 0 || !(raw[0] == '-' || isDigit(raw[0])) {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ParseTime parses an RFC 3339 timestamp (the orchestrator writes
// 2026-01-29T17:48:11.416Z) and returns it in UTC. The common shape is
// decoded by hand because time.Parse is a visible share of ingest time.
func ParseTime(s string) (time.Time, error) {
	if t, ok := fastTime(s); ok {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// fastTime handles exactly YYYY-MM-DDTHH:MM:SS.mmmZ; anything else, or any
// out-of-range field, falls back to time.Parse so both agree.
func fastTime(s string) (time.Time, bool) {
	if len(s) != 24 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		return time.Time{}, false
	}
	d := func(i, n int) (int, bool) {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	y, ok1 := d(0, 4)
	mo, ok2 := d(5, 2)
	dd, ok3 := d(8, 2)
	h, ok4 := d(11, 2)
	mi, ok5 := d(14, 2)
	se, ok6 := d(17, 2)
	ms, ok7 := d(20, 3)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
		return time.Time{}, false
	}
	if mo < 1 || mo > 12 || dd < 1 || dd > daysIn(mo, y) || h > 23 || mi > 59 || se > 59 {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(mo), dd, h, mi, se, ms*1e6, time.UTC), true
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
