package claudecode

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks what the parser promises on any input: no panic; a
// located *records.Error or a set that keeps the contract; every line
// used, ignored, blank or a problem.
func FuzzParse(f *testing.F) {
	filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			if b, rerr := os.ReadFile(p); rerr == nil {
				f.Add(b)
			}
		}
		return nil
	})
	f.Add([]byte(`{"type":"system","subtype":"api_error","retryAttempt":2}` + "\n" + `{"type":"system","subtype":"api_error","retryAttempt":1,"error":{"error":{"error":7}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		set, tl, err := parse("/h/.claude/projects/p/s.jsonl", b)
		checkSet(t, set, err)
		lines := bytes.Count(b, []byte{'\n'})
		if len(b) > 0 && b[len(b)-1] != '\n' {
			lines++
		}
		if n := tl.used + tl.ignored + tl.problems + tl.blank; n != lines {
			t.Fatalf("%d lines, %+v accounted for", lines, tl)
		}
		if set != nil {
			if len(set.Problems) != tl.problems {
				t.Fatalf("%d problems, tally says %d", len(set.Problems), tl.problems)
			}
			for _, p := range set.Problems {
				if p.Offset < 0 || p.Offset > int64(len(b)) || p.Line > lines {
					t.Fatalf("problem outside the input: %+v", p)
				}
			}
		}
		Sniff(b)
		IsTranscriptPath(string(b))
	})
}
