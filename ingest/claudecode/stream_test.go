package claudecode

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/orchstat/orchstat/model/records"
	"github.com/orchstat/orchstat/model/records/recordstest"
)

// parse reads a whole file as Stream.Feed does, and says what became of
// its lines.
func parse(path string, b []byte) (*records.Set, tally, error) {
	s := newStream(path)
	records.FeedLines(s, b, 0, 0)
	set := s.Final()
	open, err := s.Open()
	if err != nil {
		return nil, s.T, err
	}
	set.Merge(open)
	return set, s.T, nil
}

// streamFiles are the fixtures and the real transcripts, when present.
func streamFiles(t testing.TB) []string {
	var files []string
	for _, root := range []string{"testdata", realData} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
				files = append(files, p)
			}
			return nil
		})
	}
	return files
}

// Any split of a file's lines into readings, with State and Resume
// between them, gives what one whole reading gives.
func TestStreamSplits(t *testing.T) {
	if _, err := os.Stat(realData); err != nil {
		t.Logf("real Claude Code transcripts not present, fixtures only: %v", err)
	}
	for _, p := range streamFiles(t) {
		t.Run(p, func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			recordstest.CheckStream(t, Stream, p, b, 50, 1)
		})
	}
}

// maxFuzzInput bounds FuzzStream's inputs.
const maxFuzzInput = 8 << 10

// FuzzStream holds the stream to its contract on any input: no panic, and
// any split reads as the whole.
func FuzzStream(f *testing.F) {
	for _, p := range streamFiles(f) {
		if b, err := os.ReadFile(p); err == nil && len(b) <= maxFuzzInput {
			f.Add(b, uint64(1))
		}
	}
	f.Add([]byte(`{"type":"system","subtype":"api_error","retryAttempt":2}`+"\n"+`{"type":"assistant","message":{"id":"m","model":"<synthetic>"},"isApiErrorMessage":true}`+"\n"+`{"type":"assistant","message":{"id":"m","model":"x"}}`), uint64(7))
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) {
		if len(b) > maxFuzzInput {
			// CheckStream's cost is the cuts times the open state: large
			// inputs add little but time.
			t.Skip()
		}
		recordstest.CheckStream(t, Stream, "/h/.claude/projects/p/s.jsonl", b, 4, seed)
		recordstest.CheckStream(t, Stream, "/h/.claude/projects/p/s/subagents/agent-a.jsonl", b, 2, seed)
	})
}

// FuzzResume: a state that is not one the stream wrote is an error, never
// a panic, and a state it accepts reads on without one.
func FuzzResume(f *testing.F) {
	s := newStream("s.jsonl")
	_, b := readFixture(f, "exhausted.jsonl")
	records.FeedLines(s, b[:len(b)/2], 0, 0)
	st, _ := s.State()
	f.Add(st)
	f.Add([]byte(`{"v":1,"chain":{"first":1}}`))
	f.Add([]byte(`{"v":1,"ids":"AAAAAAAAAAA=","next":300}`))
	f.Fuzz(func(t *testing.T, st []byte) {
		s, err := Stream.Resume("s.jsonl", st)
		if err != nil {
			return
		}
		records.FeedLines(s, b, 0, 0)
		s.Final()
		s.Open()
		s.State()
	})
}

func TestResumeRejects(t *testing.T) {
	good, _ := newStream("s.jsonl").State()
	tests := map[string]string{
		"garbage":           "\x00\x01not json",
		"not an object":     "[1,2]",
		"no version":        `{"no":3}`,
		"another version":   strings.Replace(string(good), `"v":1`, `"v":99`, 1),
		"empty chain":       `{"v":1,"chain":{"first":1}}`,
		"open without line": `{"v":1,"cur":{"first":1}}`,
		"nil closed call":   `{"v":1,"done":[null]}`,
		"ring out of range": `{"v":1,"ids":"AAAAAAAAAAA=","next":300}`,
		"ring not of ids":   `{"v":1,"ids":"AAAA"}`,
		"bad tally":         `{"v":1,"tally":"x"}`,
	}
	for name, st := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := Stream.Resume("s.jsonl", []byte(st)); err == nil {
				t.Errorf("Resume(%q) took it", st)
			}
		})
	}
	if _, err := Stream.Resume("s.jsonl", good); err != nil {
		t.Errorf("Resume of a new stream's state: %v", err)
	}
}

