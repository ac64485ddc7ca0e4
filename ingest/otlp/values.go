package otlp

import (
	"math"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// str returns the first of keys present as a non-empty value, rendered as
// a string.
func str(m pcommon.Map, keys ...string) string {
	for _, k := range keys {
		if v, ok := m.Get(k); ok {
			if s := strings.TrimSpace(v.AsString()); s != "" {
				return s
			}
		}
	}
	return ""
}

// has tells whether any of keys is present.
func has(m pcommon.Map, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m.Get(k); ok {
			return true
		}
	}
	return false
}

// num reads the first of keys present as a number, leniently: producers
// send intValue (a decimal string on the wire), doubleValue or
// stringValue.
func num(m pcommon.Map, keys ...string) (float64, bool) {
	for _, k := range keys {
		v, ok := m.Get(k)
		if !ok {
			continue
		}
		var f float64
		switch v.Type() {
		case pcommon.ValueTypeInt:
			f = float64(v.Int())
		case pcommon.ValueTypeDouble:
			f = v.Double()
		case pcommon.ValueTypeStr:
			p, err := strconv.ParseFloat(strings.TrimSpace(v.Str()), 64)
			if err != nil {
				continue
			}
			f = p
		default:
			continue
		}
		if !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f, true
		}
	}
	return 0, false
}

// numPtr is num as an optional field.
func numPtr(m pcommon.Map, keys ...string) *float64 {
	if f, ok := num(m, keys...); ok {
		return &f
	}
	return nil
}

// intAttr reads a whole number within int's range.
func intAttr(m pcommon.Map, keys ...string) (int, bool) {
	f, ok := num(m, keys...)
	if !ok || f != math.Trunc(f) || f < -1e9 || f > 1e9 {
		return 0, false
	}
	return int(f), true
}

// intPtr is intAttr as an optional field.
func intPtr(m pcommon.Map, keys ...string) *int {
	if n, ok := intAttr(m, keys...); ok {
		return &n
	}
	return nil
}

// when converts an OTLP timestamp; 0 means unset.
func when(ts pcommon.Timestamp) *time.Time {
	if ts == 0 {
		return nil
	}
	t := time.Unix(0, int64(ts)).UTC()
	return &t
}

// msBetween is b - a in milliseconds, nil unless both are known and b is
// not before a.
func msBetween(a, b *time.Time) *float64 {
	if a == nil || b == nil || b.Before(*a) {
		return nil
	}
	d := float64(b.Sub(*a).Microseconds()) / 1000
	return &d
}

// renamed maps deprecated gen_ai.system values to gen_ai.provider.name's.
var renamed = map[string]string{
	"az.ai.inference": "azure.ai.inference",
	"az.ai.openai":    "azure.ai.openai",
	"vertex_ai":       "gcp.vertex_ai",
	"gemini":          "gcp.gemini",
	"xai":             "x_ai",
}

// provider normalises a provider name: lower case, old names renamed,
// and a framework's dotted value ("openai.chat", Vercel's
// ai.model.provider) cut to its first part unless it is a well-known
// dotted name.
func provider(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if r, ok := renamed[s]; ok {
		return r
	}
	if !strings.Contains(s, ".") || s == "aws.bedrock" || s == "ibm.watsonx.ai" ||
		strings.HasPrefix(s, "gcp.") || strings.HasPrefix(s, "azure.") {
		return s
	}
	first, _, _ := strings.Cut(s, ".")
	if r, ok := renamed[first]; ok {
		return r
	}
	return first
}

// add sums optional numbers; nil when both are.
func add(a, b *float64) *float64 {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		v := *b
		return &v
	case b == nil:
		v := *a
		return &v
	}
	s := *a + *b
	return &s
}
