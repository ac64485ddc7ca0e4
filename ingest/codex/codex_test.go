package codex

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/records/recordstest"
)

// want is everything a fixture should give.
type want struct {
	run      records.Run
	detail   string
	calls    []records.Call
	attempts []records.CallAttempt
	problems []records.Error
}

// fixtureCwd is each fixture's working folder: its session_meta's and
// its turns' (none moves), which each call takes.
var fixtureCwd = map[string]string{normalID: "/w/proj", retriesID: "/w/app", badID: "/w/x"}

// call fills what every call of a fixture shares.
func call(run, provider, model string, c records.Call) records.Call {
	c.System, c.RunID, c.Session, c.Source, c.Provider, c.Model, c.Operation = records.Codex, run, run, Source, provider, model, "chat"
	c.Cwd = fixtureCwd[run]
	if c.Evidence == "" {
		c.Evidence = records.EvidenceNone
	}
	return c
}

func attempt(run, callID string, a records.CallAttempt) records.CallAttempt {
	a.System, a.RunID, a.CallID, a.Source = records.Codex, run, callID, Source
	return a
}

const (
	normalID  = "0199c0de-1111-7222-8333-444455556666"
	retriesID = "0199c0de-aaaa-7bbb-8ccc-dddddddddddd"
	badID     = "0199c0de-bbbb-7ccc-8ddd-eeeeeeeeeeee"
	legacyID  = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
)

func TestParseRollout(t *testing.T) {
	tests := []struct {
		name, path, file string
		want             want
	}{
		{"normal session", sessions + "rollout-2026-05-13T09-00-00-" + normalID + ".jsonl", "normal.jsonl", normalWant()},
		{"stream errors and errors", "/home/u/.codex/archived_sessions/rollout-2026-05-14T10-00-00-" + retriesID + ".jsonl", "retries.jsonl", retriesWant()},
		{"bad lines", sessions + "rollout-2026-05-15T08-00-00-" + badID + ".jsonl", "bad.jsonl", badWant()},
		{"legacy", sessions + "rollout-2025-05-07T17-24-21-" + legacyID + ".jsonl", "legacy.jsonl", legacyWant()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := parse(t, tt.path, tt.file)
			run := set.Runs[0]
			if string(run.Detail) != tt.want.detail {
				t.Errorf("detail:\n got %s\nwant %s", run.Detail, tt.want.detail)
			}
			run.Detail = nil
			recordstest.Compare(t, "run", run, tt.want.run)
			recordstest.Compare(t, "calls", set.Calls, tt.want.calls)
			recordstest.Compare(t, "attempts", set.CallAttempts, tt.want.attempts)
			recordstest.Compare(t, "problems", set.Problems, tt.want.problems)
		})
	}
}

func normalWant() want {
	c := func(model string, cc records.Call) records.Call { return call(normalID, "openai", model, cc) }
	return want{
		run: records.Run{System: records.Codex, RunID: normalID, Source: Source, Batch: normalID,
			StartedAt: ts("2026-05-13T09:00:00Z"), FinishedAt: ts("2026-05-13T09:02:03Z"),
			Status: "unfinished", Tokens: num(5300)},
		detail: `{"format":"rollout","cwd":"/w/proj","originator":"codex_cli_rs","cli_version":"0.58.0","source":"cli","model_provider":"openai","models":["gpt-5-codex","gpt-5.2-codex"],"tool_calls":3,"turns":3,"turn_aborted":1,"last_turn_aborted":true,"lines":{"read":26,"used":12,"ignored":14,"problems":0},"rate_limits":{"primary":{"observed_at":"2026-05-13T09:00:04.2Z","used_percent":5,"window_minutes":300,"resets_at":"2026-05-13T12:20:01.2Z"},"secondary":{"observed_at":"2026-05-13T09:00:01.5Z","used_percent":1,"window_minutes":10080,"resets_at":"2026-05-19T03:53:21.5Z"}}}`,
		calls: []records.Call{
			// line 10 repeats line 8's total: not a response.
			c("gpt-5-codex", records.Call{CallID: "line:8", Line: 8, TS: ts("2026-05-13T09:00:04.2Z"), Success: yes, InputTokens: num(750), CacheReadTokens: num(250), OutputTokens: num(125), ReasoningTokens: num(75)}),
			c("gpt-5-codex", records.Call{CallID: "line:13", Line: 13, TS: ts("2026-05-13T09:00:15.02Z"), Success: yes, InputTokens: num(350), CacheReadTokens: num(950), OutputTokens: num(75), ReasoningTokens: num(25)}),
			// No last_token_usage: the difference of the totals.
			c("gpt-5.2-codex", records.Call{CallID: "line:17", Line: 17, TS: ts("2026-05-13T09:01:05.1Z"), Success: yes, InputTokens: num(300), CacheReadTokens: num(1200), OutputTokens: num(60), ReasoningTokens: num(20)}),
			c("gpt-5.2-codex", records.Call{CallID: "line:20", Line: 20, TS: ts("2026-05-13T09:01:12Z"), Success: yes, InputTokens: num(100), CacheReadTokens: num(1100), OutputTokens: num(40), ReasoningTokens: num(10)}),
		},
	}
}

