package otlp

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/records/recordstest"
)

// tiny closes groups after a line or two, so that the property check
// cuts through closures, reappearing traces and the cap, not only open
// groups.
var tiny = streamFormat(limits{afterRoot: 1, idle: 2, maxOpen: 3, runIDs: 128, callIDs: 64})

// Every fixture read in random pieces gives what one reading gives, with
// the default windows (nothing closes in so short a file) and tiny ones.
func TestStreamFixtures(t *testing.T) {
	paths, _ := filepath.Glob("testdata/*.json*")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !isLines(b[:min(len(b), 512)]) {
			if filepath.Base(p) != "payload.json" {
				t.Errorf("%s: not taken for lines", p)
			}
			continue
		}
		t.Run(filepath.Base(p), func(t *testing.T) {
			recordstest.CheckStream(t, Stream, p, b, 50, 1)
			recordstest.CheckStream(t, tiny, p, b, 50, 2)
			// Parse is the stream.
			a, err := Parse(p, b)
			w, werr := Stream.Feed(p, b)
			if (err == nil) != (werr == nil) {
				t.Fatalf("Parse %v, Feed %v", err, werr)
			}
			compare(t, "Parse and Feed", a, w)
		})
	}
}

// collectorLines writes a real capture as a collector's file exporter
// would: one line per resource, ids in hex. Plain OTLP objects and
// xorcise's {records:[{payload}], log_records:[...]} wrapper are read.
func collectorLines(t *testing.T, b []byte) []byte {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	var payloads []map[string]any
	if _, ok := top["records"]; ok {
		var w struct {
			Records    []struct{ Payload map[string]any } `json:"records"`
			LogRecords []struct{ Payload map[string]any } `json:"log_records"`
		}
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		for _, r := range append(w.Records, w.LogRecords...) {
			payloads = append(payloads, r.Payload)
		}
	} else {
		var p map[string]any
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, p)
	}
	var out []byte
	for _, p := range payloads {
		for key, v := range p {
			list, _ := v.([]any)
			for _, res := range list {
				hexIDs(res)
				line, err := json.Marshal(map[string]any{key: []any{res}})
				if err != nil {
					t.Fatal(err)
				}
				out = append(append(out, line...), '\n')
			}
		}
	}
	return out
}

// hexIDs rewrites base64 trace and span ids (xorcise's wrapper) as hex.
func hexIDs(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			s, ok := e.(string)
			if ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") && s != "" {
				if _, err := hex.DecodeString(s); err != nil || len(s)%16 != 0 {
					if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
						x[k] = hex.EncodeToString(raw)
					}
				}
				continue
			}
			hexIDs(e)
		}
	case []any:
		for _, e := range x {
			hexIDs(e)
		}
	}
}

// The real captures, written out as collector files, read in random
// pieces give what one reading gives; with the default windows they also
// give what the capture read whole gives.
func TestStreamRealSamples(t *testing.T) {
	if _, err := os.Stat(realData); err != nil {
		t.Skipf("real OTLP samples not present: %v", err)
	}
	paths, _ := filepath.Glob(filepath.Join(realData, "*", "*.json"))
	if len(paths) == 0 {
		t.Fatalf("no captures under %s", realData)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if isLines(b[:min(len(b), 4096)]) {
			t.Errorf("%s: a pretty-printed object taken for lines", p)
		}
		lines := collectorLines(t, b)
		if !isLines(lines[:min(len(lines), 4096)]) {
			t.Errorf("%s: its collector file not taken for lines", p)
		}
		t.Run(filepath.Base(p), func(t *testing.T) {
			recordstest.CheckStream(t, Stream, p, lines, 50, 3)
			recordstest.CheckStream(t, tiny, p, lines, 50, 4)
			set, err := Stream.Feed(p, lines)
			checkSet(t, set, err)
			t.Logf("%d lines: %d calls, %d attempts, %d runs, %d problems", bytes.Count(lines, []byte("\n")),
				len(set.Calls), len(set.CallAttempts), len(set.Runs), len(set.Problems))
		})
	}
}

func TestLines(t *testing.T) {
	tests := []struct {
		head string
		want bool
	}{
		{"", true},
		{`{"resourceSpans":[]}` + "\n" + `{"resourceLogs":[]}`, true},
		{`{"resourceSpans":[{"resource":`, true}, // a first line longer than the head
		{"{\n  \"resourceSpans\": [\n", false},
		{"\ufeff{\n\t\"resourceLogs\": [", false},
		{`{"resourceSpans": [` + "\n  {", false},
		{`{"resourceSpans":[` + "\n" + `{"resourceSpans":[]}`, true}, // a cut first line, then lines
	}
	for _, tt := range tests {
		if got := isLines([]byte(tt.head)); got != tt.want {
			t.Errorf("isLines(%q) = %v, want %v", tt.head, got, tt.want)
		}
	}
}

