package otlp

import (
	"testing"

	"github.com/orchstat/orchstat/model/records"
)

const (
	t1 = "5b8efff798038103d269b633813fc60c"
	t2 = "6c9f0000000000000000000000000002"
	t3 = "7d000000000000000000000000000003"
	t4 = "8e000000000000000000000000000004"
)

// The semconv HTTP retry example under a chat span: three POSTs (500,
// 429, 200), the later two with resend_count; the children are read a
// line before their parent, and a metrics line is ignored.
func TestHTTPChildSpans(t *testing.T) {
	set, st := parseFixture(t, "http_retries.jsonl")
	compare(t, "stats", st, stats{lines: 3, traces: 2, metrics: 1})
	compare(t, "calls", set.Calls, []records.Call{{
		System: records.OTel, RunID: t1, Session: "conv-1", CallID: "eee19b7ec3c1b174", Source: "span",
		Line: 2, TS: at(0), DurationMS: f(3000), Provider: "openai", Model: "gpt-4o", Operation: "chat",
		Success: yes, StatusCode: n(200), Attempts: n(3), Evidence: records.EvidenceHTTPSpans,
		BackoffMS: f(1500), InputTokens: f(12), OutputTokens: f(30),
	}})
	att := func(i int, ts, dur float64, ok *bool, code int, err string, backoff *float64) records.CallAttempt {
		return records.CallAttempt{System: records.OTel, RunID: t1, CallID: "eee19b7ec3c1b174", Source: "span",
			Attempt: i, TS: at(ts), DurationMS: f(dur), Success: ok, StatusCode: n(code), Error: err, BackoffMS: backoff}
	}
	compare(t, "attempts", set.CallAttempts, []records.CallAttempt{
		att(1, 10, 100, no, 500, "500", f(500)),
		att(2, 610, 90, no, 429, "Too Many Requests", f(1000)),
		att(3, 1700, 1200, yes, 200, "", nil),
	})
	r, d := detail(set.Runs[0])
	compare(t, "run", r, records.Run{System: records.OTel, RunID: t1, Source: "span", Batch: "conv-1",
		StartedAt: at(0), FinishedAt: at(3000), Status: "success", DurationMS: f(3000), Tokens: f(42)})
	compare(t, "detail", d, `{"scope":"opentelemetry.instrumentation.openai_v2","trace_id":"`+t1+`","calls":1,"failed_calls":0,"tool_calls":0,"failed_tool_calls":0}`)
}

// Each call of retry_events.jsonl, by what shows its attempts.
func TestSpanEvidence(t *testing.T) {
	set, _ := parseFixture(t, "retry_events.jsonl")
	type want struct {
		id, provider, model, op, session string
		ok                               *bool
		attempts                         *int
		evidence                         string
		backoff, in, out                 *float64
		errText, errType                 string
	}
	tests := []want{
		// Two retry events with recorded delays (500 ms, 1 s).
		{"b000000000000001", "openai", "gpt-4o-mini", "chat", "", yes, n(3), records.EvidenceSpanEvents, f(1500), f(5), f(6), "", ""},
		// Claude Code's llm_request: gen_ai.request.attempt events numbered 2 and 3.
		{"b000000000000002", "anthropic", "claude-sonnet-4-5", "chat", "sess-cc", yes, n(3), records.EvidenceSpanEvents, nil, f(900), f(80), "", ""},
		// An attempt attribute only.
		{"b000000000000003", "openai", "qwen3-coder", "chat", "", yes, n(2), records.EvidenceAttribute, nil, nil, nil, "", ""},
		// Old names: gen_ai.system az.ai.openai, prompt/completion tokens.
		{"b000000000000004", "azure.ai.openai", "text-embedding-3-small", "embeddings", "", yes, nil, records.EvidenceNone, nil, f(7), f(3), "", ""},
		// No evidence, failed by error.type with an exception event.
		{"b000000000000005", "openai", "davinci-002", "text_completion", "", no, nil, records.EvidenceNone, nil, nil, nil, "Request timed out.", "timeout"},
	}
	if len(set.Calls) != len(tests) {
		t.Fatalf("%d calls, want %d", len(set.Calls), len(tests))
	}
	for i, w := range tests {
		c := set.Calls[i]
		got := want{c.CallID, c.Provider, c.Model, c.Operation, c.Session, c.Success, c.Attempts, c.Evidence,
			c.BackoffMS, c.InputTokens, c.OutputTokens, c.Error, c.ErrorType}
		compare(t, w.id, got, w)
		if c.RunID != t2 || c.Source != "span" || len(set.CallAttempts) != 0 {
			t.Errorf("%s: run %s source %s, %d attempt rows", w.id, c.RunID, c.Source, len(set.CallAttempts))
		}
	}
	if len(set.Runs) != 1 || set.Runs[0].Status != "failure" {
		t.Errorf("runs %+v, want one trace run ending as its last call, failed", set.Runs)
	}
}

