package claudecode

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/records"
)

// Files that are not transcripts at all are one error; files with no
// conversation are no run.
func TestParseWholeFile(t *testing.T) {
	tests := []struct {
		name, in string
		err      string // "" for no error
		runs     int
		tally    tally
	}{
		{"empty", "", "", 0, tally{}},
		{"blank lines", "\n\n  \r\n", "", 0, tally{blank: 3}},
		{"binary", "\x00\x01\x02PK", "line 1: type: not a Claude Code transcript: no user, assistant, system or other known record", 0, tally{problems: 1}},
		{"codex rollout", `{"timestamp":"2025-09-01T10:00:00.000Z","type":"session_meta","payload":{"id":"x"}}` + "\n",
			"line 1: type: not a Claude Code transcript: no user, assistant, system or other known record", 0, tally{ignored: 1}},
		{"bookkeeping only", `{"type":"summary","summary":"s","leafUuid":"u"}` + "\n", "", 0, tally{ignored: 1}},
		{"no session id", `{"type":"user","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}`, "", 1, tally{used: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, tl, err := parse("/h/.claude/projects/p/s1.jsonl", []byte(tt.in))
			checkSet(t, set, err)
			if got := errText(err); got != tt.err {
				t.Errorf("error %q, want %q", got, tt.err)
			}
			if set != nil && len(set.Runs) != tt.runs {
				t.Errorf("%d runs, want %d", len(set.Runs), tt.runs)
			}
			compare(t, "tally", tl, tt.tally)
		})
	}
}

func errText(err error) string {
	var re *records.Error
	if errors.As(err, &re) {
		return re.Error()
	}
	if err != nil {
		return "not a *records.Error: " + err.Error()
	}
	return ""
}