// Resume refuses what is not a State of this version, and never panics.
func TestResumeRefuses(t *testing.T) {
	good, err := Stream.New("x").State()
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"empty":         "",
		"garbage":       "\x00\x01zz",
		"not an object": "[1,2]",
		"no version":    `{}`,
		"version 2":     strings.Replace(string(good), `"v":1`, `"v":2`, 1),
		"ring cut":      `{"v":1,"runs":"AAE="}`,
		"spans bad":     `{"v":1,"spans":"/////w==","span_at":[[1,0]]}`,
		"places short":  `{"v":1,"span_at":[[1,0]]}`,
	}
	for name, st := range tests {
		if _, err := Stream.Resume("x", []byte(st)); err == nil {
			t.Errorf("%s: resumed", name)
		}
	}
	if _, err := Stream.Resume("x", good); err != nil {
		t.Errorf("a fresh stream's state: %v", err)
	}
}

// spanJSON is one span of trace tr (a number) for the synthetic files.
func spanJSON(tr, id, parent int, name, attrs string, start int) string {
	p := ""
	if parent > 0 {
		p = fmt.Sprintf(`"parentSpanId":"%016x",`, parent)
	}
	return fmt.Sprintf(`{"traceId":"%032x","spanId":"%016x",%s"name":%q,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[%s]}`,
		tr, id, p, name, 1731000000000000000+start, 1731000000000000000+start+1000, attrs)
}

const chatAttrs = `{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.request.model","value":{"stringValue":"m"}}`

func tracesLine(spans ...string) string {
	return `{"resourceSpans":[{"scopeSpans":[{"scope":{"name":"s"},"spans":[` + strings.Join(spans, ",") + `]}]}]}` + "\n"
}

// Ten thousand traces, each closed afterRoot lines after its root (the
// file ends with that many metrics lines): State holds none of them,
// only the rings of recent ids, and every call comes out.
func TestStateSmallAfterManyCalls(t *testing.T) {
	s := newStream(defaults)
	out := &records.Set{}
	const n = 10000
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		b.WriteString(tracesLine(spanJSON(i, i, 0, "chat m", chatAttrs, i)))
	}
	for range defaults.afterRoot {
		b.WriteString(`{"resourceMetrics":[]}` + "\n")
	}
	records.FeedLines(s, b.Bytes(), 0, 0)
	out.Merge(s.Final())
	st, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	if len(st) > 4096 {
		t.Errorf("State is %d bytes after %d closed calls", len(st), n)
	}
	open, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	if len(open.Calls) != 0 {
		t.Errorf("%d calls open, want none", len(open.Calls))
	}
	out.Merge(open)
	checkSet(t, out, nil)
	if len(out.Calls) != n || len(out.Runs) != n {
		t.Errorf("%d calls, %d runs; want %d each", len(out.Calls), len(out.Runs), n)
	}
}

