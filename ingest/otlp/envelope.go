package otlp

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
)

// payload is one OTLP object found inside an envelope: its bytes (ids
// made hex) and where it starts in the envelope.
type payload struct {
	off  int
	text []byte
}

// envelope reads a store's export of the OTLP payloads it received: an
// object whose arrays hold objects with a "payload" that is an OTLP
// object, as xorcise writes its traces and logs ({"records":[{"seq":0,
// "payload":{"resourceSpans":...}}], "log_records":[...]}). Such stores
// keep what the SDK sent decoded by the protobuf JSON mapping, whose ids
// are base64, not OTLP JSON's hex; they are turned to hex here, where the
// envelope says what the payload is, and nowhere else (a base64 id in a
// collector line stays a Problem). ok is false for anything else.
func envelope(text []byte) (ps []payload, ok bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(text, &top) != nil {
		return nil, false
	}
	for k := range top {
		if topKeys[k] != 0 {
			return nil, false // an OTLP object itself
		}
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		if _, err := dec.Token(); err != nil { // the key
			return nil, false
		}
		if t, err := dec.Token(); err != nil {
			return nil, false
		} else if t != json.Delim('[') {
			if d, isDelim := t.(json.Delim); isDelim {
				if skipValue(dec, d) != nil {
					return nil, false
				}
			}
			continue
		}
		for dec.More() {
			start := int(dec.InputOffset())
			var el struct {
				Payload json.RawMessage `json:"payload"`
			}
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return nil, false
			}
			if json.Unmarshal(raw, &el) != nil || len(el.Payload) == 0 || el.Payload[0] != '{' {
				continue
			}
			at := bytes.Index(text[start:], el.Payload)
			if at < 0 {
				continue
			}
			ps = append(ps, payload{off: start + at, text: hexPayloadIDs(el.Payload)})
		}
		if _, err := dec.Token(); err != nil { // ]
			return nil, false
		}
	}
	return ps, len(ps) > 0
}

// skipValue reads past the rest of an object or array whose opening
// delimiter was just read.
func skipValue(dec *json.Decoder, open json.Delim) error {
	depth := 1
	for depth > 0 {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// hexPayloadIDs rewrites a payload's base64 trace, span and parent ids as hex.
// A payload that does not decode, or has no base64 id, is kept as it is,
// for the OTLP decoder to judge.
func hexPayloadIDs(p []byte) []byte {
	if !bytes.Contains(p, []byte("=\"")) {
		return p // base64 ids of 8 and 16 bytes end in padding
	}
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return p
	}
	if !fixIDs(v) {
		return p
	}
	out, err := json.Marshal(v)
	if err != nil {
		return p
	}
	return out
}

// fixIDs walks a decoded payload and rewrites, in place, every traceId,
// spanId and parentSpanId that is base64 of 16 or 8 bytes.
func fixIDs(v any) bool {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok {
				if n := idSize[k]; n != 0 {
					if h, ok := base64ID(s, n); ok {
						x[k] = h
						changed = true
					}
				}
				continue
			}
			changed = fixIDs(val) || changed
		}
	case []any:
		for _, e := range x {
			changed = fixIDs(e) || changed
		}
	}
	return changed
}

var idSize = map[string]int{
	"traceId": 16, "trace_id": 16, "spanId": 8, "span_id": 8, "parentSpanId": 8, "parent_span_id": 8,
}

// base64ID is s as hex when s is not hex already and is base64 of n bytes.
func base64ID(s string, n int) (string, bool) {
	if len(s) == 2*n {
		if _, err := hex.DecodeString(s); err == nil {
			return "", false
		}
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != n {
		return "", false
	}
	return hex.EncodeToString(b), true
}
