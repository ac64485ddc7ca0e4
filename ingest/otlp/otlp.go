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

// Parse reads one OTLP JSON file whole: the same Stream a growing file
// is read with, fed every line, or, when the whole file is one JSON
// object (an OTLP/HTTP payload, possibly pretty-printed), that object as
// one line. Lines that cannot be read are Problems; a file with no OTLP
// object at all, or a binary one, is an error.
func Parse(path string, b []byte) (*records.Set, error) {
	set, _, err := parse(b)
	return set, err
}

func parse(b []byte) (*records.Set, stats, error) {
	s := newStream(defaults)
	if isOneObject(b) {
		trimmed := bytes.TrimLeft(b, " \t\r\n")
		line := 1 + bytes.Count(b[:len(b)-len(trimmed)], []byte("\n"))
		s.Line(line, int64(len(b)-len(trimmed)), bytes.TrimSpace(trimmed))
	} else {
		records.FeedLines(s, b, 0, 0)
	}
	set := s.Final()
	open, err := s.Open()
	if err != nil {
		return nil, s.st, err
	}
	set.Merge(open)
	return set, s.st, nil
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
