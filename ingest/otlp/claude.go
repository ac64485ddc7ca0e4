package otlp

import (
	"github.com/orchstat/orchstat/model/records"
)

// claudeGroup is one logical request's Claude Code events: its failed
// attempts' api_error events, then its api_request (success) or
// api_retries_exhausted (final failure), or neither when the file ends
// first.
type claudeGroup struct {
	attempts  []*event // api_error events, then the api_request
	ok        *event
	exhausted *event
}

// claudeCalls groups Claude Code's events into calls. Events of one
// request share the session, prompt, model and query source; a group is
// open from its first api_error until an api_request or
// api_retries_exhausted with the same key closes it. Two requests with
// the same key in flight at once (parallel sub-agents of one prompt and
// model) cannot be told apart and merge.
func (es *events) claudeCalls(set *records.Set) {
	open := map[string]*claudeGroup{}
	type keyed struct {
		k string
		g *claudeGroup
	}
	var order []keyed
	latest := map[string]string{} // session, prompt, model -> latest group key
	closeGroup := func(k string) {
		es.claudeCall(set, open[k])
		delete(open, k)
	}
	for _, e := range es.list {
		if e.agent != claudeCode || !claudeEvents[e.name] {
			continue
		}
		a := e.attrs()
		req := str(a, "session.id") + "\x00" + str(a, "prompt.id") + "\x00" + str(a, "model") + "\x00"
		k := req + str(a, "query_source")
		if e.name == "api_retries_exhausted" && open[k] == nil && open[latest[req]] != nil {
			// Its attributes list no query_source: take the latest open
			// request of the session, prompt and model.
			k = latest[req]
		}
		g := open[k]
		if g == nil {
			g = &claudeGroup{}
			open[k] = g
			order = append(order, keyed{k, g})
			latest[req] = k
		}
		switch e.name {
		case "api_error":
			g.attempts = append(g.attempts, e)
		case "api_request":
			g.attempts, g.ok = append(g.attempts, e), e
			closeGroup(k)
		case "api_retries_exhausted":
			g.exhausted = e
			closeGroup(k)
		}
	}
	for _, o := range order {
		if open[o.k] == o.g {
			closeGroup(o.k)
		}
	}
}

// claudeCall maps one group to a call and its attempts.
func (es *events) claudeCall(set *records.Set, g *claudeGroup) {
	evs := g.attempts
	if g.exhausted != nil {
		evs = append(evs[:len(evs):len(evs)], g.exhausted)
	}
	first, last := evs[0], evs[len(evs)-1]
	fa := first.attrs()
	reqID := ""
	if g.ok != nil {
		reqID = str(g.ok.attrs(), "request_id")
	}
	session := str(fa, "session.id")
	call := records.Call{System: records.OTel, RunID: runKey(claudeCode, session), Session: session,
		CallID: es.callID(reqID, first), Source: sourceClaudeCode, Line: last.line, TS: first.ts,
		Provider: "anthropic", Model: str(fa, "model"), Operation: "chat",
		Success: records.Bool(g.ok != nil), Evidence: records.EvidenceNone}
	attempts := 0
	for _, e := range evs {
		if n, ok := intAttr(e.attrs(), "attempt", "total_attempts"); ok {
			attempts = max(attempts, n)
		}
	}
	if g.ok != nil {
		a := g.ok.attrs()
		call.InputTokens, call.OutputTokens, call.CacheReadTokens, call.CacheWriteTokens = claudeUsage(a)
		call.CostUSD, call.StatusCode = numPtr(a, "cost_usd"), intPtr(a, "status_code")
	} else {
		la := last.attrs()
		call.Error, call.StatusCode = excerpt(str(la, "error")), intPtr(la, "status_code")
	}
	switch {
	case len(g.attempts) == 1 && g.ok != nil:
		call.DurationMS = g.ok.duration()
	case g.exhausted != nil:
		call.DurationMS = numPtr(g.exhausted.attrs(), "total_retry_duration_ms")
	default:
		call.DurationMS = wallClock(first, last)
	}
	if n := max(attempts, len(g.attempts)); n > 0 && (len(g.attempts) > 1 || g.ok == nil || attempts > 0) {
		call.Attempts, call.Evidence = records.Int(n), records.EvidenceAttribute
	}
	set.Calls = append(set.Calls, call)
	if call.Attempts == nil || len(g.attempts) == 1 && g.ok != nil {
		return
	}
	for i, e := range g.attempts {
		set.CallAttempts = append(set.CallAttempts, eventAttempt(call, i+1, e, e == g.ok, "error"))
	}
}

// eventAttempt is one attempt an event records.
func eventAttempt(call records.Call, n int, e *event, ok bool, errKey string) records.CallAttempt {
	a := e.attrs()
	att := records.CallAttempt{System: call.System, RunID: call.RunID, CallID: call.CallID,
		Source: call.Source, Attempt: n, TS: e.ts, DurationMS: e.duration(), Success: records.Bool(ok),
		StatusCode: intPtr(a, "status_code", "http.response.status_code")}
	if ok {
		att.InputTokens, att.OutputTokens, att.CacheReadTokens, att.CacheWriteTokens = claudeUsage(a)
		att.CostUSD = numPtr(a, "cost_usd")
	} else {
		att.Error = excerpt(str(a, errKey))
	}
	return att
}

// runKey is the run of an agent's session; events without a session
// share one run per agent.
func runKey(agent, session string) string {
	if session == "" {
		return agent
	}
	return session
}
