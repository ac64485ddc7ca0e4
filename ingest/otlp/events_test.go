package otlp

import (
	"strconv"
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/records"
)

// Claude Code events: a lone api_request; two api_error (529) then an
// api_request; two api_error then api_retries_exhausted. The name is read
// from the body, from eventName, or from event.name alone.
func TestClaudeCodeEvents(t *testing.T) {
	set, st := parseFixture(t, "claude_code_events.jsonl")
	compare(t, "stats", st, stats{lines: 2, logs: 2})
	call := func(id string, line int, ts float64, dur *float64, model string, ok *bool) records.Call {
		return records.Call{System: records.OTel, RunID: "sess-1", Session: "sess-1", CallID: id,
			Source: "claude_code_event", Line: line, TS: at(ts), DurationMS: dur, Provider: "anthropic",
			Model: model, Operation: "chat", Success: ok, Evidence: records.EvidenceNone}
	}
	lone := call("req_01", 1, 1000, f(2000), "claude-sonnet-4-5", yes)
	lone.InputTokens, lone.OutputTokens, lone.CostUSD, lone.CacheReadTokens = f(1500), f(120), f(0.0123), f(1000)
	// From the first attempt's start (5000-300) to the request's end (8000).
	retried := call("req_02", 1, 5000, f(3300), "claude-sonnet-4-5", yes)
	retried.Attempts, retried.Evidence = n(3), records.EvidenceAttribute
	retried.InputTokens, retried.OutputTokens, retried.CostUSD = f(400), f(50), f(0.004)
	exhausted := call(tid(10000), 2, 10000, f(4600), "claude-opus-4-1", no)
	exhausted.Attempts, exhausted.Evidence, exhausted.Error = n(3), records.EvidenceAttribute, "Request timed out"
	compare(t, "calls", set.Calls, []records.Call{lone, retried, exhausted})

	att := func(id string, i int, ts, dur float64, ok *bool, code *int, err string) records.CallAttempt {
		return records.CallAttempt{System: records.OTel, RunID: "sess-1", CallID: id, Source: "claude_code_event",
			Attempt: i, TS: at(ts), DurationMS: f(dur), Success: ok, StatusCode: code, Error: err}
	}
	last := att("req_02", 3, 8000, 1500, yes, nil, "")
	last.InputTokens, last.OutputTokens, last.CostUSD = f(400), f(50), f(0.004)
	compare(t, "attempts", set.CallAttempts, []records.CallAttempt{
		att("req_02", 1, 5000, 300, no, n(529), "529 Overloaded"),
		att("req_02", 2, 5900, 250, no, n(529), "529 Overloaded"),
		last,
		att(tid(10000), 1, 10000, 600, no, nil, "Request timed out"),
		att(tid(10000), 2, 14000, 600, no, nil, "Request timed out"),
	})
	r, d := detail(set.Runs[0])
	compare(t, "run", r, records.Run{System: records.OTel, RunID: "sess-1", Source: "claude_code_event",
		Batch: "sess-1", StartedAt: at(0), FinishedAt: at(14001), Status: "failure", DurationMS: f(14001),
		Tokens: f(3070), CostUSD: f(sum(0.0123, 0.004))})
	compare(t, "detail", d, `{"agent":"claude_code","scope":"com.anthropic.claude_code.events","calls":3,"failed_calls":1,"tool_calls":0,"failed_tool_calls":0}`)
}

// Codex: /models before the conversation is ignored; a 500 then a 200
// (its tokens from the next response.completed); a lone 200; a
// transport error the file ends on.
func TestCodexEvents(t *testing.T) {
	set, _ := parseFixture(t, "codex_events.jsonl")
	call := func(id string, ts, dur float64, ok *bool, code *int, attempts int) records.Call {
		return records.Call{System: records.OTel, RunID: "c-1", Session: "c-1", CallID: id, Source: "codex_event",
			Line: 1, TS: at(ts), DurationMS: f(dur), Provider: "openai", Model: "gpt-5-codex", Operation: "chat",
			Success: ok, StatusCode: code, Attempts: n(attempts), Evidence: records.EvidenceAttribute}
	}
	retried := call(tid(1000), 1000, 2312, yes, n(200), 2)
	retried.InputTokens, retried.CacheReadTokens, retried.OutputTokens = f(750), f(250), f(200)
	failedCall := call(tid(12000), 12000, 30000, no, nil, 1)
	failedCall.Error = "connection reset by peer"
	compare(t, "calls", set.Calls, []records.Call{retried, call(tid(8000), 8000, 500, yes, n(200), 1), failedCall})
	att := func(id string, ts, dur float64, i int, ok *bool, code *int, err string) records.CallAttempt {
		return records.CallAttempt{System: records.OTel, RunID: "c-1", CallID: id, Source: "codex_event",
			Attempt: i, TS: at(ts), DurationMS: f(dur), Success: ok, StatusCode: code, Error: err}
	}
	compare(t, "attempts", set.CallAttempts, []records.CallAttempt{
		att(tid(1000), 1000, 812, 1, no, n(500), "internal error"),
		att(tid(1000), 2500, 640, 2, yes, n(200), ""),
		att(tid(8000), 8000, 500, 1, yes, n(200), ""),
		att(tid(12000), 12000, 30000, 1, no, nil, "connection reset by peer"),
	})
	r, d := detail(set.Runs[0])
	compare(t, "run", r, records.Run{System: records.OTel, RunID: "c-1", Source: "codex_event", Batch: "c-1",
		StartedAt: at(10), FinishedAt: at(12000), Status: "failure", DurationMS: f(11990), Tokens: f(1200)})
	compare(t, "detail", d, `{"agent":"codex","scope":"codex_otel","calls":3,"failed_calls":1,"tool_calls":0,"failed_tool_calls":0}`)
}

// sum adds at run time, rounding as the parser does.
func sum(a, b float64) float64 { return a + b }

// tid is the call id of a call whose first event is at ms past base and
// that has no request id: its time, so that two files of one session
// (rotated mid-session) never share an id, and two copies of one file
// always do.
func tid(ms float64) string { return "t" + strconv.FormatInt(at(ms).UnixNano(), 10) }

// TestEventCallIDs: the request id first, else the time, else the place;
// an id repeated within a file gets #n.
func TestEventCallIDs(t *testing.T) {
	es := &events{used: map[string]int{}}
	ev := func(line, index int, ts *time.Time) *event {
		return &event{logRec: &logRec{line: line, index: index}, ts: ts}
	}
	for _, tc := range []struct {
		req  string
		e    *event
		want string
	}{
		{"req_1", ev(1, 0, at(5)), "req_1"},
		{"", ev(1, 1, at(5)), tid(5)},
		{"", ev(2, 0, at(5)), tid(5) + "#2"},
		{"", ev(3, 4, nil), "L3.4"},
	} {
		if got := es.callID(tc.req, tc.e); got != tc.want {
			t.Errorf("callID(%q, line %d) = %q, want %q", tc.req, tc.e.line, got, tc.want)
		}
	}
}
