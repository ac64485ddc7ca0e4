package trace

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	ok := func(typ, run, ts string) Event {
		tt, _ := time.Parse(time.RFC3339Nano, ts)
		return Event{Type: typ, RunID: run, Time: tt.UTC(), SchemaVersion: 1, HasSchema: true}
	}
	tests := []struct {
		name   string
		line   string
		want   Event
		field  string
		reason string // substring of the quarantine reason; "" = accepted
	}{
		{name: "valid", line: `{"type":"RunStarted","schemaVersion":1,"timestamp":"2026-01-29T17:48:11.416Z","runId":"1","payload":{"goal":"g"}}`, want: ok("RunStarted", "1", "2026-01-29T17:48:11.416Z")},
		{name: "key order and spaces", line: ` { "payload" : { } , "runId":"r","timestamp":"2026-01-29T17:48:11Z","type":"X","schemaVersion":1 } `, want: ok("X", "r", "2026-01-29T17:48:11Z")},
		{name: "offset timestamp", line: `{"type":"X","schemaVersion":1,"timestamp":"2026-01-29T19:48:11.5+02:00","runId":"r","payload":{}}`, want: ok("X", "r", "2026-01-29T17:48:11.5Z")},
		{name: "escaped key and value", line: `{"ty\u0070e":"Run\u0053tarted","schemaVersion":1,"timestamp":"2026-01-29T17:48:11.416Z","runId":"1","payload":{}}`, want: ok("RunStarted", "1", "2026-01-29T17:48:11.416Z")},
		{name: "duplicate key last wins", line: `{"type":"A","type":"B","schemaVersion":1,"timestamp":"2026-01-29T17:48:11.416Z","runId":"1","payload":{}}`, want: ok("B", "1", "2026-01-29T17:48:11.416Z")},
		{name: "unknown type kept", line: `{"type":"SomethingNew","schemaVersion":1,"timestamp":"2026-01-29T17:48:11.416Z","runId":"1","payload":{"x":[1,2,{"y":null}]}}`, want: ok("SomethingNew", "1", "2026-01-29T17:48:11.416Z")},
		{name: "not JSON", line: `{"type":"A",`, reason: "not JSON"},
		{name: "garbage", line: `hello`, reason: "not JSON"},
		{name: "trailing garbage", line: `{} x`, reason: "not JSON"},
		{name: "array", line: `[1,2]`, reason: "not a JSON object"},
		{name: "string", line: `"x"`, reason: "not a JSON object"},
		{name: "missing type", line: `{"schemaVersion":1,"timestamp":"2026-01-29T17:48:11.416Z","runId":"1","payload":{}}`, field: "type", reason: "missing"},
		{name: "type not string", line: `{"type":3,"schemaVersion":1,"timestamp":"2026-01-29T17:48:11.416Z","runId":"1","payload":{}}`, field: "type", reason: "not a string"},
		{name: "empty type", line: `{"type":"","schemaVersion":1,"timestamp":"2026-01-29T17:48:11.416Z","runId":"1","payload":{}}`, field: "type", reason: "empty"},
		{name: "missing runId", line: `{"type":"A","schemaVersion":1,"timestamp":"2026-01-29T17:48:11.416Z","payload":{}}`, field: "runId", reason: "missing"},
		{name: "numeric runId", line: `{"type":"A","runId":17,"timestamp":"2026-01-29T17:48:11.416Z","payload":{}}`, field: "runId", reason: "not a string"},
		{name: "missing timestamp", line: `{"type":"A","schemaVersion":1,"runId":"1","payload":{}}`, field: "timestamp", reason: "missing"},
		{name: "bad timestamp", line: `{"type":"A","schemaVersion":1,"timestamp":"yesterday","runId":"1","payload":{}}`, field: "timestamp", reason: "unparsable"},
		{name: "bad month", line: `{"type":"A","schemaVersion":1,"timestamp":"2026-13-29T17:48:11.416Z","runId":"1","payload":{}}`, field: "timestamp", reason: "unparsable"},
		{name: "missing payload", line: `{"type":"A","schemaVersion":1,"timestamp":"2026-01-29T17:48:11.416Z","runId":"1"}`, field: "payload", reason: "missing"},
		{name: "year 0", line: `{"type":"A","schemaVersion":1,"timestamp":"0000-01-01T00:30:00+01:00","runId":"1","payload":{}}`, field: "timestamp", reason: "outside the years"},
		{name: "year 10000", line: `{"type":"A","schemaVersion":1,"timestamp":"9999-12-31T23:30:00-01:00","runId":"1","payload":{}}`, field: "timestamp", reason: "outside the years"},
		{name: "payload array", line: `{"type":"A","schemaVersion":1,"timestamp":"2026-01-29T17:48:11.416Z","runId":"1","payload":[]}`, field: "payload", reason: "not a JSON object"},
		{name: "payload null", line: `{"type":"A","schemaVersion":1,"timestamp":"2026-01-29T17:48:11.416Z","runId":"1","payload":null}`, field: "payload", reason: "not a JSON object"},
		{name: "invalid utf8", line: "{\"type\":\"A\xff\",\"schemaVersion\":1,\"timestamp\":\"2026-01-29T17:48:11.416Z\",\"runId\":\"1\",\"payload\":{}}", reason: "invalid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.line))
			if tc.reason != "" {
				if err == nil {
					t.Fatalf("accepted %q, want quarantine %q", tc.line, tc.reason)
				}
				if err.Field != tc.field || !strings.Contains(err.Reason, tc.reason) {
					t.Fatalf("got %+v, want field %q reason ~%q", err, tc.field, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("quarantined: %v", err)
			}
			if got.Type != tc.want.Type || got.RunID != tc.want.RunID || !got.Time.Equal(tc.want.Time) || got.Time.Location() != time.UTC {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if !json.Valid(got.Payload) || got.Payload[0] != '{' {
				t.Fatalf("payload %q", got.Payload)
			}
		})
	}
}

func TestFastTimeAgreesWithTimeParse(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"2026-01-29T17:48:11.416Z", "2024-02-29T00:00:00.000Z", "2023-02-29T00:00:00.000Z",
		"2026-04-31T00:00:00.000Z", "2026-01-29T24:00:00.000Z", "2026-01-29T23:60:00.000Z",
		"2026-01-29T23:59:60.000Z", "0000-01-01T00:00:00.000Z", "2026-1a-29T17:48:11.416Z",
	} {
		want, werr := time.Parse(time.RFC3339Nano, s)
		got, gerr := ParseTime(s)
		if (werr == nil) != (gerr == nil) || (werr == nil && !got.Equal(want)) {
			t.Errorf("%s: ParseTime = %v, %v; time.Parse = %v, %v", s, got, gerr, want, werr)
		}
	}
}

