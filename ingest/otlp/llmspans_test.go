package otlp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/records"
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

// The real Laminar capture of an OpenHands run (xorcise's envelope, ids
// in base64), read as the file stands: its 10 litellm.completion spans
// are calls whose tokens equal the sums counted here from the raw
// attributes, its 8 TOOL spans are the run's tool calls, and the other 17
// spans are counted as not used.
func TestRealLaminarSpans(t *testing.T) {
	p := filepath.Join(realData, "xorcise", "openhands_real_run.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Skipf("real OTLP samples not present: %v", err)
	}
	var wrapped struct {
		Records []struct {
			Payload struct {
				ResourceSpans []struct {
					ScopeSpans []struct {
						Spans []struct {
							Attributes []struct {
								Key   string
								Value map[string]any
							}
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b, &wrapped); err != nil {
		t.Fatal(err)
	}
	// An independent count: the LLM spans' LiteLLM usage, whose input
	// includes the cache reads and writes.
	var spans, llm, tools int
	var in, read, write, out float64
	for _, r := range wrapped.Records {
		for _, rs := range r.Payload.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					spans++
					a := map[string]float64{}
					kind := ""
					for _, kv := range sp.Attributes {
						if v, ok := kv.Value["stringValue"].(string); ok && kv.Key == "lmnr.span.type" {
							kind = v
						}
						if v, ok := kv.Value["intValue"].(string); ok { // int64 as a string
							var f float64
							if _, err := fmt.Sscan(v, &f); err == nil {
								a[kv.Key] = f
							}
						}
					}
					switch kind {
					case "LLM":
						llm++
						in += a["gen_ai.usage.input_tokens"] - a["gen_ai.usage.cache_read_input_tokens"] - a["gen_ai.usage.cache_creation_input_tokens"]
						read += a["gen_ai.usage.cache_read_input_tokens"]
						write += a["gen_ai.usage.cache_creation_input_tokens"]
						out += a["gen_ai.usage.output_tokens"]
					case "TOOL":
						tools++
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
	if len(set.Calls) != llm || llm != 10 || len(set.Problems) != 0 {
		t.Fatalf("%d calls, %d problems; want %d LLM spans (10), 0", len(set.Calls), len(set.Problems), llm)
	}
	var got struct{ in, read, write, out float64 }
	for _, c := range set.Calls {
		if c.Model != "bedrock/au.anthropic.claude-sonnet-4-5-20250929-v1:0" || c.Provider != "bedrock" ||
			c.Operation != "chat" || !*c.Success || c.Attempts != nil || c.Evidence != records.EvidenceNone ||
			c.Session != "1cb4e720-a265-472b-9c28-cdb35de8aa0f" || c.ReasoningTokens != nil {
			t.Errorf("call %+v", c)
		}
		got.in += *c.InputTokens
		got.read += *c.CacheReadTokens
		got.write += *c.CacheWriteTokens
		got.out += *c.OutputTokens
	}
	compare(t, "tokens (input, cache read, cache write, output)", []float64{got.in, got.read, got.write, got.out},
		[]float64{in, read, write, out})
	compare(t, "tokens, as counted once by hand", []float64{in, read, write, out}, []float64{127, 165298, 22284, 4357})
	if len(set.Runs) != 1 || !strings.Contains(string(set.Runs[0].Detail), fmt.Sprintf(`"tool_calls":%d,`, tools)) || tools != 8 {
		t.Errorf("runs %+v; want one with %d tool calls", set.Runs, tools)
	}
	compare(t, "ignored", set.Ignored, map[string]int{"no GenAI attributes (not a model call, agent or tool)": spans - llm - tools})
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
