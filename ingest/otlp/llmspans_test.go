package otlp

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// LLM spans without gen_ai.operation.name, as OpenLLMetry (Traceloop),
// Laminar and LiteLLM write them (gen_ai.system, a model, prompt and
// completion tokens, llm.request.type), are calls; a framework's LLM span
// around a provider SDK's is the same request and counted once; the spans
// that give no row are counted with their reason.
func TestLLMSpansWithoutOperationName(t *testing.T) {
	set, _ := parseFixture(t, "llm_spans.jsonl")
	type row struct {
		id, provider, model, op string
		ok                      bool
		in, out                 float64
	}
	var got []row
	for _, c := range set.Calls {
		r := row{id: c.CallID, provider: c.Provider, model: c.Model, op: c.Operation, ok: *c.Success}
		if c.InputTokens != nil {
			r.in = *c.InputTokens
		}
		if c.OutputTokens != nil {
			r.out = *c.OutputTokens
		}
		got = append(got, r)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].id < got[j].id })
	want := []row{
		{"b000000000000002", "openai", "gpt-4o-mini", "chat", true, 120, 30},
		{"b000000000000003", "openai", "gpt-4o", "chat", false, 0, 0},
		{"b000000000000004", "openai", "text-embedding-3-small", "embeddings", true, 8, 0},
		{"c000000000000002", "openai", "gpt-4o-mini", "chat", true, 50, 5},
	}
	compare(t, "calls", got, want)
	for _, c := range set.Calls {
		if c.CallID == "b000000000000003" && c.Error != "Error code: 429 - rate limit exceeded" {
			t.Errorf("failed call's error: %q", c.Error)
		}
	}
	compare(t, "ignored", set.Ignored, map[string]int{
		"LLM span around another model-call span":               1,
		"no GenAI attributes (not a model call, agent or tool)": 1,
		"gen_ai.system without a model and token usage":         1,
	})
}

// The real Laminar capture of an OpenHands run (xorcise's fixture, its
// OTLP payloads inside a wrapper, ids in base64): its 10 litellm.completion
// spans are calls with model and tokens; the other 25 spans are counted
// as not used.
func TestRealLaminarSpans(t *testing.T) {
	p := filepath.Join(realData, "xorcise", "openhands_real_run.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Skipf("real OTLP samples not present: %v", err)
	}
	var wrapped struct {
		Records []struct {
			Payload map[string]any `json:"payload"`
		} `json:"records"`
	}
	if err := json.Unmarshal(b, &wrapped); err != nil {
		t.Fatal(err)
	}
	var file []byte
	spans := 0
	for _, r := range wrapped.Records {
		// The wrapper's ids are base64; OTLP JSON's are hex.
		for _, rs := range r.Payload["resourceSpans"].([]any) {
			for _, ss := range rs.(map[string]any)["scopeSpans"].([]any) {
				for _, s := range ss.(map[string]any)["spans"].([]any) {
					sp := s.(map[string]any)
					spans++
					for _, k := range []string{"traceId", "spanId", "parentSpanId"} {
						if v, _ := sp[k].(string); v != "" {
							raw, err := base64.StdEncoding.DecodeString(v)
							if err != nil {
								t.Fatalf("%s %q: %v", k, v, err)
							}
							sp[k] = hex.EncodeToString(raw)
						}
					}
				}
			}
		}
		line, err := json.Marshal(r.Payload)
		if err != nil {
			t.Fatal(err)
		}
		file = append(append(file, line...), '\n')
	}
	set, _, err := parse(file)
	checkSet(t, set, err)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Calls) != 10 || len(set.Problems) != 0 {
		t.Fatalf("%d calls, %d problems; want 10, 0", len(set.Calls), len(set.Problems))
	}
	for _, c := range set.Calls {
		if c.Model == "" || c.Provider == "" || c.InputTokens == nil || c.OutputTokens == nil || c.Operation != "chat" {
			t.Errorf("call %+v", c)
		}
	}
	ignored := 0
	for _, n := range set.Ignored {
		ignored += n
	}
	if ignored != spans-10 {
		t.Errorf("%d spans counted as not used, want %d: %v", ignored, spans-10, set.Ignored)
	}
	t.Logf("%d spans: %d calls; not used: %v; provider %q model %q", spans, len(set.Calls), set.Ignored, set.Calls[0].Provider, set.Calls[0].Model)
}

// A byte that is not UTF-8 in one span's name costs that string, not the
// whole batch (issue 26 saw a batch quarantined for one such byte; this
// position, at least, keeps it).
func TestInvalidUTF8KeepsTheBatch(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "http_retries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	clean, _, err := parse(b)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"name":"`))
	if i < 0 {
		t.Fatal("no span name in the fixture")
	}
	i += len(`"name":"`)
	dirty := append(append(append([]byte{}, b[:i]...), 0xff), b[i:]...)
	got, _, err := parse(dirty)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Problems) != len(clean.Problems) || len(got.Calls) != len(clean.Calls) || len(got.Calls) == 0 {
		t.Errorf("problems %d, calls %d; want %d and %d", len(got.Problems), len(got.Calls), len(clean.Problems), len(clean.Calls))
	}
}
