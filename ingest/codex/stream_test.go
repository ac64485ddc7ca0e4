package codex

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

// fixturePaths names the fixtures as TestParseRollout does, so that their
// session ids come from the name.
var fixturePaths = map[string]string{
	"normal.jsonl":  sessions + "rollout-2026-05-13T09-00-00-" + normalID + ".jsonl",
	"retries.jsonl": sessions + "rollout-2026-05-14T10-00-00-" + retriesID + ".jsonl",
	"bad.jsonl":     sessions + "rollout-2026-05-15T08-00-00-" + badID + ".jsonl",
	"legacy.jsonl":  sessions + "rollout-2025-05-07T17-24-21-" + legacyID + ".jsonl",
}

const meta = `{"timestamp":"2026-05-13T09:00:00Z","type":"session_meta","payload":{"id":"` + normalID + `","cwd":"/w","model_provider":"openai"}}` + "\n"

// tokenLine is a token_count whose running total is total.
func tokenLine(total int) string {
	return fmt.Sprintf(`{"timestamp":"2026-05-13T09:00:01Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":0,"output_tokens":1,"reasoning_output_tokens":0,"total_tokens":%d}}}}`+"\n", total, total+1)
}

const (
	turnLine   = `{"timestamp":"2026-05-13T09:00:01Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}` + "\n"
	streamLine = `{"timestamp":"2026-05-13T09:00:02Z","type":"event_msg","payload":{"type":"stream_error","message":"Reconnecting... 1/5"}}` + "\n"
	errorLine  = `{"timestamp":"2026-05-13T09:00:03Z","type":"event_msg","payload":{"type":"error","message":"boom","codex_error_info":"internal_server_error"}}` + "\n"
	abortLine  = `{"timestamp":"2026-05-13T09:00:04Z","type":"event_msg","payload":{"type":"turn_aborted"}}` + "\n"
)

// Any split of a file into readings gives what one whole reading does:
// the fixtures, small files made to cut open groups, and every real
// rollout.
func TestStreamContract(t *testing.T) {
	for name, path := range fixturePaths {
		t.Run(name, func(t *testing.T) {
			recordstest.CheckStream(t, Stream, path, read(t, name), 50, 1)
		})
	}
	for name, b := range map[string]string{
		"empty":                    "",
		"blank lines":              "\n \r\n\t\n",
		"not a rollout":            "{\"a\":1}\n[1]\nnot json\n",
		"rollout after junk":       "{\"a\":1}\n" + meta + tokenLine(10),
		"repeated totals":          meta + turnLine + tokenLine(10) + tokenLine(10) + tokenLine(10) + tokenLine(20) + tokenLine(20),
		"stream errors then reply": meta + turnLine + streamLine + streamLine + streamLine + tokenLine(10) + streamLine + errorLine,
		"stream errors then turn":  meta + turnLine + streamLine + streamLine + turnLine + streamLine + abortLine + streamLine,
		"calls before the meta":    turnLine + tokenLine(5) + streamLine + meta + tokenLine(10) + streamLine,
		"meta before any call":     turnLine + streamLine + meta + streamLine + tokenLine(10),
		"no meta at all":           turnLine + streamLine + tokenLine(10) + errorLine + streamLine,
		"legacy":                   `{"id":"x","timestamp":"2025-05-07T17:24:21Z","instructions":""}` + "\n" + `{"type":"function_call"}` + "\nnot json\n",
		// UTC moves these past year 9999 and before year 0.
		"odd years": meta + strings.Replace(streamLine, "2026-05-13T09:00:02Z", "9999-12-31T23:59:59-01:00", 1) +
			strings.Replace(streamLine, "2026-05-13T09:00:02Z", "0000-01-01T00:00:00+01:00", 1),
	} {
		t.Run(name, func(t *testing.T) {
			recordstest.CheckStream(t, Stream, sessions+"rollout-2026-05-13T09-00-00-"+retriesID+".jsonl", []byte(b), 50, 2)
		})
	}
	// Cuts inside a group of stream errors long enough to reach the bound
	// of attempts: it closes at the same line however it is read.
	t.Run("reconnects past the bound", func(t *testing.T) {
		b := meta + turnLine + strings.Repeat(streamLine, maxAttempts+200) + tokenLine(10)
		recordstest.CheckStream(t, Stream, "x.jsonl", []byte(b), 3, 4)
	})
	t.Run("real", func(t *testing.T) {
		for _, p := range realRollouts(t) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			recordstest.CheckStream(t, Stream, p, b, 50, 3)
		}
	})
}

