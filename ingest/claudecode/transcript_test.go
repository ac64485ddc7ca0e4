package claudecode

import (
	"testing"
	"time"

	"github.com/orchstat/orchstat/model/records"
)

const detailMain = `{"cwd":"/home/dev/shop","version":"2.1.131","gitBranch":"main",`

// transcriptCase is what one fixture must give.
type transcriptCase struct {
	name     string
	tally    tally
	run      string
	calls    []string
	attempts []string
	problems []string
}

var transcriptCases = []transcriptCase{{
	name:  "clean.jsonl",
	tally: tally{used: 5, ignored: 2},
	run: session + ` item="" batch=` + session + ` success 11:00:00.000..11:00:06.010 dur=6010 tokens=2542 cost=- ` + detailMain +
		`"models":["claude-sonnet-4-5-20250929"],"calls":2,"failed_calls":0,"tool_calls":1,"sidechain":false,"tokens":{"input_tokens":8,"cache_creation_input_tokens":1280,"cache_read_input_tokens":1200,"output_tokens":54}}`,
	calls: []string{
		`msg_01Clean1 L3 11:00:03.250 anthropic claude-sonnet-4-5-20250929 ok att=1/transcript backoff=- in=1203 out=45 status=- type= err=""`,
		`msg_01Clean2 L5 11:00:06.000 anthropic claude-sonnet-4-5-20250929 ok att=1/transcript backoff=- in=1285 out=9 status=- type= err=""`,
	},
}, {
	// Three lines of one streamed response are one call with the last
	// line's usage (57 output tokens, not 1+1+57).
	name:  "streaming.jsonl",
	tally: tally{used: 6},
	run: session + ` item="" batch=` + session + ` success 12:00:00.000..12:00:11.000 dur=11000 tokens=14107 cost=- ` + detailMain +
		`"models":["claude-sonnet-4-5-20250929"],"calls":2,"failed_calls":0,"tool_calls":1,"sidechain":false,"tokens":{"input_tokens":14,"cache_creation_input_tokens":2030,"cache_read_input_tokens":12000,"output_tokens":63}}`,
	calls: []string{
		`msg_01Stream L4 12:00:02.000 anthropic claude-sonnet-4-5-20250929 ok att=1/transcript backoff=- in=7010 out=57 status=- type= err=""`,
		`msg_01Done L6 12:00:11.000 anthropic claude-sonnet-4-5-20250929 ok att=1/transcript backoff=- in=7034 out=6 status=- type= err=""`,
	},
}, {
	// Two 529s, in the newer and the SDK's error shapes, then the
	// response: three attempts, the waits of the two failures summed.
	name:  "retry529.jsonl",
	tally: tally{used: 4},
	run: session + ` item="" batch=` + session + ` success 13:00:00.000..13:00:16.000 dur=16000 tokens=9126 cost=- ` + detailMain +
		`"models":["claude-sonnet-4-5-20250929"],"calls":1,"failed_calls":0,"tool_calls":0,"sidechain":false,"tokens":{"input_tokens":6,"cache_creation_input_tokens":0,"cache_read_input_tokens":9000,"output_tokens":120}}`,
	calls: []string{
		`msg_01Retried L4 13:00:09.120 anthropic claude-sonnet-4-5-20250929 ok att=3/transcript backoff=1626.44 in=9006 out=120 status=- type= err=""`,
	},
	attempts: []string{
		`msg_01Retried#1 13:00:09.120 FAIL status=529 backoff=558.94 in=- out=- err="529 Overloaded"`,
		`msg_01Retried#2 13:00:12.700 FAIL status=529 backoff=1067.5 in=- out=- err="Overloaded"`,
		`msg_01Retried#3 13:00:16.000 ok status=- backoff=- in=9006 out=120 err=""`,
	},
}, {
	// Three 429s and the final failure: four attempts; the failure's
	// model is <synthetic>, so the call takes the session's nearest.
	name:  "exhausted.jsonl",
	tally: tally{used: 7},
	run: session + ` item="" batch=` + session + ` unfinished 14:00:00.000..14:01:23.000 dur=83000 tokens=128 cost=- ` + detailMain +
		`"models":["claude-opus-4-1-20250805"],"calls":2,"failed_calls":1,"tool_calls":0,"sidechain":false,"tokens":{"input_tokens":8,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":20}}`,
	calls: []string{
		`msg_01Ok L2 14:00:04.000 anthropic claude-opus-4-1-20250805 ok att=1/transcript backoff=- in=108 out=20 status=- type= err=""`,
		`00000000-0000-4000-8000-000000000022 L7 14:01:05.000 anthropic claude-opus-4-1-20250805 FAIL att=4/transcript backoff=3584 in=- out=- status=429 type=rate_limit err="API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of request tokens has exceeded your per-minute rate limit\"}}"`,
	},
	attempts: []string{
		`00000000-0000-4000-8000-000000000022#1 14:01:05.000 FAIL status=429 backoff=512 in=- out=- err="Number of request tokens has exceeded your per-minute rate limit"`,
		`00000000-0000-4000-8000-000000000022#2 14:01:10.000 FAIL status=429 backoff=1024 in=- out=- err="Number of request tokens has exceeded your per-minute rate limit"`,
		`00000000-0000-4000-8000-000000000022#3 14:01:16.000 FAIL status=429 backoff=2048 in=- out=- err="Number of request tokens has exceeded your per-minute rate limit"`,
		`00000000-0000-4000-8000-000000000022#4 14:01:23.000 FAIL status=429 backoff=- in=- out=- err="API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of request tokens has exceeded your per-minute rate limit\"}}"`,
	},
}, {
	// Network errors (no status), a repeated notice of attempt 1, the
	// user interrupting: two failed attempts, the third never recorded.
	// Then a chain restarting at 1 is a new call, and a failure with
	// no retry lines before it has unknown attempts.
	name:  "network.jsonl",
	tally: tally{used: 12},
	run: session + ` item="" batch=` + session + ` unfinished 15:00:00.000..15:03:01.000 dur=181000 tokens=405 cost=- ` + detailMain +
		`"models":["claude-haiku-4-5-20251001"],"calls":4,"failed_calls":3,"tool_calls":0,"sidechain":false,"tokens":{"input_tokens":2,"cache_creation_input_tokens":0,"cache_read_input_tokens":400,"output_tokens":3}}`,
	calls: []string{
		`00000000-0000-4000-8000-000000000025 L4 15:00:30.000 anthropic claude-haiku-4-5-20251001 FAIL att=2/transcript backoff=1602.3 in=- out=- status=- type=FailedToOpenSocket err="FailedToOpenSocket"`,
		`00000000-0000-4000-8000-000000000030 L8 15:02:10.000 anthropic claude-haiku-4-5-20251001 FAIL att=2/transcript backoff=1800 in=- out=- status=503 type= err="503 Service Unavailable"`,
		`msg_01Deployed L10 15:02:20.000 anthropic claude-haiku-4-5-20251001 ok att=2/transcript backoff=700 in=402 out=3 status=- type= err=""`,
		`00000000-0000-4000-8000-000000000035 L12 15:03:01.000 anthropic claude-haiku-4-5-20251001 FAIL att=-/none backoff=- in=- out=- status=400 type=invalid_request err="API Error: 400 prompt is too long: 210000 tokens > 200000 maximum"`,
	},
	attempts: []string{
		`00000000-0000-4000-8000-000000000025#1 15:00:30.000 FAIL status=- backoff=512.3 in=- out=- err="ECONNRESET"`,
		`00000000-0000-4000-8000-000000000025#2 15:01:01.000 FAIL status=- backoff=1090 in=- out=- err="FailedToOpenSocket"`,
		`00000000-0000-4000-8000-000000000030#1 15:02:10.000 FAIL status=503 backoff=600 in=- out=- err="503 Service Unavailable"`,
		`00000000-0000-4000-8000-000000000030#2 15:02:11.000 FAIL status=503 backoff=1200 in=- out=- err="503 Service Unavailable"`,
		`msg_01Deployed#1 15:02:20.000 FAIL status=529 backoff=700 in=- out=- err="529 Overloaded"`,
		`msg_01Deployed#2 15:02:25.000 ok status=- backoff=- in=402 out=3 err=""`,
	},
}, {
	name:  subagentFixture,
	tally: tally{used: 4},
	run: session + `/agent-a4f2e91 item="" batch=` + session + ` success 16:00:00.000..16:00:05.000 dur=5000 tokens=2820 cost=- ` + detailMain +
		`"models":["claude-haiku-4-5-20251001"],"calls":2,"failed_calls":0,"tool_calls":1,"sidechain":true,"parent_session":"` + session + `","agent_id":"a4f2e91","tokens":{"input_tokens":1850,"cache_creation_input_tokens":0,"cache_read_input_tokens":900,"output_tokens":70}}`,
	calls: []string{
		`msg_01Sub1 L2 16:00:02.000 anthropic claude-haiku-4-5-20251001 ok att=1/transcript backoff=- in=900 out=40 status=- type= err=""`,
		`msg_01Sub2 L4 16:00:05.000 anthropic claude-haiku-4-5-20251001 ok att=1/transcript backoff=- in=1850 out=30 status=- type= err=""`,
	},
}, {
	// summary, queue-operation, ai-title and an unknown "hologram"
	// record are ignored; unknown fields and content blocks too.
	name:  "unknown.jsonl",
	tally: tally{used: 3, ignored: 4},
	run: session + ` item="" batch=` + session + ` success 17:00:00.100..17:00:01.500 dur=1400 tokens=3 cost=- ` + detailMain +
		`"models":["claude-sonnet-4-5-20250929"],"calls":1,"failed_calls":0,"tool_calls":0,"sidechain":false,"tokens":{"input_tokens":1,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}`,
	calls: []string{
		`msg_01Hi L5 17:00:01.000 anthropic claude-sonnet-4-5-20250929 ok att=1/transcript backoff=- in=1 out=2 status=- type= err=""`,
	},
}, {
	name:  "bad.jsonl",
	tally: tally{used: 2, problems: 7, blank: 1},
	run: session + ` item="" batch=` + session + ` success 18:00:00.000..18:00:04.000 dur=4000 tokens=6 cost=- ` + detailMain +
		`"models":["claude-sonnet-4-5-20250929"],"calls":1,"failed_calls":0,"tool_calls":0,"sidechain":false,"tokens":{"input_tokens":2,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":4}}`,
	calls: []string{
		`msg_01Good L10 18:00:04.000 anthropic claude-sonnet-4-5-20250929 ok att=1/transcript backoff=- in=2 out=4 status=- type= err=""`,
	},
	problems: []string{
		`2@368 : not a JSON object: this is not json`,
		`3@385 : not a JSON object: [1,2,3]`,
		`4@393 timestamp: not a string`,
		`5@1112 type: no record type`,
		`6@1182 retryAttempt: not a number`,
		`7@1608 message.usage.output_tokens: not a number`,
		`8@2181 : not valid JSON: {"type":"user","sessionId":"` + session + `",`,
	},
}}

