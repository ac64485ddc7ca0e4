package trace

import "strconv"

// Payload gives typed access to a payload object's top-level members with
// the semantics METRICS.md relies on: a number is only a JSON number, a
// boolean only a JSON boolean, and a repeated key takes its last value.
type Payload struct {
	keys []string
	vals [][]byte
}

// ParsePayload indexes an object that Parse already validated.
func ParsePayload(obj []byte) Payload {
	var p Payload
	s := scanner{b: obj}
	s.ws()
	_ = s.object(func(key []byte, esc bool, start int) {
		k := string(key)
		if esc {
			k = unescape(key)
		}
		p.keys = append(p.keys, k)
		p.vals = append(p.vals, obj[start:s.i])
	})
	return p
}

// Raw returns a member's JSON text, or nil.
func (p Payload) Raw(key string) []byte {
	for i := len(p.keys) - 1; i >= 0; i-- {
		if p.keys[i] == key {
			return p.vals[i]
		}
	}
	return nil
}

// String returns a string member, or nil when absent or not a string.
func (p Payload) String(key string) *string {
	v := p.Raw(key)
	if len(v) == 0 || v[0] != '"' {
		return nil
	}
	s := stringValue(v)
	return &s
}

// Number returns a numeric member, or nil when absent or not a number.
func (p Payload) Number(key string) *float64 {
	v := p.Raw(key)
	if len(v) == 0 || !(v[0] == '-' || isDigit(v[0])) {
		return nil
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil { // out of range: the grammar was already checked
		return nil
	}
	return &f
}

// Bool returns a boolean member, or nil when absent or not a boolean.
func (p Payload) Bool(key string) *bool {
	v := p.Raw(key)
	var b bool
	switch string(v) {
	case "true":
		b = true
	case "false":
	default:
		return nil
	}
	return &b
}

// Object returns a nested object member's payload view.
func (p Payload) Object(key string) (Payload, bool) {
	v := p.Raw(key)
	if len(v) == 0 || v[0] != '{' {
		return Payload{}, false
	}
	return ParsePayload(v), true
}
