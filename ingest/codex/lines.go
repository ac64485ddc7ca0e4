package codex

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/orchstat/orchstat/model/records"
)

// line is one non-blank line of a rollout (records.Line), with the
// problem and decoding methods this package reads lines with. Its B is
// the stream's, valid only while the line is read: nothing keeps it.
type line records.Line

// envelope is a current rollout line: {"timestamp", "type", "payload"}.
type envelope struct {
	ts      time.Time
	typ     string
	payload json.RawMessage
}

// problem locates a message at a line.
func (l line) problem(field, msg string) *records.Error {
	return &records.Error{Line: l.No, Offset: l.Off, Field: field, Msg: msg}
}

// object decodes a line as a JSON object.
func object(l line) (map[string]json.RawMessage, *records.Error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(l.B, &top); err != nil || top == nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, l.problem("", "not JSON: "+excerpt(se.Error()))
		default:
			return nil, l.problem("", "want a JSON object, got "+excerpt(string(l.B)))
		}
	}
	return top, nil
}

// decodeEnvelope reads a current line's envelope. ok says whether the line
// is an envelope at all (an object with a string type and a payload), so
// that a file none of whose lines is one can be told apart.
func decodeEnvelope(l line) (env envelope, ok bool, perr *records.Error) {
	top, perr := object(l)
	if perr != nil {
		return env, false, perr
	}
	rawType, hasType := top["type"]
	env.payload, ok = top["payload"]
	if !hasType {
		return env, false, l.problem("type", "missing")
	}
	if err := json.Unmarshal(rawType, &env.typ); err != nil || env.typ == "" {
		return env, false, l.problem("type", "want a non-empty string, got "+excerpt(string(rawType)))
	}
	if !ok {
		return env, false, l.problem("payload", "missing")
	}
	rawTS, hasTS := top["timestamp"]
	if !hasTS {
		return env, true, l.problem("timestamp", "missing")
	}
	ts, perr := parseTime(l, "timestamp", rawTS)
	if perr != nil {
		return env, true, perr
	}
	env.ts = ts
	return env, true, nil
}

// parseTime reads an RFC 3339 timestamp string, in UTC.
func parseTime(l line, field string, raw json.RawMessage) (time.Time, *records.Error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return time.Time{}, l.problem(field, "want a string, got "+excerpt(string(raw)))
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, l.problem(field, "not an RFC 3339 time: "+excerpt(s))
	}
	return t.UTC(), nil
}

// decodePayload decodes a payload into v; a wrong-typed field is a
// problem named by its path under payload.
func decodePayload(l line, raw json.RawMessage, v any) *records.Error {
	return decodeAt(l, raw, "payload", v)
}

// decodeAt decodes raw, found at field, into v.
func decodeAt(l line, raw json.RawMessage, field string, v any) *records.Error {
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" && field != "" {
			field += "." + te.Field
		} else if te.Field != "" {
			field = te.Field
		}
		return l.problem(field, "want "+kindName(te.Type.Kind())+", got "+excerpt(te.Value))
	}
	return l.problem(field, excerpt(err.Error()))
}

// kindName names what a Go field wants, in JSON's words.
func kindName(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float64, reflect.Float32, reflect.Int, reflect.Int64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}