func readAll(t *testing.T, r *Reader) []Line {
	t.Helper()
	var out []Line
	for {
		l, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		l.Bytes = append([]byte(nil), l.Bytes...)
		out = append(out, l)
	}
}

func TestReader(t *testing.T) {
	t.Parallel()
	in := "\xEF\xBB\xBFa\r\n\nbb\n  \ncc\r\npartial"
	r := NewReader(iotest.OneByteReader(strings.NewReader(in)), 0, 0)
	lines := readAll(t, r)
	want := []Line{{1, 0, []byte("a"), false, 1}, {2, 6, []byte(""), false, 0}, {3, 7, []byte("bb"), false, 2}, {4, 10, []byte("  "), false, 2}, {5, 13, []byte("cc"), false, 2}}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines %+v", len(lines), lines)
	}
	for i := range want {
		if lines[i].Num != want[i].Num || lines[i].Offset != want[i].Offset || !bytes.Equal(lines[i].Bytes, want[i].Bytes) {
			t.Errorf("line %d: got %+v, want %+v", i, lines[i], want[i])
		}
	}
	if r.Offset() != int64(len(in)-len("partial")) || r.LineNum() != 5 {
		t.Errorf("offset %d line %d", r.Offset(), r.LineNum())
	}
	// Resuming mid-file keeps numbering and does not strip a "BOM" there.
	r2 := NewReader(strings.NewReader("\xEF\xBB\xBFx\n"), 100, 7)
	l := readAll(t, r2)
	if len(l) != 1 || l[0].Num != 8 || l[0].Offset != 100 || string(l[0].Bytes) != "\xEF\xBB\xBFx" {
		t.Errorf("resume: %+v", l)
	}
}