// Vercel AI SDK: a doGenerate span per attempt under ai.generateText.
func TestSiblingSpans(t *testing.T) {
	set, _ := parseFixture(t, "vercel_siblings.jsonl")
	call := func(id string, line int, ts, dur float64, model string, ok *bool, attempts *int, ev string) records.Call {
		return records.Call{System: records.OTel, RunID: t3, CallID: id, Source: "span", Line: line, TS: at(ts),
			DurationMS: f(dur), Provider: "openai", Model: model, Operation: "chat", Success: ok,
			Attempts: attempts, Evidence: ev}
	}
	retried := call("c000000000000001", 1, 10, 7990, "gpt-4o-mini", yes, n(3), records.EvidenceSiblings)
	retried.BackoffMS, retried.InputTokens, retried.OutputTokens, retried.FailedInputTokens = f(6000), f(100), f(20), f(100)
	alone := call("c000000000000004", 1, 8100, 800, "gpt-4o", yes, nil, records.EvidenceNone)
	alone.InputTokens, alone.OutputTokens = f(50), f(10)
	exhausted := call("d000000000000001", 2, 10000, 2000, "gpt-4o-mini", no, n(2), records.EvidenceSiblings)
	exhausted.BackoffMS, exhausted.Error = f(1000), "Internal server error"
	compare(t, "calls", set.Calls, []records.Call{retried, alone, exhausted})

	att := func(id string, i int, ts, dur float64, ok *bool, err string, backoff, in, out *float64) records.CallAttempt {
		return records.CallAttempt{System: records.OTel, RunID: t3, CallID: id, Source: "span", Attempt: i,
			TS: at(ts), DurationMS: f(dur), Success: ok, Error: err, BackoffMS: backoff, InputTokens: in, OutputTokens: out}
	}
	rate := "Rate limit reached for gpt-4o-mini"
	compare(t, "attempts", set.CallAttempts, []records.CallAttempt{
		att("c000000000000001", 1, 10, 290, no, rate, f(2000), f(100), nil),
		att("c000000000000001", 2, 2300, 200, no, rate, f(4000), nil, nil),
		att("c000000000000001", 3, 6500, 1500, yes, "", nil, f(100), f(20)),
		att("d000000000000001", 1, 10000, 500, no, "Internal server error", f(1000), nil, nil),
		att("d000000000000001", 2, 11500, 500, no, "Internal server error", nil, nil, nil),
	})
}

// invoke_agent spans are runs; a nested one is a sub-agent; tools are
// counted per run.
func TestAgentRuns(t *testing.T) {
	set, _ := parseFixture(t, "agents.jsonl")
	if len(set.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(set.Runs))
	}
	var details []string
	for _, r := range set.Runs {
		_, d := detail(r)
		details = append(details, d)
	}
	planner, _ := detail(set.Runs[0])
	compare(t, "planner", planner, records.Run{System: records.OTel, RunID: "e000000000000001", Item: "planner",
		Source: "span", Batch: "conv-9", StartedAt: at(0), FinishedAt: at(20000), Status: "success",
		DurationMS: f(20000), Tokens: f(240)})
	researcher, _ := detail(set.Runs[1])
	compare(t, "researcher", researcher, records.Run{System: records.OTel, RunID: "e000000000000002", Item: "researcher",
		Source: "span", Batch: "conv-9", StartedAt: at(2000), FinishedAt: at(15000), Status: "failure",
		DurationMS: f(13000), Tokens: f(360)})
	compare(t, "details", details, []string{
		`{"scope":"openai.agents","trace_id":"` + t4 + `","agent_id":"asst_1","calls":1,"failed_calls":0,"tool_calls":2,"failed_tool_calls":1}`,
		`{"scope":"openai.agents","trace_id":"` + t4 + `","parent_run":"e000000000000001","calls":1,"failed_calls":0,"tool_calls":1,"failed_tool_calls":0}`,
	})
	var calls []string
	for _, c := range set.Calls {
		calls = append(calls, c.CallID+" "+c.RunID+" "+c.Session+" "+c.Evidence)
	}
	compare(t, "calls", calls, []string{
		"e000000000000003 e000000000000001 conv-9 none",
		"e000000000000006 e000000000000002 conv-9 none",
	})
}