// synthetic writes n calls: a user line and a response of two streamed
// lines each, a retried one every tenth.
func syntheticTranscript(n int) []byte {
	var buf bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&buf, `{"type":"user","sessionId":"s1","uuid":"u%d","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"go"}}`+"\n", i)
		if i%10 == 0 {
			fmt.Fprintf(&buf, `{"type":"system","subtype":"api_error","sessionId":"s1","retryAttempt":1,"retryInMs":500,"error":{"status":529}}`+"\n")
		}
		for part := 0; part < 2; part++ {
			fmt.Fprintf(&buf, `{"type":"assistant","sessionId":"s1","requestId":"req_%d","timestamp":"2026-01-01T00:00:01Z","message":{"id":"msg_%d","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"t%d"}],"usage":{"input_tokens":3,"output_tokens":%d}}}`+"\n", i, i, i, part+1)
		}
	}
	return buf.Bytes()
}

// A long file read a piece at a time keeps a State that does not grow
// with the calls closed, and gives every call once.
func TestStreamLongFile(t *testing.T) {
	if testing.Short() {
		t.Skip("scale: a 100,500-line transcript read in pieces; go test ./... runs it (skipped under -short)")
	}
	const calls = 35_000 // 100,500 lines
	b := syntheticTranscript(calls)
	var s records.Stream = Stream.New("/h/.claude/projects/p/s1.jsonl")
	out := &records.Set{}
	off, no, biggest := int64(0), 0, 0
	for len(b) > 0 {
		n := 32 << 10
		if n > len(b) {
			n = len(b)
		}
		piece := b[:n]
		if i := bytes.LastIndexByte(piece, '\n'); i >= 0 && n < len(b) {
			piece = piece[:i+1]
		}
		off, no = records.FeedLines(s, piece, off, no)
		b = b[len(piece):]
		out.Merge(s.Final())
		st, err := s.State()
		if err != nil {
			t.Fatal(err)
		}
		biggest = max(biggest, len(st))
		if s, err = Stream.Resume("/h/.claude/projects/p/s1.jsonl", st); err != nil {
			t.Fatal(err)
		}
	}
	if no < 100_000 {
		t.Fatalf("only %d lines", no)
	}
	if biggest > 4<<10 {
		t.Errorf("State grew to %d bytes", biggest)
	}
	open, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	if len(open.Calls) > 1 {
		t.Errorf("%d calls still open at the end; want the last response only", len(open.Calls))
	}
	out.Merge(open)
	ids := map[string]bool{}
	for _, c := range out.Calls {
		ids[c.CallID] = true
	}
	if len(out.Calls) != calls || len(ids) != calls || len(out.CallAttempts) != calls/10*2 || len(out.Runs) != 1 {
		t.Fatalf("%d calls (%d ids), %d attempts, %d runs; want %d, %d, 1", len(out.Calls), len(ids), len(out.CallAttempts), len(out.Runs), calls, calls/10*2)
	}
	want := fmt.Sprintf(`"calls":%d,"failed_calls":0,"tool_calls":%d`, calls, calls)
	if !strings.Contains(string(out.Runs[0].Detail), want) {
		t.Errorf("run detail %s, want %s", out.Runs[0].Detail, want)
	}
}

// State stays small after 10,000 closed calls.
func TestStateSmall(t *testing.T) {
	s := newStream("/h/.claude/projects/p/s1.jsonl")
	records.FeedLines(s, syntheticTranscript(10_000), 0, 0)
	set := s.Final()
	st, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Calls) < 9_999 || len(st) > 4<<10 {
		t.Errorf("%d calls committed, State %d bytes", len(set.Calls), len(st))
	}
}