// realRollouts lists the real rollouts, skipping when they are absent.
func realRollouts(t *testing.T) []string {
	t.Helper()
	if _, err := os.Stat(realData); err != nil {
		t.Skipf("real Codex rollouts not present: %v", err)
	}
	var files []string
	filepath.WalkDir(realData, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Skipf("no .jsonl under %s", realData)
	}
	return files
}

// feedPieces reads b through Stream, with State and Resume every n lines,
// and returns every Final set and the last Open, with the largest State.
func feedPieces(t *testing.T, path string, b []byte, n int) (*records.Set, int) {
	t.Helper()
	s := Stream.New(path)
	out := &records.Set{}
	largest := 0
	var off int64
	no := 0
	for len(b) > 0 {
		i := 0
		for k := 0; k < n && i < len(b); k++ {
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				i = len(b)
				break
			}
			i += j + 1
		}
		off, no = records.FeedLines(s, b[:i], off, no)
		b = b[i:]
		out.Merge(s.Final())
		st, err := s.State()
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, len(st))
		if s, err = Stream.Resume(path, st); err != nil {
			t.Fatal(err)
		}
	}
	open, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	out.Merge(open)
	return out, largest
}

// What a stream holds is what is open, not what it has read: 10,000
// closed calls leave a State of a few hundred bytes.
func TestStateSmall(t *testing.T) {
	var b strings.Builder
	b.WriteString(meta + turnLine)
	for i := range 10000 {
		b.WriteString(tokenLine(10 * (i + 1)))
	}
	s := Stream.New("x.jsonl")
	records.FeedLines(s, []byte(b.String()), 0, 0)
	if got := len(s.Final().Calls); got != 10000 {
		t.Fatalf("%d calls final, want 10000", got)
	}
	st, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	if len(st) > 2048 {
		t.Errorf("state of %d bytes after 10,000 closed calls: %s", len(st), st)
	}
}

