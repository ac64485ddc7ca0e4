package claudecode

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/orchstat/orchstat/model/records"
)

// Transcript lines are decoded into json.RawMessage fields first, so that a
// field of the wrong type is reported by name instead of failing the whole
// line with encoding/json's type error, and fields no version we know
// writes are never looked at.

// fieldError is a field of a known record that has the wrong type.
type fieldError struct{ field, msg string }

func absent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// str reads an optional string; null and absent are "".
func str(raw json.RawMessage, field string) (string, *fieldError) {
	if absent(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", &fieldError{field, "not a string"}
	}
	return s, nil
}

// boolean reads an optional boolean; null and absent are false.
func boolean(raw json.RawMessage, field string) (bool, *fieldError) {
	if absent(raw) {
		return false, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		return false, &fieldError{field, "not true or false"}
	}
	return b, nil
}

// number reads an optional non-negative finite number.
func number(raw json.RawMessage, field string) (*float64, *fieldError) {
	if absent(raw) {
		return nil, nil
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, &fieldError{field, "not a number"}
	}
	if f < 0 {
		return nil, &fieldError{field, "negative"}
	}
	return &f, nil
}

// maxCount bounds counts (retry attempts, budgets, status codes): Claude
// Code's default budget is 10 retries, and a count past this is garbage.
const maxCount = 1_000_000

// count reads an optional whole number in [0, maxCount].
func count(raw json.RawMessage, field string) (*int, *fieldError) {
	f, err := number(raw, field)
	if err != nil || f == nil {
		return nil, err
	}
	if *f != math.Trunc(*f) || *f > maxCount {
		return nil, &fieldError{field, "not a whole number up to " + strconv.Itoa(maxCount)}
	}
	n := int(*f)
	return &n, nil
}

// timestamp reads an optional ISO-8601 time as UTC.
func timestamp(raw json.RawMessage, field string) (*time.Time, *fieldError) {
	s, err := str(raw, field)
	if err != nil || s == "" {
		return nil, err
	}
	t, perr := time.Parse(time.RFC3339Nano, s)
	if perr != nil {
		return nil, &fieldError{field, "not an ISO-8601 time: " + records.Cut(strconv.Quote(s), 60)}
	}
	t = t.UTC()
	return &t, nil
}

// object decodes an optional object into v; ok is false when it is not one.
func object(raw json.RawMessage, v any) (present, ok bool) {
	if absent(raw) {
		return false, true
	}
	t := bytes.TrimSpace(raw)
	if t[0] != '{' {
		return true, false
	}
	return true, json.Unmarshal(t, v) == nil
}

// lenientStatus reads an HTTP status inside an error object, which the
// Anthropic SDK's serialisation writes as a number and which other shapes
// may write as text; anything else is no status.
func lenientStatus(raw json.RawMessage) *int {
	if absent(raw) {
		return nil
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		v, err := strconv.Atoi(s)
		if err != nil {
			return nil
		}
		f = float64(v)
	}
	if f < 100 || f > 999 || f != math.Trunc(f) {
		return nil
	}
	n := int(f)
	return &n
}

// lenientString reads a string inside an error object; other types are "".
func lenientString(raw json.RawMessage) string {
	var s string
	if absent(raw) || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