func TestStreamReaderKeepsTheFinalLine(t *testing.T) {
	t.Parallel()
	r := NewStreamReader(strings.NewReader("a\nb"))
	lines := readAll(t, r)
	if len(lines) != 2 || string(lines[1].Bytes) != "b" || r.Offset() != 3 {
		t.Fatalf("%+v offset %d", lines, r.Offset())
	}
}

func TestReaderLongLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	in := "short\n" + long + "\n" + "ok\n" + long
	r := NewReader(strings.NewReader(in), 0, 0)
	r.maxLine = 100
	r.buf = make([]byte, 16)
	lines := readAll(t, r)
	if len(lines) != 3 || !lines[1].TooLong || lines[1].Num != 2 || lines[1].Offset != 6 || string(lines[2].Bytes) != "ok" || lines[2].Offset != 307 {
		t.Fatalf("got %+v", lines)
	}
	if r.Offset() != 310 {
		t.Fatalf("offset %d, want 310 (unterminated long line left for later)", r.Offset())
	}
	// A line of exactly maxLine bytes is accepted.
	r = NewReader(strings.NewReader(strings.Repeat("y", 100)+"\n"), 0, 0)
	r.maxLine = 100
	if l := readAll(t, r); len(l) != 1 || l[0].TooLong || len(l[0].Bytes) != 100 {
		t.Fatalf("got %+v", l)
	}
}

func TestPayload(t *testing.T) {
	t.Parallel()
	p := ParsePayload([]byte(`{"retries":2,"success":false,"provider":"a\"b","retries":"3","valid":true,"n":null,"o":{"k":1.5}}`))
	if p.Number("retries") != nil {
		t.Error("last duplicate (a string) should win: retries is not a number")
	}
	if b := p.Bool("success"); b == nil || *b {
		t.Error("success")
	}
	if s := p.String("provider"); s == nil || *s != `a"b` {
		t.Error("provider")
	}
	if p.Bool("n") != nil || p.String("missing") != nil {
		t.Error("null/missing")
	}
	if o, ok := p.Object("o"); !ok || *o.Number("k") != 1.5 {
		t.Error("nested")
	}
	big := ParsePayload([]byte(`{"a":1e999,"b":-1e999}`))
	if a, b := big.Number("a"), big.Number("b"); a == nil || !math.IsInf(*a, 1) || b == nil || !math.IsInf(*b, -1) {
		t.Error("an out-of-range number is still a number, ±Inf")
	}
}

func TestRealTraces(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../../../shared/testdata-external/orchestrator/runs/*/trace.jsonl")
	if len(files) == 0 {
		t.Skip("../shared/testdata-external is absent")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range readAll(t, NewReader(bytes.NewReader(b), 0, 0)) {
			if _, err := Parse(l.Bytes); err != nil {
				t.Errorf("%s:%d: %v", f, l.Num, err)
			}
		}
	}
}

func FuzzScanMatchesValid(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,-2.5e3,true,false,null,"\u00e9\n"]}`, `{"a":}`, `01`, `1.`, `"\x"`, "\"\x01\"", `{"a":1,}`, `[1,]`, ` {} `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := scanner{b: b}
		s.ws()
		err := s.value()
		if err == nil {
			s.ws()
			if s.i != len(b) {
				err = errSyntax
			}
		}
		if got, want := err == nil, json.Valid(b); got != want {
			t.Fatalf("scanner valid=%v, json.Valid=%v for %q", got, want, b)
		}
	})
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../../shared/testdata-external/orchestrator/runs/*/trace.jsonl")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		for _, l := range bytes.Split(b, []byte("\n")) {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"type":"A","schemaVersion":1,"timestamp":"2026-01-29T17:48:11.416Z","runId":"1","payload":{"retries":1}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := Parse(line)
		if err != nil {
			return
		}
		// Accepted lines are valid JSON objects whose decoded fields agree.
		var m map[string]json.RawMessage
		if jerr := json.Unmarshal(line, &m); jerr != nil {
			t.Fatalf("accepted invalid line %q: %v", line, jerr)
		}
		var typ, run string
		_ = json.Unmarshal(m["type"], &typ)
		_ = json.Unmarshal(m["runId"], &run)
		if typ != ev.Type || run != ev.RunID || !json.Valid(ev.Payload) {
			t.Fatalf("%q: got %q/%q", line, ev.Type, ev.RunID)
		}
		p := ParsePayload(ev.Payload)
		_ = p.Number("retries")
		_ = p.String("provider")
		checkTrustedIndex(t, ev.Payload)
	})
}

