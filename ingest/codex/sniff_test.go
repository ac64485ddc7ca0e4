package codex

import (
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/records"
)

func TestSniff(t *testing.T) {
	long := `{"timestamp":"2026-05-13T09:00:00.000Z","type":"session_meta","payload":{"id":"0199c0de-1111-7222-8333-444455556666","instructions":"` + strings.Repeat("x", 5000) + `"}}`
	tests := []struct {
		name string
		head string
		want bool
	}{
		{"session_meta", string(read(t, "normal.jsonl")), true},
		{"session_meta cut inside its payload", long[:300], true},
		{"session_meta with a BOM", "\xEF\xBB\xBF" + long, true},
		{"legacy header", string(read(t, "legacy.jsonl")), true},
		{"legacy header cut inside its instructions", `{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0e","timestamp":"2025-05-07T17:24:21.123Z","instructions":"You are`, true},
		{"legacy header cut before its instructions", `{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0e","timestamp":"2025-05-07T17:2`, false},
		{"turn_context first", `{"timestamp":"2026-05-13T09:00:00Z","type":"turn_context","payload":{}}`, false},
		{"session_meta without a timestamp", `{"type":"session_meta","payload":{}}`, false},
		{"claude code", `{"type":"user","sessionId":"s","uuid":"u","timestamp":"2026-05-13T09:00:00Z","message":{}}`, false},
		{"otlp", `{"resourceSpans":[]}`, false},
		{"legacy state marker", `{"record_type":"state"}`, false},
		{"id not a string", `{"id":5,"timestamp":"t","instructions":""}`, false},
		{"empty", "", false},
		{"not JSON", "rollout", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sniff([]byte(tt.head)); got != tt.want {
				t.Errorf("Sniff = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsRolloutPath(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/home/u/.codex/sessions/2026/05/13/rollout-2026-05-13T09-00-00-0199c0de-1111-7222-8333-444455556666.jsonl", true},
		{"/home/u/.codex/archived_sessions/rollout-2026-05-13T09-00-00-0199c0de-1111-7222-8333-444455556666.jsonl", true},
		{`C:\Users\u\.codex\sessions\2026\05\13\rollout-2026-05-13T09-00-00-x.jsonl`, true},
		{"sessions/rollout-x.jsonl", true},
		{"/home/u/.codex/sessions/2026/05/13/rollout-2026-05-13T09-00-00-x.jsonl.zst", false},
		{"/home/u/.codex/sessions/2026/05/13/history.jsonl", false},
		{"/home/u/.codex/rollout-x.jsonl", false},
		{"/home/u/my_sessions/rollout-x.jsonl", false},
		{"/home/u/.codex/sessions/rollout-.jsonl", false},
		{"/home/u/.codex/sessions/2026/05/13/Rollout-x.jsonl", false},
	}
	for _, tt := range tests {
		if got := IsRolloutPath(tt.path); got != tt.want {
			t.Errorf("IsRolloutPath(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

// Files that are not rollouts are errors; an empty one is nothing to read.
func TestNotARollout(t *testing.T) {
	tests := []struct {
		name, body string
		err        *records.Error // nil: an empty set
	}{
		{"empty", "", nil},
		{"blank lines", "\n \r\n\n", nil},
		{"claude code", `{"type":"user","sessionId":"s","uuid":"u","message":{}}` + "\n",
			&records.Error{Line: 1, Field: "type", Msg: "not a Codex rollout: no line is {timestamp, type, payload}"}},
		{"not JSON", "\n\nhello\n",
			&records.Error{Line: 3, Offset: 2, Field: "type", Msg: "not a Codex rollout: no line is {timestamp, type, payload}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := ParseRollout("/x/sessions/rollout-a.jsonl", []byte(tt.body))
			if tt.err == nil {
				if err != nil || len(set.Runs)+len(set.Calls)+len(set.Problems) != 0 {
					t.Fatalf("got %+v, %v; want an empty set", set, err)
				}
				return
			}
			re, ok := err.(*records.Error)
			if !ok || set != nil || *re != *tt.err {
				t.Fatalf("got %+v, %v; want %+v", set, err, tt.err)
			}
		})
	}
}

// A fork's file repeats its parent's session_meta after its own: the
// first names the run, the other is ignored.
func TestRepeatedSessionMeta(t *testing.T) {
	body := `{"timestamp":"2026-05-13T09:00:00Z","type":"session_meta","payload":{"id":"child","model_provider":"azure"}}
{"timestamp":"2026-05-13T09:00:00Z","type":"session_meta","payload":{"id":"parent","model_provider":"openai"}}
{"timestamp":"2026-05-13T09:00:01Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5,"output_tokens":1}}}}
{"timestamp":"2026-05-13T09:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5,"output_tokens":1}}}}
`
	set, err := ParseRollout("/x/sessions/rollout-a.jsonl", []byte(body))
	check(t, set, err)
	if set.Runs[0].RunID != "child" || len(set.Calls) != 2 || set.Calls[1].Provider != "azure" || *set.Calls[1].InputTokens != 5 || set.Runs[0].Tokens != nil {
		t.Fatalf("run %+v calls %+v", set.Runs[0], set.Calls)
	}
}
