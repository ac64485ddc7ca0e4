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
	// restarted: the attempt numbers started again within the group (a
	// stream retry), so they no longer count its requests.
	restarted bool
}

// gaveUp says the group's last attempt failed with a status Codex does not
// retry (a 4xx other than 408 and 429), so the next request is another
// call even when its attempt number starts again. Any other failure is
// retried: by the request loop, whose attempt numbers go on, or by the
// stream loop, which numbers its requests from 0 again (measured with
// Codex 0.171.0: 500, 500, then after "Reconnecting... 1/1" attempts 0
// and 1 again, with no event between).
func (g *codexGroup) gaveUp() bool {
	if g.retry || len(g.events) == 0 {
		return false
	}
	c, ok := intAttr(g.events[len(g.events)-1].attrs(), "http.response.status_code")
	return ok && c >= 400 && c < 500 && c != 408 && c != 429
}

// codexCalls groups codex.api_request events into calls. Within a
// conversation, a call is a run of events ended by a success whose stream
// completed. The next event after a failed attempt is its retry, even
// when its attempt number starts again: Codex's stream retry (after a
// broken stream, a codex.sse_event with error.message after a 2xx, or
// after its request retries ran out) numbers its requests from 0 again.
// Only a failure Codex does not retry (gaveUp) lets the next event start
// a new call. A failed attempt followed by the conversation's next
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
			restart := numbered && g != nil && n <= g.last
			if g == nil || g.done || restart && g.gaveUp() {
				flush(conv)
				g = &codexGroup{conv: conv}
				open[conv] = g
			} else if restart {
				g.restarted = true
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
	for _, e := range g.events {
		if a, ok := intAttr(e.attrs(), "attempt"); ok && !g.restarted {
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
