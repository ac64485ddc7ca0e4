package otlp

import (
	"bytes"
	"encoding/json"
	"regexp"

	"github.com/orchstat/orchstat/model/records"
)

// Top-level keys of the three OTLP data messages, in the lowerCamelCase
// the spec requires and the snake_case pdata also accepts.
var topKeys = map[string]int{
	"resourceSpans": kindTraces, "resource_spans": kindTraces,
	"resourceLogs": kindLogs, "resource_logs": kindLogs,
	"resourceMetrics": kindMetrics, "resource_metrics": kindMetrics,
}

// preScope matches the pre-1.0 instrumentationLibrary* keys, which pdata
// drops without a word. A quote inside a JSON string is escaped, so the
// pattern only matches a key (or a value exactly equal to the name).
var preScope = regexp.MustCompile(`"instrumentation_?[lL]ibrary_?(Spans|Logs|Metrics|spans|logs|metrics)"\s*:`)

// Sniff tells whether a file's first bytes look like OTLP JSON: an object
// whose first key, or a key within the head, is resourceSpans,
// resourceLogs or resourceMetrics.
func Sniff(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	head = bytes.TrimPrefix(head, []byte("\ufeff"))
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(head))
	if _, err := dec.Token(); err == nil {
		if k, err := dec.Token(); err == nil {
			if s, ok := k.(string); ok && topKeys[s] != 0 {
				return true
			}
		}
	}
	return topKeyAnywhere.Match(head)
}

// topKeyAnywhere finds a top-level key later in the head (an unknown
// field may come first); a quote in a JSON string is escaped, so only
// keys match.
var topKeyAnywhere = regexp.MustCompile(`"resource_?(Spans|Logs|Metrics|spans|logs|metrics)"\s*:`)

// isOneObject tells whether the whole file is one JSON object.
func isOneObject(b []byte) bool {
	t := bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("\ufeff")))
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// sniffLine decodes a line's top-level keys and says which message it
// holds, or why it cannot be read.
func sniffLine(text []byte) (kind int, key, why string) {
	if text[0] != '{' {
		return 0, "json", "not a JSON object" + binaryHint(text)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(text, &top); err != nil {
		var first json.RawMessage
		if json.NewDecoder(bytes.NewReader(text)).Decode(&first) == nil {
			return 0, "json", "trailing data after the JSON object"
		}
		return 0, "json", "malformed JSON: " + excerpt(err.Error())
	}
	kinds := map[int]string{}
	for k := range top {
		if n := topKeys[k]; n != 0 {
			kinds[n] = k
		}
	}
	if len(kinds) > 1 {
		return 0, "(top level)", "an object holds more than one of resourceSpans, resourceLogs, resourceMetrics"
	}
	for n, k := range kinds {
		if n != kindMetrics {
			if m := preScope.Find(text); m != nil {
				return 0, k, "pre-1.0 OTLP (" + string(bytes.TrimRight(m, ": \t\r\n")) + ") is not read"
			}
		}
		return n, k, ""
	}
	return 0, "(top level)", "unknown shape: no resourceSpans, resourceLogs or resourceMetrics key"
}

func binaryHint(b []byte) string {
	if looksBinary(b) {
		return " (binary: collector format proto or compression?)"
	}
	return ""
}

// excerpt keeps messages short.
func excerpt(s string) string {
	if len(s) <= 200 {
		return s
	}
	return records.Cut(s, 197) + "..."
}
