package codex

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/orchstat/orchstat/model/records/recordstest"
)

// FuzzParse checks what ParseRollout promises on any input: no panic, the
// records contract, and every non-blank line accounted for once.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"timestamp":"2026-05-13T09:00:00Z","type":"event_msg","payload":{"type":"error","message":"x","codex_error_info":{"a":{"http_status_code":1e400}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := ParseRollout(sessions+"rollout-2026-05-13T09-00-00-"+normalID+".jsonl", b)
		check(t, set, err)
		if err != nil {
			return
		}
		for _, p := range set.Problems {
			if p.Offset < 0 || p.Offset > int64(len(b)) || len(p.Msg) > 300 {
				t.Fatalf("problem %+v", p)
			}
		}
		if len(set.Runs) == 0 {
			return
		}
		var d struct {
			Lines struct{ Read, Used, Ignored, Problems int }
		}
		if err := json.Unmarshal(set.Runs[0].Detail, &d); err != nil {
			t.Fatal(err)
		}
		if d.Lines.Read != nonBlank(b) || d.Lines.Used+d.Lines.Ignored+d.Lines.Problems != d.Lines.Read || d.Lines.Problems != len(set.Problems) {
			t.Fatalf("lines %+v, %d non-blank, %d problems", d.Lines, nonBlank(b), len(set.Problems))
		}
	})
}

// nonBlank counts the lines of b that hold anything.
func nonBlank(b []byte) int {
	b = bytes.TrimPrefix(b, []byte{0xEF, 0xBB, 0xBF})
	n := 0
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return n
}

// FuzzStream holds the stream to its contract on any input: a few random
// splits into readings, with State and Resume between them, give what one
// whole reading does, and nothing panics.
func FuzzStream(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, uint64(1))
		}
	}
	f.Add([]byte(meta+turnLine+streamLine+streamLine+tokenLine(10)+tokenLine(10)+streamLine), uint64(2))
	f.Add([]byte(turnLine+tokenLine(5)+meta+streamLine), uint64(3))
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) {
		recordstest.CheckStream(t, Stream, sessions+"rollout-2026-05-13T09-00-00-"+normalID+".jsonl", b, 4, seed)
	})
}
