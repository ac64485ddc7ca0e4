package trace

import (
	"fmt"
	"sort"
	"strconv"
)

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
	s := scanner{b: obj, trusted: true}
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

// Keys lists the member names, each once, sorted.
func (p Payload) Keys() []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range p.keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
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
	// Out of range, ParseFloat gives ±Inf with an error: it is still a JSON
	// number, and keeps its sign (1e999 retries is a retry).
	f, _ := strconv.ParseFloat(string(v), 64)
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

// SyntaxError locates invalid JSON, or JSON nested too deep to read.
type SyntaxError struct {
	Offset int
	Deep   bool
}

func (e *SyntaxError) Error() string {
	if e.Deep {
		return fmt.Sprintf("nested too deep (more than %d levels) near byte %d", maxDepth, e.Offset+1)
	}
	return fmt.Sprintf("syntax error near byte %d", e.Offset+1)
}

// ParseObject validates a whole JSON document and indexes it when it is an
// object. ok is false for valid JSON that is not an object.
func ParseObject(doc []byte) (p Payload, ok bool, err error) {
	s := scanner{b: doc}
	s.ws()
	if s.i >= len(doc) {
		return p, false, &SyntaxError{Offset: s.i}
	}
	if doc[s.i] != '{' {
		if err := s.value(); err != nil {
			return p, false, &SyntaxError{Offset: s.i, Deep: err == errTooDeep}
		}
		s.ws()
		if s.i != len(doc) {
			return p, false, &SyntaxError{Offset: s.i}
		}
		return p, false, nil
	}
	start := s.i
	if err := s.object(nil); err != nil {
		return p, false, &SyntaxError{Offset: s.i, Deep: err == errTooDeep}
	}
	end := s.i
	s.ws()
	if s.i != len(doc) {
		return p, false, &SyntaxError{Offset: s.i}
	}
	return ParsePayload(doc[start:end]), true, nil
}

// Array returns the elements of an array member as JSON texts, or nil when
// absent or not an array.
func (p Payload) Array(key string) [][]byte {
	v := p.Raw(key)
	if len(v) == 0 || v[0] != '[' {
		return nil
	}
	s := scanner{b: v, i: 1}
	out := [][]byte{}
	s.ws()
	if s.i < len(v) && v[s.i] == ']' {
		return out
	}
	for s.i < len(v) {
		s.ws()
		start := s.i
		if s.value() != nil {
			return out // cannot happen: the document was validated
		}
		out = append(out, v[start:s.i])
		s.ws()
		if s.i < len(v) && v[s.i] == ',' {
			s.i++
			continue
		}
		break
	}
	return out
}

// StringOf decodes a JSON string text, or returns nil for anything else.
func StringOf(v []byte) *string {
	if len(v) == 0 || v[0] != '"' {
		return nil
	}
	s := stringValue(v)
	return &s
}