// A collector file of 100,000 lines: traces whose HTTP children are
// exported a few lines before their chat span and root, interleaved with
// other traces, a trace that never gets a root, metrics, and Claude Code
// events of sessions that come and go. Read in pieces, State stays small
// as traces close, and every call comes out once.
func TestLargeFile(t *testing.T) {
	if testing.Short() {
		t.Skip("large synthetic file; go test ./... runs it (skipped under -short)")
	}
	const lines = 100_000
	var b bytes.Buffer
	traces, events := 0, 0
	for i := 0; lineCount(&b) < lines; i++ {
		tr := i + 1
		http := `{"key":"http.request.method","value":{"stringValue":"POST"}},{"key":"http.response.status_code","value":{"intValue":"200"}}`
		// Children first, the call two lines later, the root after it.
		b.WriteString(tracesLine(spanJSON(tr, 3*tr+1, 3*tr+2, "POST", http, 10)))
		if i%7 == 0 {
			b.WriteString(`{"resourceMetrics":[]}` + "\n")
		}
		if i%5 == 0 {
			events++
			fmt.Fprintf(&b, `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"%d","eventName":"claude_code.api_request","attributes":[{"key":"session.id","value":{"stringValue":"s%d"}},{"key":"request_id","value":{"stringValue":"r%d"}}]}]}]}]}`+"\n", 1731000000000000000+i, i/200, i)
		}
		b.WriteString(tracesLine(spanJSON(tr, 3*tr+2, 3*tr+3, "chat m", chatAttrs, 5), spanJSON(tr, 3*tr+3, 0, "workflow", "", 0)))
		traces++
	}
	data := b.Bytes()
	s := Stream.New("big.jsonl")
	out := &records.Set{}
	var off int64
	var no, maxState int
	for len(data) > 0 {
		cut := bytes.IndexByte(data[min(len(data), 1<<20):], '\n')
		end := len(data)
		if cut >= 0 {
			end = min(len(data), 1<<20) + cut + 1
		}
		off, no = records.FeedLines(s, data[:end], off, no)
		data = data[end:]
		out.Merge(s.Final())
		st, err := s.State()
		if err != nil {
			t.Fatal(err)
		}
		maxState = max(maxState, len(st))
		if s, err = Stream.Resume("big.jsonl", st); err != nil {
			t.Fatal(err)
		}
	}
	open, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	out.Merge(open)
	checkSet(t, out, nil)
	if len(out.Calls) != traces+events {
		t.Errorf("%d calls, want %d traces' and %d events'", len(out.Calls), traces, events)
	}
	if len(out.CallAttempts) != traces {
		t.Errorf("%d attempts, want %d", len(out.CallAttempts), traces)
	}
	if len(out.Problems) != 0 {
		t.Errorf("problems: %v", out.Problems[:min(3, len(out.Problems))])
	}
	// What is open: the traces of the last afterRoot lines and the
	// sessions of the last idle lines, not the file.
	if maxState > 512<<10 {
		t.Errorf("State reached %d bytes", maxState)
	}
	t.Logf("%d lines, %d bytes: %d calls; largest State %d bytes", no, off, len(out.Calls), maxState)
}

// lineCount counts b's lines as it grows, without rescanning it.
var counted struct {
	b     *bytes.Buffer
	n, at int
}

func lineCount(b *bytes.Buffer) int {
	if counted.b != b {
		counted.b, counted.n, counted.at = b, 0, 0
	}
	counted.n += bytes.Count(b.Bytes()[counted.at:], []byte("\n"))
	counted.at = b.Len()
	return counted.n
}

// What closing changes. A child exported within afterRoot lines of its
// trace's root is part of the trace; one exported later starts the trace
// again, as a group of its own whose run takes a fresh id (trace#2)
// rather than repeat the first part's.
func TestLateSpan(t *testing.T) {
	lim := limits{afterRoot: 2, idle: 100, maxOpen: 100, runIDs: 8, callIDs: 8}
	metrics := `{"resourceMetrics":[]}` + "\n"
	http := `{"key":"http.request.method","value":{"stringValue":"POST"}}`
	root := tracesLine(spanJSON(1, 1, 0, "chat m", chatAttrs, 0))
	child := tracesLine(spanJSON(1, 2, 1, "POST", http, 10))
	late := tracesLine(spanJSON(1, 3, 0, "chat m", chatAttrs, 20))
	tests := []struct {
		name string
		file string
		runs []string
		ev   string // the first call's evidence
	}{
		{"child in time", root + metrics + child, []string{fmt.Sprintf("%032x", 1)}, records.EvidenceHTTPSpans},
		{"child too late", root + metrics + metrics + child, []string{fmt.Sprintf("%032x", 1)}, records.EvidenceNone},
		{"call too late", root + metrics + metrics + late, []string{fmt.Sprintf("%032x", 1), fmt.Sprintf("%032x#2", 1)}, records.EvidenceNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := streamFormat(lim)
			recordstest.CheckStream(t, f, "x", []byte(tt.file), 20, 5)
			set, err := f.Feed("x", []byte(tt.file))
			checkSet(t, set, err)
			var runs []string
			for _, r := range set.Runs {
				runs = append(runs, r.RunID)
			}
			compare(t, "runs", runs, tt.runs)
			compare(t, "evidence", set.Calls[0].Evidence, tt.ev)
		})
	}
}

// FuzzStream holds the stream to its contract on any input: no panic,
// and any split gives the rows of one reading, with the default windows
// and with tiny ones that close groups on every line or two.
func FuzzStream(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.jsonl")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, uint64(1))
		}
	}
	f.Add([]byte(tracesLine(spanJSON(1, 1, 0, "chat m", chatAttrs, 0))+"\n"+tracesLine(spanJSON(1, 1, 0, "chat m", chatAttrs, 0))), uint64(2))
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) {
		recordstest.CheckStream(t, Stream, "x.jsonl", b, 3, seed)
		recordstest.CheckStream(t, tiny, "x.jsonl", b, 3, seed)
		set, err := tiny.Feed("x.jsonl", b)
		checkSet(t, set, err)
	})
}
