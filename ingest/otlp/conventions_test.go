package otlp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/records"
)

// callRow is what the convention tests compare of a call: its tokens
// apart, nil shown as -1.
type callRow struct {
	ID, Provider, Model, Op string
	OK                      string // true, false or unknown
	In, Read, Write, Out    float64
	Reasoning, Cost         float64
	Attempts                int // 0: unknown
	Evidence                string
}

func rowOf(c records.Call) callRow {
	v := func(p *float64) float64 {
		if p == nil {
			return -1
		}
		return *p
	}
	r := callRow{ID: c.CallID, Provider: c.Provider, Model: c.Model, Op: c.Operation, OK: "unknown",
		In: v(c.InputTokens), Read: v(c.CacheReadTokens), Write: v(c.CacheWriteTokens), Out: v(c.OutputTokens),
		Reasoning: v(c.ReasoningTokens), Cost: v(c.CostUSD), Evidence: c.Evidence}
	if c.Success != nil {
		r.OK = fmt.Sprint(*c.Success)
	}
	if c.Attempts != nil {
		r.Attempts = *c.Attempts
	}
	return r
}

func rowsOf(set *records.Set) []callRow {
	var rows []callRow
	for _, c := range set.Calls {
		rows = append(rows, rowOf(c))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	return rows
}

// Each convention's hand-made fixture (testdata/README.md says from which
// text) gives these calls; a span two conventions count is one call, and
// the spans no convention makes a call are counted by reason.
func TestConventionFixtures(t *testing.T) {
	const none = records.EvidenceNone
	tests := []struct {
		fixture string
		calls   []callRow
		ignored map[string]int
	}{
		{"openinference_spans.jsonl", []callRow{
			{"d000000000000002", "anthropic", "claude-sonnet-4-5", "chat", "true", 200, 1000, 300, 80, 20, 0.0042, 0, none},
			{"d000000000000003", "openai", "gpt-4o", "chat", "false", -1, -1, -1, -1, -1, -1, 0, none},
			{"d000000000000004", "openai", "text-embedding-3-small", "embeddings", "true", 12, -1, -1, -1, -1, -1, 0, none},
			// The OpenAI instrumentor's span, not LangChain's around it.
			{"e000000000000002", "openai", "gpt-4o-mini-2024-07-18", "chat", "true", 72, 128, -1, 40, 0, -1, 0, none},
		}, map[string]int{
			"LLM span around another model-call span":        1,
			"OpenInference CHAIN span, not a model call":     1,
			"OpenInference RETRIEVER span, not a model call": 1,
		}},
		{"openllmetry_legacy.jsonl", []callRow{
			{"f000000000000002", "openai", "gpt-3.5-turbo", "chat", "true", 70, -1, -1, 12, -1, -1, 0, none},
			{"f000000000000003", "openai", "gpt-3.5-turbo-instruct", "text_completion", "true", 9, -1, -1, 30, -1, -1, 0, none},
		}, map[string]int{"no GenAI attributes (not a model call, agent or tool)": 1}},
		{"vercel_usage.jsonl", []callRow{
			// AI SDK 6: the split as given.
			{"a100000000000002", "anthropic", "claude-sonnet-4-5", "chat", "true", 1, 4429, 4761, 93, 0, -1, 0, none},
			// AI SDK 5, OpenAI: the input includes the cache reads.
			{"a100000000000004", "openai", "o4-mini", "chat", "true", 976, 1024, -1, 300, 256, -1, 0, none},
			// AI SDK 5, Anthropic: the input is uncached; writes from providerMetadata.
			{"a100000000000006", "anthropic", "claude-3-5-haiku-latest", "chat", "true", 35, 2000, 400, 20, -1, -1, 0, none},
			// AI SDK 4, Anthropic: both cache counts from providerMetadata.
			{"a100000000000008", "anthropic", "claude-3-5-sonnet-20241022", "chat", "true", 12, 900, 50, 7, -1, -1, 0, none},
			// AI SDK 4, OpenAI: cachedPromptTokens and reasoningTokens from providerMetadata.
			{"a10000000000000a", "openai", "o3-mini", "chat", "true", 476, 1024, -1, 200, 64, -1, 0, none},
		}, map[string]int{"no GenAI attributes (not a model call, agent or tool)": 5}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			set, _ := parseFixture(t, tt.fixture)
			compare(t, "calls", rowsOf(set), tt.calls)
			compare(t, "ignored", set.Ignored, tt.ignored)
		})
	}
}

