package otlp

import (
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/orchstat/orchstat/model/records"
)

// codexGroup is one logical request's codex.api_request events, one per
// HTTP attempt, with how each attempt's response stream ended.
type codexGroup struct {
	conv   string
	events []*event
	// streamErr holds, per attempt, the codex.sse_event that says its
	// stream broke after a 2xx (idle timeout, connection closed before
	// response.completed); nil when none did.
	streamErr []*event
	last      int // the last event's attempt number, 0 when unnumbered
	// done: the last attempt got a 2xx and its stream has not broken (yet).
	done bool
	// retry: the last attempt's stream broke, so the conversation's next
	// api_request is its retry (Codex's stream retry, which restarts the
	// attempt numbers).
	retry    bool
	tokensAt *event // the response.completed that gives the tokens
}

// codexCalls groups codex.api_request events into calls. Within a
// conversation, a call is a run of events ended by a success whose stream
// completed; an event whose attempt number is not above the previous one
// starts a new call, unless the previous attempt's stream broke (a
// codex.sse_event with error.message after a 2xx): Codex then retries the
// stream with its attempt numbers from 0 again, and the retry belongs to
// the same call. A broken stream followed by the conversation's next
// codex.user_prompt, or by the end of the file, ends the call as failed.
// Events without conversation.id (the /models listing before a
// conversation starts) are not model calls and are ignored. The
// codex.sse_event response.completed with token counts gives the call's
// tokens (Codex 0.171 logs response.completed twice, first without them).
func (es *events) codexCalls(set *records.Set) {
	open := map[string]*codexGroup{}
	providers := map[string]string{}
	pending := map[string]int{} // websocket calls awaiting their tokens
	ws := map[string]*wsGroup{}
	flush := func(conv string) {
		if g := open[conv]; g != nil && len(g.events) > 0 {
			es.codexCall(set, g)
		}
		delete(open, conv)
	}
	for _, e := range es.list {
		a := e.attrs()
		conv := str(a, "conversation.id")
		if e.agent != codex || conv == "" {
			continue
		}
		if e.name == "websocket_request" {
			delete(pending, conv)
		}
		if es.codexWebsocket(set, ws, e, pending) {
			continue
		}
		switch e.name {
		case "conversation_starts":
			providers[conv] = provider(str(a, "provider_name"))
		case "user_prompt":
			// A new turn: a call still open (its stream broke and was not
			// retried, or it never completed) is over.
			flush(conv)
		case "sse_event":
			if i, ok := pending[conv]; ok && str(a, "event.kind") == "response.completed" && hasTokens(a) {
				codexUsage(&set.Calls[i], a)
				delete(pending, conv)
				continue
			}
			g := open[conv]
			if g == nil || !g.done {
				continue
			}
			if str(a, "error.message") != "" {
				g.done, g.retry = false, true
				g.streamErr[len(g.streamErr)-1] = e
				continue
			}
			if str(a, "event.kind") == "response.completed" && hasTokens(a) {
				g.tokensAt = e
				flush(conv)
			}
		case "api_request":
			delete(pending, conv)
			g := open[conv]
			n, numbered := intAttr(a, "attempt")
			if g == nil || g.done || !g.retry && numbered && g.last > 0 && n <= g.last {
				flush(conv)
				g = &codexGroup{conv: conv}
				open[conv] = g
			}
			g.events, g.streamErr = append(g.events, e), append(g.streamErr, nil)
			g.last, g.done, g.retry = n, codexOK(e), false
		}
	}
	es.flushCodex(set, open)
	es.flushWebsocket(set, ws)
	for i := range set.Calls {
		if c := &set.Calls[i]; c.Source == sourceCodex && c.Provider == "" {
			c.Provider = providers[c.Session]
		}
	}
}

// hasTokens says whether a codex.sse_event carries token counts.
func hasTokens(a pcommon.Map) bool {
	_, ok := a.Get("input_token_count")
	if !ok {
		_, ok = a.Get("output_token_count")
	}
	return ok
}

// flushCodex closes the groups the file ends within, in file order.
func (es *events) flushCodex(set *records.Set, open map[string]*codexGroup) {
	var left []*codexGroup
	for _, g := range open {
		left = append(left, g)
	}
	sort.Slice(left, func(i, j int) bool { return left[i].events[0].order < left[j].events[0].order })
	for _, g := range left {
		es.codexCall(set, g)
	}
}

// codexOK: a 2xx or 3xx status, or no status and no error.
func codexOK(e *event) bool {
	a := e.attrs()
	if c, ok := intAttr(a, "http.response.status_code"); ok {
		return c >= 200 && c < 400
	}
	return str(a, "error.message") == ""
}

// codexCall maps one group to a call and its attempts.
func (es *events) codexCall(set *records.Set, g *codexGroup) {
	first, last := g.events[0], g.events[len(g.events)-1]
	la := last.attrs()
	// Attempt numbers restart at a stream retry, so a number counts
	// requests only in a group without one.
	n := len(g.events)
	retried := false
	for _, e := range g.streamErr {
		retried = retried || e != nil
	}
	for _, e := range g.events {
		if a, ok := intAttr(e.attrs(), "attempt"); ok && !retried {
			n = max(n, a)
		}
	}
	call := records.Call{System: records.OTel, RunID: g.conv, Session: g.conv,
		CallID: es.callID("", first), Source: sourceCodex, Line: last.line, TS: first.ts,
		Model: str(first.attrs(), "model"), Operation: "chat", Success: records.Bool(g.done),
		StatusCode: intPtr(la, "http.response.status_code"), DurationMS: wallClock(first, last),
		Attempts: records.Int(n), Evidence: records.EvidenceAttribute}
	if end := g.streamErr[len(g.streamErr)-1]; end != nil {
		call.Line, call.DurationMS = end.line, wallClock(first, end)
	}
	if !g.done {
		call.Error = excerpt(str(la, "error.message"))
		if end := g.streamErr[len(g.streamErr)-1]; end != nil {
			call.Error = excerpt(str(end.attrs(), "error.message"))
		}
	}
	if g.tokensAt != nil {
		codexUsage(&call, g.tokensAt.attrs())
		call.Line = g.tokensAt.line
	}
	set.Calls = append(set.Calls, call)
	for i, e := range g.events {
		att := eventAttempt(call, i+1, e, codexOK(e) && g.streamErr[i] == nil, "error.message")
		if end := g.streamErr[i]; end != nil {
			att.Error = excerpt(str(end.attrs(), "error.message"))
		}
		set.CallAttempts = append(set.CallAttempts, att)
	}
}