func retriesWant() want {
	c := func(cc records.Call) records.Call { return call(retriesID, "openai", "gpt-5-codex", cc) }
	a := func(callID string, aa records.CallAttempt) records.CallAttempt { return attempt(retriesID, callID, aa) }
	return want{
		run: records.Run{System: records.Codex, RunID: retriesID, Source: Source, Batch: retriesID,
			StartedAt: ts("2026-05-14T10:00:00Z"), FinishedAt: ts("2026-05-14T10:04:00Z"),
			Status: "unfinished", Tokens: num(1790)},
		detail: `{"format":"rollout","cwd":"/w/app","originator":"codex_vscode","cli_version":"0.60.1","source":"vscode","model_provider":"openai","models":["gpt-5-codex"],"tool_calls":0,"turns":4,"turn_aborted":1,"last_turn_aborted":false,"lines":{"read":15,"used":15,"ignored":0,"problems":0}}`,
		calls: []records.Call{
			c(records.Call{CallID: "line:5", Line: 5, TS: ts("2026-05-14T10:00:03Z"), Success: yes,
				Error: "Reconnecting... 2/5", ErrorType: "response_stream_connection_failed",
				Attempts: records.Int(3), Evidence: records.EvidenceTranscript, InputTokens: num(800), OutputTokens: num(50),
				CacheReadTokens: num(0), ReasoningTokens: num(0)}),
			// An error with no stream error before it: failed, attempts unknown.
			c(records.Call{CallID: "line:6", Line: 6, TS: ts("2026-05-14T10:00:12Z"), Success: no,
				Error: "unexpected status 500 Internal Server Error", ErrorType: "internal_server_error"}),
			c(records.Call{CallID: "line:9", Line: 9, TS: ts("2026-05-14T10:01:02Z"), Success: no,
				Error: "stream disconnected before completion: idle timeout waiting for SSE", ErrorType: "response_stream_disconnected",
				StatusCode: records.Int(503), Attempts: records.Int(2), Evidence: records.EvidenceTranscript}),
			// The turn was aborted while reconnecting: the outcome is unknown.
			c(records.Call{CallID: "line:11", Line: 11, TS: ts("2026-05-14T10:02:02Z"),
				Error: "Reconnecting... 1/5", ErrorType: "other", Attempts: records.Int(2), Evidence: records.EvidenceTranscript}),
			c(records.Call{CallID: "line:14", Line: 14, TS: ts("2026-05-14T10:03:04Z"), Success: yes, InputTokens: num(300), CacheReadTokens: num(600), OutputTokens: num(40), ReasoningTokens: num(20)}),
			// The file ends while reconnecting.
			c(records.Call{CallID: "line:15", Line: 15, TS: ts("2026-05-14T10:04:00Z"),
				Error: "Reconnecting... 1/5", ErrorType: "http_connection_failed", StatusCode: records.Int(429),
				Attempts: records.Int(2), Evidence: records.EvidenceTranscript}),
		},
		attempts: []records.CallAttempt{
			a("line:5", records.CallAttempt{Attempt: 1, TS: ts("2026-05-14T10:00:03Z"), Success: no, Error: "Reconnecting... 1/5"}),
			a("line:5", records.CallAttempt{Attempt: 2, TS: ts("2026-05-14T10:00:05Z"), Success: no, StatusCode: records.Int(502), Error: "Reconnecting... 2/5"}),
			a("line:5", records.CallAttempt{Attempt: 3, TS: ts("2026-05-14T10:00:09Z"), Success: yes, InputTokens: num(800), OutputTokens: num(50),
				CacheReadTokens: num(0), ReasoningTokens: num(0)}),
			a("line:9", records.CallAttempt{Attempt: 1, TS: ts("2026-05-14T10:01:02Z"), Success: no, Error: "Reconnecting... 1/5"}),
			a("line:9", records.CallAttempt{Attempt: 2, TS: ts("2026-05-14T10:01:30Z"), Success: no, StatusCode: records.Int(503),
				Error: "stream disconnected before completion: idle timeout waiting for SSE"}),
			a("line:11", records.CallAttempt{Attempt: 1, TS: ts("2026-05-14T10:02:02Z"), Success: no, Error: "Reconnecting... 1/5"}),
			a("line:15", records.CallAttempt{Attempt: 1, TS: ts("2026-05-14T10:04:00Z"), Success: no, StatusCode: records.Int(429), Error: "Reconnecting... 1/5"}),
		},
	}
}

