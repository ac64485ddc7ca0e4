package otlp

import (
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Operations whose spans are model calls.
var modelOps = map[string]bool{
	"chat": true, "generate_content": true, "text_completion": true, "embeddings": true,
}

// traceIndex holds a file's spans by id and by parent.
type traceIndex struct {
	spans    []*span
	agents   map[*span]*span // nearest invoke_agent ancestor, once known
	sessions map[*span]*span // nearest ancestor with a conversation id
	bounds   map[string]*traceBounds
	idCount  map[string]int // spans per span id, across traces
	byID     map[string]*span
	children map[string][]*span // by trace + parent id, in start order
}

func newTraceIndex(spans []*span) *traceIndex {
	t := &traceIndex{spans: spans, byID: map[string]*span{}, children: map[string][]*span{},
		agents: map[*span]*span{}, sessions: map[*span]*span{}, idCount: map[string]int{}}
	for _, s := range spans {
		t.idCount[s.id]++
		t.byID[s.trace+s.id] = s
		if s.parent != "" {
			t.children[s.trace+s.parent] = append(t.children[s.trace+s.parent], s)
		}
	}
	for _, kids := range t.children {
		byStart(kids)
	}
	return t
}

// key names a span in call and run ids: its span id, qualified by its
// trace id when another trace in the file has a span of the same id.
func (t *traceIndex) key(s *span) string {
	if t.idCount[s.id] > 1 {
		return s.trace + ":" + s.id
	}
	return s.id
}

// byStart orders spans by start time, then as read.
func byStart(ss []*span) {
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].StartTimestamp() < ss[j].StartTimestamp() })
}

func (t *traceIndex) parentOf(s *span) *span {
	if s.parent == "" {
		return nil
	}
	return t.byID[s.trace+s.parent]
}

// ancestor returns the nearest ancestor for which ok holds, remembering
// answers in memo so that deep trees stay linear. Parent links within a
// file cannot cycle in valid data; a cycle in bad data ends the walk.
func (t *traceIndex) ancestor(s *span, memo map[*span]*span, ok func(*span) bool) *span {
	var path []*span
	seen := map[*span]bool{s: true}
	var found *span
	for p := t.parentOf(s); p != nil && !seen[p]; p = t.parentOf(p) {
		if ok(p) {
			found = p
			break
		}
		if a, done := memo[p]; done {
			found = a
			break
		}
		seen[p] = true
		path = append(path, p)
	}
	memo[s] = found
	for _, p := range path {
		memo[p] = found
	}
	return found
}

func operation(s *span) string { return str(s.Attributes(), "gen_ai.operation.name") }

// callOperation says whether a span is a model call and its operation.
func callOperation(s *span) (string, bool) {
	op := operation(s)
	if modelOps[op] {
		return op, true
	}
	a := s.Attributes()
	if s.Name() == "claude_code.llm_request" || str(a, "span.type") == "claude_code.llm_request" {
		return "chat", true
	}
	if isVercelCall(s.Name()) && has(a, "ai.model.provider", "gen_ai.system") {
		if op == "" {
			op = "chat"
		}
		return op, true
	}
	if op == "" {
		switch strings.ToUpper(str(a, "openinference.span.kind")) {
		case "LLM":
			return "chat", true
		case "EMBEDDING":
			return "embeddings", true
		}
	}
	if op == "" && isLLMSpan(s) {
		switch str(a, "llm.request.type") {
		case "completion":
			return "text_completion", true
		case "embedding":
			return "embeddings", true
		}
		return "chat", true
	}
	return "", false
}

// isLLMSpan tells the LLM spans of instrumentations that predate
// gen_ai.operation.name (OpenLLMetry/Traceloop, Laminar, OpenLIT): a
// provider in gen_ai.system (OpenLLMetry before 0.20: llm.vendor), a
// model, and token usage, or OpenLLMetry's llm.request.type, or a failure
// (a failed request may record no usage).
func isLLMSpan(s *span) bool {
	a := s.Attributes()
	if !has(a, "gen_ai.system", "gen_ai.provider.name", "llm.vendor") ||
		!has(a, "gen_ai.request.model", "gen_ai.response.model", "llm.request.model", "llm.response.model") {
		return false
	}
	if t := str(a, "llm.request.type"); t == "rerank" {
		return false // no model call of the kinds counted
	}
	return inputTokens(a) != nil || outputTokens(a) != nil || has(a, "llm.usage.total_tokens", "llm.request.type") ||
		str(a, "lmnr.span.type") == "LLM" || failed(s)
}

// isVercelCall matches the Vercel AI SDK's per-attempt spans,
// ai.generateText.doGenerate, ai.streamText.doStream and the like.
func isVercelCall(name string) bool {
	return strings.HasPrefix(name, "ai.") &&
		(strings.HasSuffix(name, ".doGenerate") || strings.HasSuffix(name, ".doStream"))
}

func isAgent(s *span) bool { return operation(s) == "invoke_agent" }

// wrapsCalls tells the spans that frameworks open around a provider
// SDK's own: an LLM span without an operation name (LiteLLM's, OpenLLMetry's)
// or an OpenInference LLM span (LangChain's around OpenAI's). With a
// model-call span below it, it is the same request.
func wrapsCalls(s *span) bool {
	if operation(s) != "" {
		return false
	}
	return isLLMSpan(s) || str(s.Attributes(), "openinference.span.kind") != ""
}

func isTool(s *span) bool {
	a := s.Attributes()
	return operation(s) == "execute_tool" || strings.HasPrefix(s.Name(), "execute_tool ") ||
		s.Name() == "claude_code.tool" || // Claude Code's beta traces
		strings.EqualFold(str(a, "openinference.span.kind"), "TOOL") ||
		str(a, "lmnr.span.type") == "TOOL" || str(a, "traceloop.span.kind") == "tool"
}

// isHTTP tells an HTTP client span by its attributes (current names and
// the pre-1.21 ones).
func isHTTP(s *span) bool {
	return has(s.Attributes(), "http.request.method", "http.response.status_code", "http.method", "http.status_code")
}

func statusCode(s *span) *int {
	return intPtr(s.Attributes(), "http.response.status_code", "http.status_code", "status_code")
}

// failed is the GenAI conventions' failure test: status ERROR or an
// error.type; Claude Code also says success=false.
func failed(s *span) bool {
	a := s.Attributes()
	if s.Status().Code() == ptrace.StatusCodeError || str(a, "error.type") != "" {
		return true
	}
	if v, ok := a.Get("success"); ok && strings.EqualFold(v.AsString(), "false") {
		return true
	}
	return false
}

// errorText is a failed span's message: its status message, else its
// last exception event's message, else an error attribute.
func errorText(s *span) string {
	if m := strings.TrimSpace(s.Status().Message()); m != "" {
		return excerpt(m)
	}
	evs := s.Events()
	for i := evs.Len() - 1; i >= 0; i-- {
		if evs.At(i).Name() == "exception" {
			if m := str(evs.At(i).Attributes(), "exception.message"); m != "" {
				return excerpt(m)
			}
		}
	}
	return excerpt(str(s.Attributes(), "error", "error.message"))
}

// errorType is error.type, else the last exception event's type.
func errorType(s *span) string {
	if t := str(s.Attributes(), "error.type"); t != "" {
		return excerpt(t)
	}
	evs := s.Events()
	for i := evs.Len() - 1; i >= 0; i-- {
		if evs.At(i).Name() == "exception" {
			if t := str(evs.At(i).Attributes(), "exception.type"); t != "" {
				return excerpt(t)
			}
		}
	}
	return ""
}
