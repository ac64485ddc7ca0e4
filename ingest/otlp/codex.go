package otlp

import (
	"sort"

	"github.com/orchstat/orchstat/model/records"
)

// codexGroup is one logical request's codex.api_request events, one per
// HTTP attempt.
type codexGroup struct {
	conv   string
	events []*event
	last   int // the last event's attempt number, 0 when unnumbered
	done   bool
}

// codexCalls groups codex.api_request events into calls. Within a
// conversation, a call is a run of events ended by a success; an event
// whose attempt number is not above the previous one starts a new call.
// Events without conversation.id (the /models listing before a
// conversation starts) are not model calls and are ignored. The first
// codex.sse_event response.completed after a successful call gives its
// tokens.
func (es *events) codexCalls(set *records.Set) {
	open := map[string]*codexGroup{}
	providers := map[string]string{}
	pending := map[string]int{} // conversation -> index of the call awaiting tokens
	ws := map[string]*wsGroup{}
	flush := func(g *codexGroup) {
		if g != nil && len(g.events) > 0 {
			es.codexCall(set, g)
			if g.done {
				pending[g.conv] = len(set.Calls) - 1
			}
		}
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
		case "sse_event":
			if i, ok := pending[conv]; ok && str(a, "event.kind") == "response.completed" {
				c := &set.Calls[i]
				codexUsage(c, a)
				delete(pending, conv)
			}
		case "api_request":
			delete(pending, conv)
			g := open[conv]
			n, numbered := intAttr(a, "attempt")
			if g == nil || g.done || numbered && g.last > 0 && n <= g.last {
				flush(g)
				g = &codexGroup{conv: conv}
				open[conv] = g
			}
			g.events, g.last, g.done = append(g.events, e), n, codexOK(e)
			if g.done {
				flush(g)
				delete(open, conv)
			}
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
	n := len(g.events)
	for _, e := range g.events {
		if a, ok := intAttr(e.attrs(), "attempt"); ok {
			n = max(n, a)
		}
	}
	call := records.Call{System: records.OTel, RunID: g.conv, Session: g.conv,
		CallID: es.callID("", first), Source: sourceCodex, Line: last.line, TS: first.ts,
		Model: str(first.attrs(), "model"), Operation: "chat", Success: records.Bool(g.done),
		StatusCode: intPtr(la, "http.response.status_code"), DurationMS: wallClock(first, last),
		Attempts: records.Int(n), Evidence: records.EvidenceAttribute}
	if !g.done {
		call.Error = excerpt(str(la, "error.message"))
	}
	set.Calls = append(set.Calls, call)
	for i, e := range g.events {
		set.CallAttempts = append(set.CallAttempts, eventAttempt(call, i+1, e, codexOK(e), "error.message"))
	}
}
