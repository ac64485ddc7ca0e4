package otlp

import (
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/orchstat/orchstat/model/records"
)

// wsGroup is one logical request Codex sent over its Responses websocket:
// a codex.websocket_request per request sent (one per attempt), each
// attempt ended by a failed codex.websocket_event or by the
// response.completed codex.sse_event that gives the tokens.
type wsGroup struct {
	conv     string
	reqs     []*event
	ends     []*event // each attempt's ending event; nil while none
	errs     []string
	ok       bool // an attempt completed
	done     bool // completed, or failed with no retry possible yet
	tokensAt *event
}

// failed tells whether the group's current attempt has failed, so the
// next request on the conversation is its retry.
func (g *wsGroup) failed() bool {
	n := len(g.ends)
	return n > 0 && g.ends[n-1] != nil && !g.ok
}

// end ends the current attempt with e: ok, or failed with message.
func (g *wsGroup) end(e *event, ok bool, message string) {
	n := len(g.reqs) - 1
	if g.ends[n] != nil && !ok {
		return // a failure after the attempt ended says nothing new
	}
	g.ends[n], g.errs[n] = e, message
	if ok {
		g.ok, g.done = true, true
	}
}

// codexWebsocket reads one websocket event of a conversation into open,
// flushing a call when it ends. It says whether the event was such an
// event.
func (es *events) codexWebsocket(set *records.Set, open map[string]*wsGroup, e *event, pending map[string]int) bool {
	a := e.attrs()
	conv := str(a, "conversation.id")
	g := open[conv]
	switch e.name {
	case "websocket_request":
		if g != nil && !g.failed() {
			es.wsCall(set, g)
			g = nil
		}
		if g == nil {
			g = &wsGroup{conv: conv}
			open[conv] = g
		}
		g.reqs, g.ends, g.errs = append(g.reqs, e), append(g.ends, nil), append(g.errs, "")
		if !truthy(a, "success") {
			g.end(e, false, excerpt(str(a, "error.message")))
		}
	case "websocket_event":
		if g == nil {
			return true
		}
		switch {
		case !truthy(a, "success"):
			g.end(e, false, excerpt(str(a, "error.message")))
		case str(a, "event.kind") == "response.completed":
			// The tokens follow in codex.sse_event response.completed.
			g.end(e, true, "")
			es.wsCall(set, g)
			delete(open, conv)
			pending[conv] = len(set.Calls) - 1
		}
	case "sse_event":
		if g == nil || str(a, "event.kind") != "response.completed" {
			return false
		}
		if msg := str(a, "error.message"); msg != "" {
			g.end(e, false, excerpt(msg))
			return true
		}
		g.end(e, true, "")
		g.tokensAt = e
		es.wsCall(set, g)
		delete(open, conv)
	default:
		return false
	}
	return true
}

// truthy reads a boolean attribute that Codex writes as a string;
// absent is true (Codex sets it on every websocket event).
func truthy(a pcommon.Map, key string) bool {
	v, ok := a.Get(key)
	return !ok || !strings.EqualFold(strings.TrimSpace(v.AsString()), "false")
}

// wsCall maps one websocket group to a call and its attempts.
func (es *events) wsCall(set *records.Set, g *wsGroup) {
	first := g.reqs[0]
	last := first
	for i := len(g.reqs) - 1; i >= 0; i-- {
		if g.ends[i] != nil {
			last = g.ends[i]
			break
		}
		if i == len(g.reqs)-1 {
			last = g.reqs[i]
		}
	}
	call := records.Call{System: records.OTel, RunID: g.conv, Session: g.conv,
		CallID: es.callID("", first), Source: sourceCodex, Line: last.line, TS: first.ts,
		Model: str(first.attrs(), "model"), Operation: "chat",
		DurationMS: wallClock(first, last),
		Attempts:   records.Int(len(g.reqs)), Evidence: records.EvidenceAttribute}
	n := len(g.reqs) - 1
	switch {
	case g.ok:
		call.Success = records.Bool(true)
	case g.ends[n] != nil:
		call.Success, call.Error = records.Bool(false), g.errs[n]
	}
	if g.tokensAt != nil {
		codexUsage(&call, g.tokensAt.attrs())
	}
	set.Calls = append(set.Calls, call)
	for i, req := range g.reqs {
		att := records.CallAttempt{System: call.System, RunID: call.RunID, CallID: call.CallID,
			Source: call.Source, Attempt: i + 1, TS: req.ts}
		if end := g.ends[i]; end != nil {
			att.DurationMS = wallClock(req, end)
			ok := g.ok && i == n
			att.Success = records.Bool(ok)
			if !ok {
				att.Error = g.errs[i]
			}
		}
		set.CallAttempts = append(set.CallAttempts, att)
	}
}

// flushWebsocket closes the groups the file ends within, in file order:
// a request with no ending event has Success unknown.
func (es *events) flushWebsocket(set *records.Set, open map[string]*wsGroup) {
	var left []*wsGroup
	for _, g := range open {
		left = append(left, g)
	}
	sort.Slice(left, func(i, j int) bool { return left[i].reqs[0].order < left[j].reqs[0].order })
	for _, g := range left {
		es.wsCall(set, g)
	}
}
