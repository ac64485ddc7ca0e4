// Package otlp reads OpenTelemetry data as OTLP JSON: the Collector's file
// exporter output (JSON lines, one TracesData, LogsData or MetricsData
// object per line, traces and logs possibly interleaved in one file) and
// single OTLP/HTTP JSON payloads (one object, possibly pretty-printed),
// and a store's envelope of such payloads (xorcise's records, with
// protobuf-JSON base64 ids).
// Stream reads a collector file a line at a time, so a growing file is
// read on from where the last reading stopped; Parse is the same stream
// fed a whole file. Sniff tells such a file by its first bytes.
//
// What maps to what:
//   - GenAI model-call spans (gen_ai.operation.name chat, generate_content,
//     text_completion, embeddings; Claude Code's claude_code.llm_request;
//     Vercel AI SDK ai.*.doGenerate/doStream; OpenInference LLM and
//     EMBEDDING spans; and LLM spans without an operation name, as
//     OpenLLMetry, Laminar and LiteLLM write them: gen_ai.system or
//     llm.vendor, a model, and usage or llm.request.type) become
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
//     api_retries_exhausted) and Codex's codex.api_request events (over
//     its websocket, codex.websocket_request and websocket_event) become
//     calls grouped per session, with a run per session.
//   - MetricsData lines and other log events are ignored, counted.
//
// What the records cannot say: GenAI semantic conventions have no retry
// attribute, so a call span with no HTTP children, retry events or
// attempt attribute has unknown attempts (never "no retries"); backoff is
// only ever a gap between attempt spans, or recorded by the framework;
// failed attempts' tokens are known only for sibling spans; log events
// record no backoff, and Claude Code's may merge parallel requests.
//
// Reading a growing file: what is open is a trace (its spans, since a
// trace's spans arrive over several lines, children usually first) or an
// agent session (its Claude Code or Codex events). A trace closes once
// its root span (no parentSpanId) has been read and 32 lines pass without
// a span of it; any trace or session closes once 4096 lines pass without
// a span or event of it; past 50,000 spans and events held, the groups
// least recently added to close at once. Closure depends only on the
// sequence of lines, so any split of a file gives one reading's rows. A
// closed group's calls, attempts and runs are final; what comes of its
// trace or session later is a group of its own: a late HTTP child is not
// its call's attempt, a late call's run is named trace#2 (session#2 for
// events), a request open when its session closed is split. Ids handed
// out are remembered by hash (the last 128 run ids, 64 call ids) to keep
// later ids apart: a span id that two traces share is written trace:span
// when they are mapped together and gets #n otherwise; beyond that memory
// an id can repeat. A span id seen twice is caught within its open trace
// only. State is the open spans and events (OTLP protobuf) and those
// hashes: bounded by what is open, not by the file.
package otlp

import (
	"bytes"
	"unicode/utf8"

	"github.com/orchstat/orchstat/model/records"
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
		lead := len(b) - len(trimmed)
		if ps, ok := envelope(trimmed); ok {
			// Each payload is read as a line of its own, numbered where
			// it starts in the file.
			for _, p := range ps {
				s.Line(line+bytes.Count(trimmed[:p.off], []byte("\n")), int64(lead+p.off), p.text)
			}
		} else {
			s.Line(line, int64(lead), bytes.TrimSpace(trimmed))
		}
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
