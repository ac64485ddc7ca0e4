package otlp

import (
	"time"

	"github.com/orchstat/orchstat/model/records"
)

// runs adds one run per agent session the event calls belong to. Its
// times are the first and last event of the session in the file.
func (es *events) runs(set *records.Set, calls []records.Call) {
	have := map[string]bool{}
	for _, r := range set.Runs {
		have[r.RunID] = true
	}
	seen := es.sessions()
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
		b := seen[agent+"\x00"+id]
		if b == nil {
			b = &sessionSeen{}
		}
		first, last := b.first, b.last
		d := runDetail{Agent: agent, Scope: b.scope, Calls: t.calls, FailedCalls: t.failedCalls}
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

// sessionSeen is what a session's events show: the first and last event
// times and the first event's scope.
type sessionSeen struct {
	first, last *time.Time
	scope       string
}

// sessions sees every event once, by agent and session.
func (es *events) sessions() map[string]*sessionSeen {
	out := map[string]*sessionSeen{}
	for _, e := range es.list {
		k := e.agent + "\x00" + sessionOf(e)
		b := out[k]
		if b == nil {
			b = &sessionSeen{scope: e.scope}
			out[k] = b
		}
		if e.ts == nil {
			continue
		}
		if b.first == nil || e.ts.Before(*b.first) {
			b.first = e.ts
		}
		if b.last == nil || e.ts.After(*b.last) {
			b.last = e.ts
		}
	}
	return out
}
