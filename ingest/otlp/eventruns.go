package otlp

import (
	"time"

	"github.com/orchstat/orchstat/ingest/records"
)

// runs adds one run per agent session the event calls belong to. Its
// times are the first and last event of the session in the file.
func (es *events) runs(set *records.Set, calls []records.Call) {
	have := map[string]bool{}
	for _, r := range set.Runs {
		have[r.RunID] = true
	}
	tally := map[string]*runTally{}
	var order []string
	for i := range calls {
		c := &calls[i]
		if tally[c.RunID] == nil {
			tally[c.RunID] = &runTally{}
			order = append(order, c.RunID)
		}
		tally[c.RunID].addCall(c)
	}
	for _, id := range order {
		if have[id] {
			continue // a span run of the same id; the calls keep it
		}
		have[id] = true
		t := tally[id]
		agent := claudeCode
		if t.last.Source == sourceCodex {
			agent = codex
		}
		first, last := es.bounds(agent, id)
		d := runDetail{Agent: agent, Scope: es.scope(agent, id), Calls: t.calls, FailedCalls: t.failedCalls}
		set.Runs = append(set.Runs, records.Run{System: records.OTel, RunID: id, Source: t.last.Source,
			Batch: t.last.Session, StartedAt: first, FinishedAt: last, Status: t.status(),
			DurationMS: msBetween(first, last), Tokens: t.tokens, CostUSD: t.cost, Detail: d.json()})
	}
}

// sessionOf is the run an event belongs to.
func sessionOf(e *event) string {
	key := "session.id"
	if e.agent == codex {
		key = "conversation.id"
	}
	return runKey(e.agent, str(e.attrs(), key))
}

// bounds are the times of a session's first and last events.
func (es *events) bounds(agent, id string) (first, last *time.Time) {
	for _, e := range es.list {
		if e.agent != agent || e.ts == nil || sessionOf(e) != id {
			continue
		}
		if first == nil || e.ts.Before(*first) {
			first = e.ts
		}
		if last == nil || e.ts.After(*last) {
			last = e.ts
		}
	}
	return first, last
}

// scope is the instrumentation scope of a session's first event.
func (es *events) scope(agent, id string) string {
	for _, e := range es.list {
		if e.agent == agent && sessionOf(e) == id {
			return e.scope
		}
	}
	return ""
}