// checkTrustedIndex fails when ParsePayload, which skips strings without
// validating them again, indexes a validated object differently from the
// validating scanner.
func checkTrustedIndex(t *testing.T, obj []byte) {
	t.Helper()
	var want Payload
	s := scanner{b: obj}
	s.ws()
	if err := s.object(func(key []byte, esc bool, start int) {
		k := string(key)
		if esc {
			k = unescape(key)
		}
		want.keys = append(want.keys, k)
		want.vals = append(want.vals, obj[start:s.i])
	}); err != nil {
		t.Fatalf("%q: not a valid object: %v", obj, err)
	}
	if got := ParsePayload(obj); !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: ParsePayload gives %q %q, the validating scan %q %q", obj, got.keys, got.vals, want.keys, want.vals)
	}
}

// TestStopper holds the eight-bytes-at-a-time test to the byte table it
// stands for: every byte value at every position of a word, then random
// words, which mix stoppers and the bytes next to them (0x1f, 0x20, 0x21,
// 0x5b, 0x5d, 0x80, 0xff).
func TestStopper(t *testing.T) {
	naive := func(w []byte) bool {
		for _, c := range w {
			if !strSafe[c] {
				return true
			}
		}
		return false
	}
	w := make([]byte, 8)
	for pos := range 8 {
		for c := range 256 {
			for i := range w {
				w[i] = 'a'
			}
			w[pos] = byte(c)
			if got := stopper(binary.LittleEndian.Uint64(w)) != 0; got != naive(w) {
				t.Fatalf("byte %#x at %d: stopper %v", c, pos, got)
			}
		}
	}
	near := []byte{0, 0x1f, 0x20, 0x21, '"', '#', '\\', '[', ']', 0x7f, 0x80, 0xc3, 0xff, 'a'}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		for i := range w {
			if r.IntN(2) == 0 {
				w[i] = near[r.IntN(len(near))]
			} else {
				w[i] = byte(r.IntN(256))
			}
		}
		if got := stopper(binary.LittleEndian.Uint64(w)) != 0; got != naive(w) {
			t.Fatalf("% x: stopper %v", w, got)
		}
	}
}