func TestParseTranscript(t *testing.T) {
	for _, tt := range transcriptCases {
		t.Run(tt.name, func(t *testing.T) {
			set, tl := parseFixture(t, tt.name)
			compare(t, "tally", tl, tt.tally)
			if len(set.Runs) != 1 {
				t.Fatalf("%d runs", len(set.Runs))
			}
			compare(t, "run", runLine(set.Runs[0]), tt.run)
			compare(t, "calls", callLines(set), tt.calls)
			compare(t, "attempts", attemptLines(set), tt.attempts)
			compare(t, "problems", problemLines(set), tt.problems)
		})
	}
}

// The fields the one-line renderings leave out, in full, for one retried call.
func TestRetriedCallFields(t *testing.T) {
	set, _ := parseFixture(t, "retry529.jsonl")
	ts := time.Date(2026, 3, 4, 13, 0, 9, 120_000_000, time.UTC)
	want := records.Call{
		System: records.ClaudeCode, RunID: session, Session: session, CallID: "msg_01Retried",
		Source: "transcript", Line: 4, TS: &ts, Provider: "anthropic", Model: "claude-sonnet-4-5-20250929",
		Operation: "chat", Success: records.Bool(true), Attempts: records.Int(3), Evidence: records.EvidenceTranscript,
		BackoffMS: records.Float(1626.44), InputTokens: records.Float(6), OutputTokens: records.Float(120),
		CacheReadTokens: records.Float(9000), CacheWriteTokens: records.Float(0), CacheWrite1hTokens: records.Float(0),
		Cwd: "/home/dev/shop",
	}
	compare(t, "call", set.Calls, []records.Call{want})
	for _, a := range set.CallAttempts {
		if a.System != records.ClaudeCode || a.RunID != session || a.Source != "transcript" || a.DurationMS != nil {
			t.Errorf("attempt %+v", a)
		}
	}
}