// Names the lines do not carry come from the path; a session without
// calls, or whose last call failed, is unfinished; costUSD is summed.
func TestRunNames(t *testing.T) {
	user := `{"type":"user","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}` + "\n"
	asst := `{"type":"assistant","timestamp":"2026-01-01T00:00:01Z","costUSD":0.0125,"message":{"id":"m1","model":"claude-3-5-sonnet-20241022","usage":{"input_tokens":3,"output_tokens":4}}}` + "\n"
	sideUser := `{"type":"user","isSidechain":true,"agentId":"b7","sessionId":"s9","timestamp":"2026-01-01T00:00:00Z"}` + "\n"
	tests := []struct {
		name, path, in string
		want           string
	}{
		{"session from file name", "/h/.claude/projects/p/s1.jsonl", user,
			`s1 item="" batch=s1 unfinished 00:00:00.000..00:00:00.000 dur=0 tokens=- cost=- {"calls":0,"failed_calls":0,"tool_calls":0,"sidechain":false}`},
		{"session and agent from path", "/h/.claude/projects/p/s2/subagents/agent-a1.jsonl", user,
			`s2/agent-a1 item="" batch=s2 unfinished 00:00:00.000..00:00:00.000 dur=0 tokens=- cost=- {"calls":0,"failed_calls":0,"tool_calls":0,"sidechain":false,"parent_session":"s2","agent_id":"a1"}`},
		{"old flat sub-agent file", "/h/.claude/projects/p/agent-b7.jsonl", sideUser,
			`s9/agent-b7 item="" batch=s9 unfinished 00:00:00.000..00:00:00.000 dur=0 tokens=- cost=- {"calls":0,"failed_calls":0,"tool_calls":0,"sidechain":true,"parent_session":"s9","agent_id":"b7"}`},
		{"sidechain lines under another name", "/tmp/x.jsonl", sideUser,
			`s9/agent-b7 item="" batch=s9 unfinished 00:00:00.000..00:00:00.000 dur=0 tokens=- cost=- {"calls":0,"failed_calls":0,"tool_calls":0,"sidechain":true,"parent_session":"s9","agent_id":"b7"}`},
		{"cost of old versions", "/h/.claude/projects/p/s3.jsonl", user + asst,
			`s3 item="" batch=s3 success 00:00:00.000..00:00:01.000 dur=1000 tokens=7 cost=0.013 {"models":["claude-3-5-sonnet-20241022"],"calls":1,"failed_calls":0,"tool_calls":0,"sidechain":false,"tokens":{"input_tokens":3,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":4}}`},
		{"no name at all", "", user,
			`unnamed-session item="" batch= unfinished 00:00:00.000..00:00:00.000 dur=0 tokens=- cost=- {"calls":0,"failed_calls":0,"tool_calls":0,"sidechain":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := ParseTranscript(tt.path, []byte(tt.in))
			checkSet(t, set, err)
			if err != nil || len(set.Runs) != 1 {
				t.Fatalf("err %v, set %+v", err, set)
			}
			compare(t, "run", runLine(set.Runs[0]), tt.want)
		})
	}
}

func TestProvider(t *testing.T) {
	for model, want := range map[string]string{
		"claude-sonnet-4-5-20250929":                      "anthropic",
		"us.anthropic.claude-3-7-sonnet-20250219-v1:0":    "aws.bedrock",
		"anthropic.claude-3-5-haiku-20241022-v1:0":        "aws.bedrock",
		"arn:aws:bedrock:us-east-1:1:inference-profile/x": "aws.bedrock",
		"claude-sonnet-4@20250514":                        "gcp.vertex_ai",
		"":                                                "anthropic",
	} {
		if got := provider(model); got != want {
			t.Errorf("provider(%q) = %q, want %q", model, got, want)
		}
	}
}

func TestSniff(t *testing.T) {
	_, clean := readFixture(t, "clean.jsonl")
	_, unknown := readFixture(t, "unknown.jsonl")
	_, bad := readFixture(t, "bad.jsonl")
	tests := []struct {
		name string
		head []byte
		want bool
	}{
		{"snapshot then user", clean[:2000], true},
		{"summary first", unknown[:100], true},
		{"first line cut short", clean[strings.Index(string(clean), "\n")+1:][:300], true},
		{"a session with bad lines", bad, true},
		{"codex rollout", []byte(`{"timestamp":"2025-09-01T10:00:00Z","type":"session_meta","payload":{"id":"x"}}` + "\n"), false},
		{"otlp", []byte(`{"resourceSpans":[]}` + "\n"), false},
		{"type without session", []byte(`{"type":"user","message":{}}` + "\n"), false},
		{"session with other type", []byte(`{"type":"span","sessionId":"s"}` + "\n"), false},
		{"not json", []byte("hello\n"), false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		if got := Sniff(tt.head); got != tt.want {
			t.Errorf("%s: Sniff = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestIsTranscriptPath(t *testing.T) {
	for path, want := range map[string]bool{
		"/home/u/.claude/projects/-home-u-shop/3f6a.jsonl":                       true,
		"/home/u/.config/claude/projects/-home-u-shop/3f6a.jsonl":                true,
		"/home/u/.claude/projects/-home-u-shop/3f6a/subagents/agent-a1.jsonl":    true,
		"/home/u/.claude/projects/-home-u-shop/agent-a1.jsonl":                   true,
		`C:\Users\u\.claude\projects\C--Users-u-shop\3f6a.jsonl`:                 true,
		"backup/3f6a/subagents/agent-a1.jsonl":                                   true,
		"/home/u/.claude/projects/3f6a.jsonl":                                    false, // not in a project dir
		"/home/u/.claude/projects/-home-u-shop/3f6a/tool-results/x.txt":          false,
		"/home/u/.claude/projects/-home-u-shop/3f6a.json":                        false,
		"/home/u/code/projects/shop/events.jsonl":                                false,
		"/home/u/.claude/todos/x.jsonl":                                          false,
		"/srv/subagents/notes.jsonl":                                             false,
		"/home/u/.codex/sessions/2025/09/01/rollout-2025-09-01T10-00-00-x.jsonl": false,
	} {
		if got := IsTranscriptPath(path); got != want {
			t.Errorf("IsTranscriptPath(%q) = %v, want %v", path, got, want)
		}
	}
}

// A response's input, cache writes and cache reads stay apart, as the
// usage records them: before, its input held all three.
func TestCacheTokensApart(t *testing.T) {
	path, b := readFixture(t, "clean.jsonl")
	set, err := ParseTranscript(path, b)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, c := range set.Calls {
		got = append(got, fmt.Sprintf("in=%s read=%s write=%s out=%s", f(c.InputTokens), f(c.CacheReadTokens), f(c.CacheWriteTokens), f(c.OutputTokens)))
	}
	want := []string{"in=3 read=0 write=1200 out=45", "in=5 read=1200 write=80 out=9"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("got %q, want %q", got, want)
	}
}