// TestLongStrings checks the validating scanner and ParsePayload on strings
// whose quotes, backslash runs, control characters and non-ASCII fall at
// every offset of an eight-byte word, against encoding/json.
func TestLongStrings(t *testing.T) {
	parts := []string{`a`, `\\`, `\"`, `\\\\`, `\\\"`, `\u00e9`, `é`, `合計`, `\n`, `\t`, `/`, `bcdefgh`}
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 3000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		body := b.String()
		if n%7 == 0 { // an unescaped control character or a lone backslash: invalid
			at := r.IntN(len(body) + 1)
			body = body[:at] + []string{"\x01", "\n", `\`}[r.IntN(3)] + body[at:]
		}
		obj := []byte(`{"k":"` + body + `","next":1}`)
		s := scanner{b: obj}
		err := s.value()
		if err == nil && s.i != len(obj) {
			err = errSyntax
		}
		if got, want := err == nil, json.Valid(obj); got != want {
			t.Fatalf("%q: scanner valid=%v, json.Valid=%v", obj, got, want)
		}
		if err == nil {
			checkTrustedIndex(t, obj)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\n"), uint8(3))
	f.Add([]byte("\xEF\xBB\xBFx\ny"), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		r := NewReader(iotest.HalfReader(bytes.NewReader(in)), 0, 0)
		r.maxLine = 64
		r.buf = make([]byte, int(chunk%32)+1)
		var n int64
		for {
			l, err := r.Next()
			if err != nil {
				break
			}
			n++
			if l.Num != n || l.Offset < 0 || l.Offset >= int64(len(in)) {
				t.Fatalf("bad line %+v", l)
			}
		}
		if want := int64(bytes.LastIndexByte(in, '\n') + 1); r.Offset() != want {
			t.Fatalf("offset %d, want %d", r.Offset(), want)
		}
	})
}

// TestTooLongLineLength: an over-long line's Len is its full length, not
// the MaxRaw bytes kept of it, so quarantine.raw_bytes is the line's
// length as documented (a 100 MB line was stored with raw_bytes 65536).
func TestTooLongLineLength(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 3*MaxRaw+17)
	for _, stream := range []bool{false, true} {
		in := "short\n" + long + "\nafter\n"
		if stream {
			in = "short\n" + long // a stream's last line needs no newline
		}
		var r *Reader
		if stream {
			r = NewStreamReader(iotest.HalfReader(strings.NewReader(in)))
		} else {
			r = NewReader(iotest.HalfReader(strings.NewReader(in)), 0, 0)
		}
		r.maxLine = 2 * MaxRaw
		lines := readAll(t, r)
		if len(lines) < 2 || !lines[1].TooLong || lines[1].Len != int64(len(long)) || len(lines[1].Bytes) != MaxRaw {
			t.Fatalf("stream %v: %d lines; second: too long %v, Len %d, kept %d; want Len %d",
				stream, len(lines), len(lines) > 1 && lines[1].TooLong, lines[min(1, len(lines)-1)].Len, len(lines[min(1, len(lines)-1)].Bytes), len(long))
		}
	}
}

// TestNestedTooDeep: JSON nested past 10,000 levels is reported as such,
// not as a syntax error somewhere in it.
func TestNestedTooDeep(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	line := `{"type":"X","schemaVersion":1,"timestamp":"2026-01-01T00:00:00Z","runId":"r","payload":{"a":` + deep + `}}`
	_, err := Parse([]byte(line))
	if err == nil || !strings.Contains(err.Error(), "nested too deep") {
		t.Fatalf("trace line: %v", err)
	}
	if _, _, err := ParseObject([]byte(`{"a":` + deep + `}`)); err == nil || !strings.Contains(err.Error(), "nested too deep") {
		t.Fatalf("document: %v", err)
	}
	// Just within the limit is fine.
	ok := strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1)
	if _, _, err := ParseObject([]byte(`{"a":` + ok + `}`)); err != nil {
		t.Fatalf("within the limit: %v", err)
	}
}

// What the writer writes, the parser reads back as it was written, at
// the millisecond the orchestrator writes.
func TestWriterRoundTrip(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w := NewWriter(&b, "r1")
	at := time.Date(2026, 11, 21, 12, 0, 0, 416_900_000, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		typ     string
		payload any
		want    string
	}{
		{"RunStarted", map[string]any{"goal": "a<b & c"}, `{"goal":"a<b & c"}`},
		{"RunFinished", nil, `{}`},
	} {
		b.Reset()
		if err := w.Write(at, tc.typ, tc.payload); err != nil {
			t.Fatal(err)
		}
		line := b.Bytes()
		if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
			t.Fatalf("%q is not one line", line)
		}
		if !bytes.Contains(line, []byte(`"timestamp":"2026-11-21T11:00:00.416Z"`)) {
			t.Errorf("%s: timestamp not in the orchestrator's layout", line)
		}
		ev, lerr := Parse(bytes.TrimSuffix(line, []byte("\n")))
		if lerr != nil {
			t.Fatalf("%s: %v", line, lerr)
		}
		if ev.Type != tc.typ || ev.RunID != "r1" || !ev.Time.Equal(at.Truncate(time.Millisecond)) || ev.SchemaVersion != SchemaVersion || string(ev.Payload) != tc.want {
			t.Errorf("%s: parsed as %+v (payload %s)", line, ev, ev.Payload)
		}
	}
}

// NewWriter returns a writer of run runID's events to w.
func NewWriter(w io.Writer, runID string) *Writer { return &Writer{w: w, runID: runID} }

// Write writes one event as a line, in one Write: with a file opened
// O_APPEND, concurrent writers to the same trace (an orchestrator,
// another exec) never interleave within a line.
func (w *Writer) Write(at time.Time, typ string, payload any) error {
	line, err := AppendLine(nil, w.runID, typ, at, payload)
	if err != nil {
		return err
	}
	_, err = w.w.Write(line)
	return err
}

// Writer writes one run's events to a trace.
type Writer struct {
	w     io.Writer
	runID string
}