// What the bounds and the closing of a response do, each on a whole file
// and at every split.
func TestStreamBounds(t *testing.T) {
	user := func(n int) string {
		return strings.Repeat(`{"type":"user","sessionId":"s1","message":{"role":"user","content":"go"}}`+"\n", n)
	}
	asst := func(id, model string) string {
		return `{"type":"assistant","sessionId":"s1","requestId":"r` + id + `","message":{"id":"` + id + `","model":"` + model + `","usage":{"input_tokens":1,"output_tokens":1}}}` + "\n"
	}
	failed := `{"type":"assistant","sessionId":"s1","uuid":"f1","isApiErrorMessage":true,"message":{"model":"<synthetic>","content":"API Error: 500"}}` + "\n"
	retry := func(n int) string {
		return fmt.Sprintf(`{"type":"system","subtype":"api_error","sessionId":"s1","uuid":"e%d","retryAttempt":%d}`+"\n", n, n)
	}
	var chain strings.Builder
	for n := 1; n <= maxChain+1; n++ {
		chain.WriteString(retry(n))
	}
	tests := []struct {
		name, path, in string
		want           []string // "CallID model attempts"
	}{
		{"streamed lines around a tool result are one call", "s1.jsonl",
			asst("m1", "opus") + user(1) + asst("m1", "opus"), []string{"m1 opus 1"}},
		{"a message again after another call is another call", "s1.jsonl",
			asst("m1", "opus") + asst("m2", "opus") + asst("m1", "opus"), []string{"m1 opus 1", "m2 opus 1", "m1@3 opus 1"}},
		{"a failure takes the nearest model, the earlier on a tie", "s1.jsonl",
			asst("m1", "opus") + failed + asst("m2", "haiku"), []string{"m1 opus 1", "f1 opus -", "m2 haiku 1"}},
		{"a failure takes a later model within the gap", "s1.jsonl",
			failed + user(maxModelGap-2) + asst("m2", "haiku"), []string{"f1 haiku -", "m2 haiku 1"}},
		{"but not past it", "s1.jsonl",
			failed + user(maxModelGap) + asst("m2", "haiku"), []string{"f1  -", "m2 haiku 1"}},
		{"a chain longer than maxChain is cut", "s1.jsonl",
			chain.String() + asst("m1", "opus"), []string{"e1  1000", "m1 opus 1002"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := ParseTranscript(tt.path, []byte(tt.in))
			checkSet(t, set, err)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range set.Calls {
				got = append(got, c.CallID+" "+c.Model+" "+i(c.Attempts))
			}
			compare(t, "calls", got, tt.want)
			recordstest.CheckStream(t, Stream, tt.path, []byte(tt.in), 5, 3)
		})
	}
}

// The run's identity waits for the lines that name it, up to
// maxIdentityWait conversation lines.
func TestStreamIdentity(t *testing.T) {
	noSession := strings.Repeat(`{"type":"user","message":{"role":"user","content":"go"}}`+"\n", maxIdentityWait)
	named := `{"type":"user","sessionId":"late","message":{"role":"user","content":"go"}}` + "\n"
	for _, tt := range []struct{ name, in, want string }{
		{"named within the wait", noSession[:len(noSession)/2] + named, "late"},
		{"named after it", noSession + named, "s1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set, err := ParseTranscript("/h/.claude/projects/p/s1.jsonl", []byte(tt.in))
			if err != nil || len(set.Runs) != 1 || set.Runs[0].RunID != tt.want {
				t.Fatalf("err %v, runs %+v; want run %s", err, set.Runs, tt.want)
			}
			recordstest.CheckStream(t, Stream, "/h/.claude/projects/p/s1.jsonl", []byte(tt.in), 10, 4)
		})
	}
}