// A large file read in pieces keeps State small at every cut and gives
// every call, attempt and line, as one whole reading does.
func TestLargeFileInPieces(t *testing.T) {
	if testing.Short() {
		t.Skip("scale: a 100,000-line rollout read in pieces; go test ./... runs it (skipped under -short)")
	}
	var b strings.Builder
	b.WriteString(meta)
	lines, calls, attempts := 1, 0, 0
	for i := 0; lines < 100000; i++ {
		b.WriteString(turnLine)
		lines++
		switch i % 4 {
		case 0, 1:
			b.WriteString(tokenLine(10 * (i + 1)))
			lines, calls = lines+1, calls+1
		case 2:
			b.WriteString(streamLine + streamLine + tokenLine(10*(i+1)) + tokenLine(10*(i+1)))
			lines, calls, attempts = lines+4, calls+1, attempts+3
		case 3:
			b.WriteString(streamLine + errorLine)
			lines, calls, attempts = lines+2, calls+1, attempts+2
		}
	}
	path := sessions + "rollout-2026-05-13T09-00-00-" + normalID + ".jsonl"
	whole, err := ParseRollout(path, []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	got, largest := feedPieces(t, path, []byte(b.String()), 997)
	if len(got.Calls) != calls || len(got.CallAttempts) != attempts || len(got.Problems) != 0 || len(got.Runs) != 1 {
		t.Fatalf("%d calls, %d attempts, %d problems, %d runs; want %d, %d, 0, 1",
			len(got.Calls), len(got.CallAttempts), len(got.Problems), len(got.Runs), calls, attempts)
	}
	if len(whole.Calls) != calls || string(whole.Runs[0].Detail) != string(got.Runs[0].Detail) {
		t.Fatalf("whole: %d calls, detail %s; pieces: detail %s", len(whole.Calls), whole.Runs[0].Detail, got.Runs[0].Detail)
	}
	if want := fmt.Sprintf(`"lines":{"read":%d,"used":%d`, lines, lines-calls/4); !strings.Contains(string(got.Runs[0].Detail), want) {
		t.Errorf("detail %s, want %s", got.Runs[0].Detail, want)
	}
	if largest > 2048 {
		t.Errorf("largest state %d bytes", largest)
	}
}

// A reading that stops among stream errors shows them as an open call of
// unknown outcome; the next reading closes them into the call that
// follows, and does not make a call of the repeated total after it.
func TestOpenGroupAcrossReadings(t *testing.T) {
	path := "rollout-2026-05-13T09-00-00-" + normalID + ".jsonl"
	s := Stream.New(path)
	off, no := records.FeedLines(s, []byte(meta+turnLine+tokenLine(10)+streamLine+streamLine), 0, 0)
	if f := s.Final(); len(f.Calls) != 1 || f.Calls[0].CallID != "line:3" {
		t.Fatalf("final %+v", f.Calls)
	}
	open, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	if len(open.Calls) != 1 || open.Calls[0].CallID != "line:5" || open.Calls[0].Success != nil ||
		*open.Calls[0].Attempts != 3 || len(open.CallAttempts) != 2 || len(open.Runs) != 1 {
		t.Fatalf("open %+v", open)
	}
	st, _ := s.State()
	again, _ := s.State()
	if string(st) != string(again) {
		t.Fatalf("Open changed the stream:\n%s\n%s", st, again)
	}
	if s, err = Stream.Resume(path, st); err != nil {
		t.Fatal(err)
	}
	records.FeedLines(s, []byte(tokenLine(10)+tokenLine(20)+tokenLine(20)), off, no)
	f := s.Final()
	if len(f.Calls) != 1 || f.Calls[0].CallID != "line:7" || *f.Calls[0].Attempts != 3 || len(f.CallAttempts) != 3 {
		t.Fatalf("final %+v", f)
	}
	if open, _ := s.Open(); len(open.Calls) != 0 {
		t.Fatalf("open %+v", open.Calls)
	}
}

// A state another version wrote, or that is not one, is refused with an
// error, never a panic.
func TestResumeRefuses(t *testing.T) {
	s := Stream.New("x.jsonl")
	records.FeedLines(s, []byte(meta+turnLine+streamLine), 0, 0)
	good, err := s.State()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Stream.Resume("x.jsonl", good); err != nil {
		t.Fatalf("own state refused: %v", err)
	}
	for name, st := range map[string]string{
		"empty":          "",
		"garbage":        "\x00\xff garbage",
		"not an object":  "[1,2]",
		"no version":     `{"p":{}}`,
		"next version":   strings.Replace(string(good), `"v":1`, `"v":2`, 1),
		"unknown field":  strings.Replace(string(good), `"v":1`, `"v":1,"x":0`, 1),
		"trailing data":  string(good) + "{}",
		"negative count": `{"v":1,"p":{"lines":-1}}`,
		"wrong type":     `{"v":1,"p":{"lines":"many"}}`,
		"cut short":      string(good[:len(good)/2]),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Stream.Resume("x.jsonl", []byte(st)); err == nil {
				t.Errorf("state %q resumed", st)
			}
		})
	}
}

// Where a whole-file read would look ahead, the stream settles: a call
// names the run before a session_meta read after it could, and the
// detail lists at most maxModels models and says it cut the list.
func TestSettledFacts(t *testing.T) {
	path := sessions + "rollout-2026-05-13T09-00-00-" + retriesID + ".jsonl"
	set, err := ParseRollout(path, []byte(turnLine+tokenLine(5)+meta+tokenLine(10)))
	if err != nil {
		t.Fatal(err)
	}
	if set.Runs[0].RunID != retriesID || set.Calls[0].RunID != retriesID || set.Calls[1].RunID != retriesID ||
		set.Calls[1].Provider != "openai" || !strings.Contains(string(set.Runs[0].Detail), `"cwd":"/w"`) {
		t.Errorf("run %+v, calls %+v", set.Runs[0], set.Calls)
	}
	var b strings.Builder
	b.WriteString(meta)
	for i := range maxModels + 5 {
		fmt.Fprintf(&b, `{"timestamp":"2026-05-13T09:00:01Z","type":"turn_context","payload":{"model":"m%d"}}`+"\n", i)
	}
	set, err = ParseRollout(path, []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	d := string(set.Runs[0].Detail)
	if !strings.Contains(d, `"m99"],"models_cut":true`) || strings.Contains(d, `"m100"`) || !strings.Contains(d, `"turns":105`) {
		t.Errorf("detail %s", d)
	}
}
