package otlp

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/orchstat/orchstat/model/records"
)

// Sources of call rows, so users can tell spans from either agent's
// events.
const (
	sourceSpan       = "span"
	sourceClaudeCode = "claude_code_event"
	sourceCodex      = "codex_event"
)

// callSpan is a model-call span and what it shows of its own attempts.
type callSpan struct {
	*span
	op  string
	idx int // order in the file
	ev  evidence
}

// evidence is what one span shows of its attempts; kind is a
// records.Evidence* value.
type evidence struct {
	kind     string
	attempts *int
	backoff  *float64
	http     []*span
}

// calls maps the file's model-call spans to calls and attempts.
func (t *traceIndex) calls(set *records.Set) {
	var cs []*callSpan
	isCall := map[*span]bool{}
	for _, s := range t.spans {
		if _, ok := callOperation(s); ok {
			isCall[s] = true
		}
	}
	for _, s := range t.spans {
		op, ok := callOperation(s)
		switch {
		case ok && wrapsCalls(s) && t.insideCall(s, isCall):
			// A framework's span around a provider SDK's (litellm.completion
			// around openai.chat): one request, counted once, as the inner.
			set.Ignore("LLM span around another model-call span")
		case ok:
			cs = append(cs, &callSpan{span: s, op: op, idx: len(cs), ev: t.ownEvidence(s)})
		case isAgent(s) || isTool(s):
		case isHTTP(s) && isCall[t.parentOf(s)]:
		default:
			set.Ignore(ignoredSpan(s))
		}
	}
	for _, g := range siblingGroups(cs) {
		if len(g) == 1 {
			t.singleCall(set, g[0])
		} else {
			t.siblingCall(set, g)
		}
	}
}

// insideCall reports whether a span has a model-call span below it. Bad
// data can make parent links cycle; each span is looked at once.
func (t *traceIndex) insideCall(s *span, isCall map[*span]bool) bool {
	seen := map[*span]bool{s: true}
	todo := []*span{s}
	for len(todo) > 0 {
		x := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, c := range t.children[x.trace+x.id] {
			if isCall[c] {
				return true
			}
			if !seen[c] {
				seen[c] = true
				todo = append(todo, c)
			}
		}
	}
	return false
}

// ignoredSpan says why a span gives no row.
func ignoredSpan(s *span) string {
	a := s.Attributes()
	switch {
	case isHTTP(s):
		return "HTTP span outside any model call"
	case operation(s) != "":
		return "span of operation " + operation(s) + ", not a model call"
	case str(a, "openinference.span.kind") != "":
		return "OpenInference " + strings.ToUpper(str(a, "openinference.span.kind")) + " span, not a model call"
	case has(a, "gen_ai.system", "gen_ai.provider.name"):
		return "gen_ai.system without a model and token usage"
	}
	return "no GenAI attributes (not a model call, agent or tool)"
}

// baseCall is what a call span says of itself.
func (t *traceIndex) baseCall(c *callSpan) records.Call {
	s, a := c.span, c.Attributes()
	start, end := when(s.StartTimestamp()), when(s.EndTimestamp())
	call := records.Call{
		System: records.OTel, RunID: t.runOf(s), Session: t.session(s),
		CallID: t.key(s), Source: sourceSpan, Line: s.line,
		TS: start, DurationMS: msBetween(start, end),
		Provider: provider(str(a, "gen_ai.provider.name", "gen_ai.system", "ai.model.provider",
			"llm.provider", "llm.system", "llm.vendor")),
		Model: str(a, "gen_ai.request.model", "gen_ai.response.model", "ai.model.id",
			"llm.model_name", "embedding.model_name", "llm.request.model", "llm.response.model", "model"),
		Operation:  c.op,
		Success:    records.Bool(!failed(s)),
		StatusCode: t.callStatus(s),
		Evidence:   records.EvidenceNone,
	}
	if failed(s) {
		call.Error, call.ErrorType = errorText(s), errorType(s)
	}
	spanUsage(&call, s.Name(), a)
	call.CostUSD = numPtr(a, "llm.cost.total") // OpenInference's stated cost
	return call
}

func inputTokens(a pcommon.Map) *float64 {
	return numPtr(a, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
		"ai.usage.inputTokens", "ai.usage.promptTokens", "llm.token_count.prompt", "llm.usage.prompt_tokens",
		"input_tokens")
}

func outputTokens(a pcommon.Map) *float64 {
	return numPtr(a, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
		"ai.usage.outputTokens", "ai.usage.completionTokens", "llm.token_count.completion", "llm.usage.completion_tokens",
		"output_tokens")
}

// callStatus is the span's own HTTP status, else its last HTTP child's.
func (t *traceIndex) callStatus(s *span) *int {
	if c := statusCode(s); c != nil {
		return c
	}
	kids := t.httpChildren(s)
	for i := len(kids) - 1; i >= 0; i-- {
		if c := statusCode(kids[i]); c != nil {
			return c
		}
	}
	return nil
}

// runOf is the nearest invoke_agent ancestor's id, else the trace id.
func (t *traceIndex) runOf(s *span) string {
	if a := t.ancestor(s, t.agents, isAgent); a != nil {
		return t.key(a)
	}
	return s.trace
}

// session is the conversation id of the span or its nearest ancestor
// that has one.
func (t *traceIndex) session(s *span) string {
	keys := []string{"gen_ai.conversation.id", "session.id", "lmnr.association.properties.session_id"}
	if v := str(s.Attributes(), keys...); v != "" {
		return v
	}
	if a := t.ancestor(s, t.sessions, func(p *span) bool { return str(p.Attributes(), keys...) != "" }); a != nil {
		return str(a.Attributes(), keys...)
	}
	return ""
}

// singleCall adds one span's call, with the attempts its own evidence
// shows.
func (t *traceIndex) singleCall(set *records.Set, c *callSpan) {
	call := t.baseCall(c)
	call.Evidence, call.Attempts, call.BackoffMS = c.ev.kind, c.ev.attempts, c.ev.backoff
	set.Calls = append(set.Calls, call)
	for i, k := range c.ev.http {
		start, end := when(k.StartTimestamp()), when(k.EndTimestamp())
		code := statusCode(k)
		att := records.CallAttempt{System: records.OTel, RunID: call.RunID, CallID: call.CallID,
			Source: sourceSpan, Attempt: i + 1, TS: start, DurationMS: msBetween(start, end),
			Success: records.Bool(!httpFailed(k)), StatusCode: code}
		if httpFailed(k) {
			att.Error = httpError(k)
		}
		if i+1 < len(c.ev.http) {
			att.BackoffMS = gap(k, c.ev.http[i+1])
		}
		set.CallAttempts = append(set.CallAttempts, att)
	}
}

func httpFailed(s *span) bool {
	c := statusCode(s)
	return failed(s) || c != nil && *c >= 400
}

func httpError(s *span) string {
	if e := errorText(s); e != "" {
		return e
	}
	if e := errorType(s); e != "" {
		return e
	}
	if c := s.Attributes(); has(c, "http.response.status_code", "http.status_code") {
		return "HTTP " + str(c, "http.response.status_code", "http.status_code")
	}
	return ""
}

// gap is the time between a's end and b's start: the wait before the
// next attempt, an estimate that includes any client-side work.
func gap(a, b *span) *float64 {
	end, start := when(a.EndTimestamp()), when(b.StartTimestamp())
	if end == nil || start == nil {
		return nil
	}
	if start.Before(*end) {
		return records.Float(0)
	}
	return msBetween(end, start)
}
