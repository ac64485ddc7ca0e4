// Package otlp reads OpenTelemetry data as OTLP JSON: the Collector's file
// exporter output (JSON lines, one TracesData, LogsData or MetricsData
// object per line, traces and logs possibly interleaved in one file) and
// single OTLP/HTTP JSON payloads (one object, possibly pretty-printed).
// Parse reads a file; Sniff tells such a file by its first bytes.
//
// What maps to what:
//   - GenAI model-call spans (gen_ai.operation.name chat, generate_content,
//     text_completion, embeddings; Claude Code's claude_code.llm_request;
//     Vercel AI SDK ai.*.doGenerate/doStream; and LLM spans without an
//     operation name, as OpenLLMetry, Laminar and LiteLLM write them:
//     gen_ai.system, a model, and usage or llm.request.type) become
//     records.Call rows; spans that give no row are counted by reason
//     (records.Set.Ignored).
//     Their attempts come from the first of: child HTTP client spans
//     (http_spans), retry span events (span_events), an attempt attribute
//     (attribute), failed sibling spans of the same parent and model
//     (siblings); else they are unknown (none).
//   - invoke_agent spans become records.Run rows (nested ones are
//     sub-agents); traces with model calls but no invoke_agent span get
//     one run per trace id. execute_tool spans are counted per run.
//   - Claude Code log events (api_request, api_error,
//     api_retries_exhausted) and Codex's codex.api_request events become
//     calls grouped per session, with a run per session.
//   - MetricsData lines and other log events are ignored, counted.
//
// What the records cannot say: GenAI semantic conventions have no retry
// attribute, so a call span with no HTTP children, retry events or
// attempt attribute has unknown attempts (never "no retries"); backoff is
// only ever a gap between attempt spans, or recorded by the framework;
// failed attempts' tokens are known only for sibling spans; log events
// record no backoff, and Claude Code's may merge parallel requests.
package otlp

import (
	"bytes"
	"unicode/utf8"

	"github.com/orchstat/orchstat/ingest/records"
)

// Line kinds, as the top-level key of a line says.
const (
	kindTraces = iota + 1
	kindLogs
	kindMetrics
)

// stats accounts for every non-blank line of a file.
type stats struct {
	lines, traces, logs, metrics, bad int
}

// Parse reads one OTLP JSON file whole. Lines that cannot be read are
// Problems; a file with no OTLP object at all, or a binary one, is an
// error.
func Parse(path string, b []byte) (*records.Set, error) {
	set, _, err := parse(b)
	return set, err
}

func parse(b []byte) (*records.Set, stats, error) {
	var st stats
	body := bytes.TrimLeft(b, " \t\r\n\ufeff")
	body = bytes.TrimPrefix(body, []byte("\ufeff"))
	if len(body) == 0 {
		return &records.Set{}, st, nil
	}
	if body[0] != '{' && looksBinary(body) {
		return nil, st, &records.Error{Line: 1, Field: "format",
			Msg: "binary or length-prefixed content (collector format: proto or compression), not read"}
	}
	f := &file{}
	for _, ln := range splitRecords(b) {
		st.lines++
		switch f.readLine(ln) {
		case kindTraces:
			st.traces++
		case kindLogs:
			st.logs++
		case kindMetrics:
			st.metrics++
		default:
			st.bad++
		}
	}
	if st.traces+st.logs+st.metrics == 0 {
		return nil, st, &records.Error{Line: 1, Field: "resourceSpans",
			Msg: "not OTLP JSON: no line holds resourceSpans, resourceLogs or resourceMetrics"}
	}
	set := f.build()
	return set, st, nil
}

// looksBinary tells a length-prefixed or compressed stream from text that
// merely does not start with an object.
func looksBinary(b []byte) bool {
	head := b[:min(len(b), 64)]
	for len(head) > 0 {
		r, size := utf8.DecodeRune(head)
		if r == utf8.RuneError && size == 1 && len(head) >= utf8.UTFMax {
			return true // not UTF-8: zstd's magic, protobuf varints
		}
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			return true
		}
		head = head[size:]
	}
	return false
}

// record is one JSON object, the line it starts on and its byte offset.
type record struct {
	line   int
	offset int64
	text   []byte
}

// splitRecords returns the file's non-blank lines, or the whole file as
// one record when it is a single JSON value (an OTLP/HTTP payload,
// possibly pretty-printed).
func splitRecords(b []byte) []record {
	if isOneObject(b) {
		trimmed := bytes.TrimLeft(b, " \t\r\n")
		line := 1 + bytes.Count(b[:len(b)-len(trimmed)], []byte("\n"))
		return []record{{line, int64(len(b) - len(trimmed)), bytes.TrimSpace(trimmed)}}
	}
	var out []record
	var offset int64
	for i, ln := range bytes.Split(b, []byte("\n")) {
		at := offset
		offset += int64(len(ln)) + 1
		ln = bytes.TrimSpace(ln)
		if i == 0 {
			ln = bytes.TrimPrefix(ln, []byte("\ufeff"))
		}
		if len(ln) > 0 {
			out = append(out, record{i + 1, at, ln})
		}
	}
	return out
}