func badWant() want {
	p := func(line int, off int64, field, msg string) records.Error {
		return records.Error{Line: line, Offset: off, Field: field, Msg: msg}
	}
	return want{
		// session_meta has no id: the file name's UUID names the run.
		run: records.Run{System: records.Codex, RunID: badID, Source: Source, Batch: badID,
			StartedAt: ts("2026-05-15T08:00:01Z"), FinishedAt: ts("2026-05-15T08:00:10Z"),
			Status: "unfinished", Tokens: num(15)},
		detail: `{"format":"rollout","cwd":"/w/x","originator":"codex_exec","cli_version":"0.61.0","source":"exec","models":["gpt-5"],"tool_calls":0,"turns":1,"turn_aborted":0,"last_turn_aborted":false,"lines":{"read":16,"used":3,"ignored":1,"problems":12}}`,
		calls: []records.Call{
			call(badID, "", "gpt-5", records.Call{CallID: "line:11", Line: 11, TS: ts("2026-05-15T06:00:05.5Z"), Success: yes, InputTokens: num(12), OutputTokens: num(3),
				CacheReadTokens: num(0), ReasoningTokens: num(0)}),
		},
		problems: []records.Error{
			p(1, 0, "type", "first line: want session_meta, got turn_context"),
			p(4, 237, "", "not JSON: unexpected end of JSON input"),
			p(5, 303, "", "want a JSON object, got [1,2]"),
			p(6, 309, "timestamp", "not an RFC 3339 time: yesterday"),
			p(7, 404, "timestamp", "missing"),
			p(8, 475, "payload.info.total_token_usage.input_tokens", "want a number, got string"),
			p(12, 973, "payload.type", "missing"),
			p(13, 1053, "payload", "missing"),
			p(14, 1074, "type", "missing"),
			p(15, 1124, "payload.info.total_token_usage", "missing"),
			p(16, 1250, "payload", "want an object, got string"),
			p(17, 1321, "", "want a JSON object, got null"),
		},
	}
}

func legacyWant() want {
	return want{
		run: records.Run{System: records.Codex, RunID: legacyID, Source: Source, Batch: legacyID,
			StartedAt: ts("2025-05-07T17:24:21.123Z"), Status: "unfinished"},
		detail: `{"format":"legacy","models":[],"tool_calls":1,"turns":0,"turn_aborted":0,"last_turn_aborted":false,"lines":{"read":9,"used":2,"ignored":6,"problems":1}}`,
		problems: []records.Error{
			{Line: 9, Offset: 701, Field: "", Msg: "not JSON: unexpected end of JSON input"},
		},
	}
}

