package otlp

import (
	"encoding/json"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/orchstat/orchstat/model/records"
)

// runDetail is what a run's Detail shows in `orchstat sql`.
type runDetail struct {
	Agent           string `json:"agent,omitempty"`
	Scope           string `json:"scope,omitempty"`
	TraceID         string `json:"trace_id,omitempty"`
	AgentID         string `json:"agent_id,omitempty"`
	ParentRun       string `json:"parent_run,omitempty"`
	Calls           int    `json:"calls"`
	FailedCalls     int    `json:"failed_calls"`
	ToolCalls       int    `json:"tool_calls"`
	FailedToolCalls int    `json:"failed_tool_calls"`
}

func (d runDetail) json() []byte {
	b, _ := json.Marshal(d)
	return b
}

// runTally is what a run's calls and tools add up to.
type runTally struct {
	calls, failedCalls, tools, failedTools int
	tokens, cost                           *float64
	last                                   *records.Call
}

func (r *runTally) addCall(c *records.Call) {
	r.calls++
	if c.Success != nil && !*c.Success {
		r.failedCalls++
	}
	for _, v := range []*float64{c.InputTokens, c.CacheReadTokens, c.CacheWriteTokens, c.OutputTokens, c.FailedInputTokens, c.FailedOutputTokens} {
		r.tokens = add(r.tokens, v)
	}
	r.cost = add(add(r.cost, c.CostUSD), c.FailedCostUSD)
	if r.last == nil || c.TS != nil && (r.last.TS == nil || !c.TS.Before(*r.last.TS)) {
		r.last = c
	}
}

// status is "failure" when the run's last call failed.
func (r *runTally) status() string {
	if r.last != nil && r.last.Success != nil && !*r.last.Success {
		return "failure"
	}
	return "success"
}

// runs adds a run per invoke_agent span, and one per trace whose calls
// have no invoke_agent ancestor.
func (t *traceIndex) runs(set *records.Set) {
	tally := map[string]*runTally{}
	get := func(id string) *runTally {
		if tally[id] == nil {
			tally[id] = &runTally{}
		}
		return tally[id]
	}
	for i := range set.Calls {
		if c := &set.Calls[i]; c.Source == sourceSpan {
			get(c.RunID).addCall(c)
		}
	}
	for _, s := range t.spans {
		if isTool(s) {
			r := get(t.runOf(s))
			r.tools++
			if failed(s) {
				r.failedTools++
			}
		}
	}
	t.measure()
	traces := map[string]bool{}
	for _, s := range t.spans {
		if isAgent(s) {
			set.Runs = append(set.Runs, t.agentRun(s, get(t.key(s))))
		} else if _, ok := callOperation(s); ok && t.runOf(s) == s.trace && !traces[s.trace] {
			traces[s.trace] = true
			set.Runs = append(set.Runs, t.traceRun(s.trace, get(s.trace)))
		}
	}
}

func (t *traceIndex) agentRun(s *span, r *runTally) records.Run {
	a := s.Attributes()
	start, end := when(s.StartTimestamp()), when(s.EndTimestamp())
	status := "success"
	switch {
	case failed(s):
		status = "failure"
	case end == nil:
		status = "unfinished"
	}
	d := runDetail{Scope: s.scope, TraceID: s.trace, AgentID: str(a, "gen_ai.agent.id"),
		Calls: r.calls, FailedCalls: r.failedCalls, ToolCalls: r.tools, FailedToolCalls: r.failedTools}
	if p := t.ancestor(s, t.agents, isAgent); p != nil {
		d.ParentRun = t.key(p)
	}
	tokens := add(inputTokens(a), outputTokens(a))
	if tokens == nil {
		tokens = r.tokens
	}
	return records.Run{System: records.OTel, RunID: t.key(s), Item: str(a, "gen_ai.agent.name"),
		Source: sourceSpan, Batch: t.session(s), StartedAt: start, FinishedAt: end, Status: status,
		DurationMS: msBetween(start, end), Tokens: tokens, CostUSD: r.cost, Detail: d.json()}
}

// traceRun is a trace's calls taken as one run: it spans the trace's
// spans in the file and ends as its last call.
func (t *traceIndex) traceRun(trace string, r *runTally) records.Run {
	b := t.bounds[trace]
	d := runDetail{Scope: b.scope, TraceID: trace, Calls: r.calls, FailedCalls: r.failedCalls,
		ToolCalls: r.tools, FailedToolCalls: r.failedTools}
	st, en := when(b.first), when(b.last)
	return records.Run{System: records.OTel, RunID: trace, Source: sourceSpan, Batch: b.session,
		StartedAt: st, FinishedAt: en, Status: r.status(), DurationMS: msBetween(st, en),
		Tokens: r.tokens, CostUSD: r.cost, Detail: d.json()}
}

// traceBounds is what a trace run shows of its trace: its first start and
// last end in the file, and its first call's scope and session.
type traceBounds struct {
	first, last    pcommon.Timestamp
	scope, session string
	hasCall        bool
}

// measure fills t.bounds in one pass over the spans.
func (t *traceIndex) measure() {
	t.bounds = map[string]*traceBounds{}
	for _, s := range t.spans {
		b := t.bounds[s.trace]
		if b == nil {
			b = &traceBounds{}
			t.bounds[s.trace] = b
		}
		if ts := s.StartTimestamp(); ts != 0 && (b.first == 0 || ts < b.first) {
			b.first = ts
		}
		b.last = max(b.last, s.EndTimestamp())
		if _, ok := callOperation(s); ok && !b.hasCall {
			b.hasCall, b.scope, b.session = true, s.scope, t.session(s)
		}
	}
}