// OpenInference's failed span keeps its error; its session and the
// chain's TOOL span reach the run.
func TestOpenInferenceDetails(t *testing.T) {
	set, _ := parseFixture(t, "openinference_spans.jsonl")
	for _, c := range set.Calls {
		switch c.CallID {
		case "d000000000000002":
			if c.Session != "oi-session" {
				t.Errorf("session %q", c.Session)
			}
		case "d000000000000003":
			if c.Error != "RateLimitError: 429" || c.ErrorType != "openai.RateLimitError" {
				t.Errorf("error %q, type %q", c.Error, c.ErrorType)
			}
		}
	}
	for _, r := range set.Runs {
		if r.RunID == strings.Repeat("1", 32) && !strings.Contains(string(r.Detail), `"tool_calls":1,`) {
			t.Errorf("run detail %s; want one tool call", r.Detail)
		}
	}
}

// Codex over its Responses websocket: a codex.websocket_request per
// attempt, ended by a failed codex.websocket_event or by the
// response.completed sse_event with the tokens.
func TestCodexWebsocketFixture(t *testing.T) {
	set, _ := parseFixture(t, "codex_websocket.jsonl")
	sort.SliceStable(set.Calls, func(i, j int) bool { return set.Calls[i].TS.Before(*set.Calls[j].TS) })
	var got []callRow
	for _, c := range set.Calls {
		r := rowOf(c)
		r.ID = ""
		got = append(got, r)
	}
	const attr = records.EvidenceAttribute
	compare(t, "calls", got, []callRow{
		{"", "openai", "gpt-5.5", "chat", "true", 2000, 8000, -1, 120, 64, -1, 1, attr},
		{"", "openai", "gpt-5.5", "chat", "true", 12000, 0, -1, 30, 0, -1, 2, attr},
		{"", "openai", "gpt-5.5", "chat", "unknown", -1, -1, -1, -1, -1, -1, 1, attr},
		{"", "openai", "gpt-5.5", "chat", "false", -1, -1, -1, -1, -1, -1, 1, attr},
	})
	if e := set.Calls[3].Error; e != `{"code":"server_error"}` {
		t.Errorf("failed call's error %q", e)
	}
	type att struct {
		n       int
		ok, err string
	}
	var atts []att
	for _, a := range set.CallAttempts {
		ok := "unknown"
		if a.Success != nil {
			ok = fmt.Sprint(*a.Success)
		}
		atts = append(atts, att{a.Attempt, ok, a.Error})
	}
	compare(t, "attempts", atts, []att{
		{1, "true", ""},
		{1, "false", "stream closed before response.completed"},
		{2, "true", ""},
		{1, "unknown", ""},
		{1, "false", `{"code":"server_error"}`},
	})
}

// The real Codex capture (codex-cli 0.145.0 over the websocket, in
// xorcise's envelope): one call per websocket_request, its tokens those
// of the response.completed that follows, as counted here from the raw
// events.
func TestRealCodexWebsocket(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(realData, "xorcise", "codex_real_run.json"))
	if err != nil {
		t.Skipf("real OTLP samples not present: %v", err)
	}
	var w struct {
		LogRecords []struct {
			Payload struct {
				ResourceLogs []struct {
					ScopeLogs []struct {
						LogRecords []struct {
							Attributes []struct {
								Key   string
								Value map[string]any
							}
						}
					}
				}
			}
		} `json:"log_records"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	var requests int
	var in, read, out float64
	for _, r := range w.LogRecords {
		for _, rl := range r.Payload.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				for _, lr := range sl.LogRecords {
					a := map[string]string{}
					for _, kv := range lr.Attributes {
						for _, v := range kv.Value { // stringValue, intValue (a string) or boolValue
							a[kv.Key] = fmt.Sprint(v)
						}
					}
					var f [3]float64
					switch {
					case a["event.name"] == "codex.websocket_request":
						requests++
					case a["event.name"] == "codex.sse_event" && a["event.kind"] == "response.completed":
						fmt.Sscan(a["input_token_count"], &f[0])
						fmt.Sscan(a["cached_token_count"], &f[1])
						fmt.Sscan(a["output_token_count"], &f[2])
						in, read, out = in+f[0]-f[1], read+f[1], out+f[2]
					}
				}
			}
		}
	}
	set, _, err := parse(b)
	checkSet(t, set, err)
	if err != nil {
		t.Fatal(err)
	}
	var got [3]float64
	for _, c := range set.Calls {
		if c.Source != sourceCodex || !*c.Success || *c.Attempts != 1 || c.Model != "gpt-5.5" || c.Provider != "openai" {
			t.Errorf("call %+v", rowOf(c))
		}
		got[0], got[1], got[2] = got[0]+*c.InputTokens, got[1]+*c.CacheReadTokens, got[2]+*c.OutputTokens
	}
	if len(set.Calls) != requests || requests != 3 {
		t.Fatalf("%d calls; want one per websocket_request (%d, 3)", len(set.Calls), requests)
	}
	compare(t, "tokens (input, cache read, output)", got, [3]float64{in, read, out})
	compare(t, "tokens, as counted once by hand", got, [3]float64{24839, 15104, 53})
}
