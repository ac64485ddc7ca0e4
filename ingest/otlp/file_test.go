package otlp

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/orchstat/orchstat/model/records"
)

// One exporter in a traces and a logs pipeline interleaves both in a
// file; metrics lines and other log events are ignored.
func TestMixedFile(t *testing.T) {
	set, st := parseFixture(t, "mixed.jsonl")
	compare(t, "stats", st, stats{lines: 4, traces: 1, logs: 2, metrics: 1})
	var got []string
	for _, c := range set.Calls {
		got = append(got, c.Source+" "+c.CallID+" "+c.Provider+" "+c.Model)
	}
	compare(t, "calls", got, []string{
		"span f000000000000001 openai gpt-4o",
		"claude_code_event req_m1 anthropic claude-haiku-4-5",
	})
	compare(t, "runs", len(set.Runs), 2)
}

// A pretty-printed OTLP/HTTP payload, enums by name.
func TestPayload(t *testing.T) {
	set, st := parseFixture(t, "payload.json")
	compare(t, "stats", st, stats{lines: 1, traces: 1})
	compare(t, "calls", set.Calls, []records.Call{{
		System: records.OTel, RunID: "0a000000000000000000000000000008", Session: "conv-p",
		CallID: "0b00000000000001", Source: "span", Line: 1, TS: at(0), DurationMS: f(1234.5),
		Provider: "mistral_ai", Model: "mistral-large-latest", Operation: "chat", Success: yes,
		StatusCode: n(200), Evidence: records.EvidenceNone, InputTokens: f(33), OutputTokens: f(44),
	}})
}

// Every unreadable line is a Problem with its line and field; the good
// ones are kept.
func TestBadLines(t *testing.T) {
	set, st := parseFixture(t, "bad_lines.jsonl")
	compare(t, "stats", st, stats{lines: 11, traces: 3, bad: 8})
	compare(t, "problems", problems(set), []string{
		"2 json",          // cut short
		"3 (top level)",   // {}
		"4 json",          // a second object after the first
		"5 resourceSpans", // instrumentationLibrarySpans
		"6 resourceSpans[0].scopeSpans[0].spans[0].spanId", // no ids
		"7 resourceSpans",  // base64 ids
		"8 json",           // an array
		"10 (top level)",   // spans and logs in one object
		"11 resourceSpans", // kind "CLIENT", not SPAN_KIND_CLIENT
		"12 resourceSpans[0].scopeSpans[0].spans[0].spanId", // line 1 again
	})
	msgs := map[int]string{}
	for _, p := range set.Problems {
		msgs[p.Line] = p.Msg
	}
	compare(t, "why", []string{msgs[4], msgs[5], msgs[6]}, []string{
		"trailing data after the JSON object",
		`pre-1.0 OTLP ("instrumentationLibrarySpans") is not read`,
		"span without traceId or spanId",
	})
	compare(t, "calls", len(set.Calls), 1)
	b, err := os.ReadFile("testdata/bad_lines.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(bytes.IndexByte(b, '\n') + 1); set.Problems[0].Offset != want {
		t.Errorf("line 2 at offset %d, want %d", set.Problems[0].Offset, want)
	}
}

func TestWholeFile(t *testing.T) {
	lengthPrefixed := append([]byte{0, 0, 0, 12}, []byte("\x0a\x0a\x12\x08binary!!")...)
	tests := []struct {
		name  string
		in    string
		field string // of the error; "" when none
	}{
		{"empty", "", ""},
		{"blank lines", "\n \n", ""},
		{"proto", string(lengthPrefixed), "format"},
		{"zstd", "\x28\xb5\x2f\xfd\xa4\xb8\xc9\xd2\xe3\xf4", "format"},
		{"other JSON", `{"type":"user","sessionId":"s"}` + "\n", "resourceSpans"},
		{"text", "hello\nworld\n", "resourceSpans"},
		{"metrics only", `{"resourceMetrics":[]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Parse("x.json", []byte(tt.in))
			checkSet(t, set, err)
			var re *records.Error
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.field != "" && (!errors.As(err, &re) || re.Field != tt.field):
				t.Fatalf("error %v, want one on %s", err, tt.field)
			}
		})
	}
}

func TestSniff(t *testing.T) {
	tests := []struct {
		head string
		want bool
	}{
		{`{"resourceSpans":[{"resource":`, true},
		{"\ufeff{\n  \"resourceLogs\": [", true},
		{`{"resourceMetrics":[`, true},
		{`{"resource_spans":[`, true},
		{`{"partialSuccess":{}, "resourceSpans":[`, true},
		{`{"type":"session_meta","payload":{`, false},
		{`{"type":"assistant","message":{"content":"resourceSpans"`, false},
		{"\x00\x00\x01\x00\x0a", false},
		{"", false},
		{`[{"resourceSpans":[]}]`, false},
	}
	for _, tt := range tests {
		if got := Sniff([]byte(tt.head)); got != tt.want {
			t.Errorf("Sniff(%q) = %v, want %v", tt.head, got, tt.want)
		}
	}
}

// Every fixture is sniffed as OTLP, and parses the same twice.
func TestFixturesSniffed(t *testing.T) {
	paths, _ := filepath.Glob("testdata/*.json*")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !Sniff(b[:min(len(b), 512)]) {
			t.Errorf("%s: not sniffed", p)
		}
		a, _ := Parse(p, b)
		c, _ := Parse(p, b)
		compare(t, p, a, c)
	}
}