// 100,000 reconnects before one response are not one call of 100,001
// attempts: a call closes at 1,000 attempts, its outcome unknown, a
// problem says so at that line, and the rest start another call.
func TestReconnectsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"timestamp":"2026-05-13T09:00:00Z","type":"session_meta","payload":{"id":"0199c0de-1111-7222-8333-444455556666","timestamp":"2026-05-13T09:00:00Z","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.50.0"}}` + "\n")
	for range 2500 {
		b.WriteString(`{"timestamp":"2026-05-13T09:00:01Z","type":"event_msg","payload":{"type":"stream_error","message":"Reconnecting... 1/5"}}` + "\n")
	}
	set, err := ParseRollout("rollout-2026-05-13T09-00-00-0199c0de-1111-7222-8333-444455556666.jsonl", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var most int
	for _, c := range set.Calls {
		if c.Attempts != nil {
			most = max(most, *c.Attempts)
		}
	}
	if len(set.Calls) != 3 || most > maxAttempts || len(set.Problems) != 2 ||
		!strings.Contains(set.Problems[0].Msg, "more than 1000 stream errors") {
		t.Errorf("%d calls, most attempts %d, problems %v", len(set.Calls), most, set.Problems)
	}
}

// TestCallCwd: a call ran in the latest turn's folder, else the session's.
func TestCallCwd(t *testing.T) {
	tc := func(ts, cwd string) string {
		return `{"timestamp":"` + ts + `","type":"turn_context","payload":{"cwd":"` + cwd + `","model":"gpt-5-codex"}}`
	}
	count := func(ts string, total int) string {
		n := strconv.Itoa(total)
		return `{"timestamp":"` + ts + `","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":` + n +
			`,"output_tokens":1},"last_token_usage":{"input_tokens":10,"output_tokens":1}}}}`
	}
	lines := []string{
		`{"timestamp":"2026-05-13T09:00:00Z","type":"session_meta","payload":{"id":"` + normalID + `","cwd":"/home/dev/shop"}}`,
		count("2026-05-13T09:00:01Z", 10),
		tc("2026-05-13T09:00:02Z", "/home/dev/shop/api"),
		count("2026-05-13T09:00:03Z", 20),
		tc("2026-05-13T09:00:04Z", ""),
		count("2026-05-13T09:00:05Z", 30),
	}
	set, err := ParseRollout(sessions+"rollout-2026-05-13T09-00-00-"+normalID+".jsonl", []byte(strings.Join(lines, "\n")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range set.Calls {
		got = append(got, c.Cwd)
	}
	// A turn that names no folder keeps the last one named.
	if want := []string{"/home/dev/shop", "/home/dev/shop/api", "/home/dev/shop/api"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("cwd %q, want %q", got, want)
	}
}

// Codex 0.171.0 giving a turn up after its retries against
// ingest/fakeprovider's 500s (testdata/task_error.jsonl, trimmed from the
// real rollout): no error event, only task_complete with an error, which
// is the turn's one call, failed, its attempts not recorded.
func TestTaskCompleteError(t *testing.T) {
	set := parse(t, sessions+"rollout-2026-11-29T04-29-36-01a22590-cf18-7d10-ab0b-619301bf6665.jsonl", "task_error.jsonl")
	if len(set.Calls) != 1 {
		t.Fatalf("%d calls, want 1: %+v", len(set.Calls), set.Calls)
	}
	c := set.Calls[0]
	if c.Success == nil || *c.Success || c.Attempts != nil || c.Evidence != records.EvidenceNone ||
		c.ErrorType != "internal_server_error" || c.Model != "gpt-5.1-codex" || c.CallID != "line:6" {
		t.Errorf("call: %+v; want failed, line:6, attempts unknown (evidence none), internal_server_error, gpt-5.1-codex", c)
	}
}

// An error event and the task_complete that repeats its error are one
// failed call (extended-history mode writes both); a task_complete without
// an error, and one in a later turn after a response, make no call; a
// later turn's task_complete with an error is that turn's failed call.
func TestTaskCompleteAfterError(t *testing.T) {
	lines := strings.Join([]string{
		`{"timestamp":"2026-11-29T10:00:00Z","type":"session_meta","payload":{"id":"s-1","timestamp":"2026-11-29T10:00:00Z","model_provider":"openai"}}`,
		`{"timestamp":"2026-11-29T10:00:01Z","type":"turn_context","payload":{"model":"gpt-5.1-codex"}}`,
		`{"timestamp":"2026-11-29T10:00:02Z","type":"event_msg","payload":{"type":"error","message":"boom","codex_error_info":"internal_server_error"}}`,
		`{"timestamp":"2026-11-29T10:00:03Z","type":"event_msg","payload":{"type":"task_complete","error":{"message":"boom","codex_error_info":"internal_server_error"}}}`,
		`{"timestamp":"2026-11-29T10:01:00Z","type":"turn_context","payload":{"model":"gpt-5.1-codex"}}`,
		`{"timestamp":"2026-11-29T10:01:01Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10,"output_tokens":2,"total_tokens":12},"last_token_usage":{"input_tokens":10,"output_tokens":2,"total_tokens":12}}}}`,
		`{"timestamp":"2026-11-29T10:01:02Z","type":"event_msg","payload":{"type":"task_complete","error":null,"last_agent_message":"ok"}}`,
		`{"timestamp":"2026-11-29T10:02:00Z","type":"turn_context","payload":{"model":"gpt-5.1-codex"}}`,
		`{"timestamp":"2026-11-29T10:02:01Z","type":"event_msg","payload":{"type":"task_complete","error":{"message":"again","codex_error_info":{"http_connection_failed":{"http_status_code":502}}}}}`,
	}, "\n") + "\n"
	set, err := ParseRollout(sessions+"rollout-2026-11-29T10-00-00-s-1.jsonl", []byte(lines))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range set.Calls {
		got = append(got, fmt.Sprintf("%s %v %s %s %v", c.CallID, *c.Success, c.Error, c.ErrorType, show(c.StatusCode)))
	}
	want := []string{"line:3 false boom internal_server_error unknown", "line:6 true   unknown", "line:9 false again http_connection_failed 502"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("calls:\n got %q\nwant %q", got, want)
	}
}

func show(p *int) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}
