package codex

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// realData is real rollouts, when present; the test skips without them.
const realData = "../../../shared/testdata-external/codex"

// Every real rollout gives one run and, counted here from the raw lines,
// one call per changed token total and one per error event; every line
// is used, ignored or a problem, and the only problems are lines that are
// not JSON objects or whose time is not a time.
func TestRealRollouts(t *testing.T) {
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
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want := countRaw(b)
		set, err := ParseRollout(p, b)
		check(t, set, err)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		var d struct {
			Lines struct{ Read, Used, Ignored, Problems int }
		}
		if err := json.Unmarshal(set.Runs[0].Detail, &d); err != nil {
			t.Fatal(err)
		}
		if d.Lines.Read != want.lines || d.Lines.Used+d.Lines.Ignored+d.Lines.Problems != want.lines {
			t.Errorf("%s: lines %+v, want %d read", p, d.Lines, want.lines)
		}
		if len(set.Problems) != want.notObjects+want.badTimes {
			t.Errorf("%s: %d problems, want %d: %v", p, len(set.Problems), want.notObjects+want.badTimes, set.Problems)
		}
		if !want.streamErrors && len(set.Calls) != want.calls {
			t.Errorf("%s: %d calls, want %d", p, len(set.Calls), want.calls)
		}
		t.Logf("%s: %d lines, %d calls, %d attempts", filepath.Base(p), want.lines, len(set.Calls), len(set.CallAttempts))
	}
}

// rawCounts is what a rollout holds, counted with a plain decode.
type rawCounts struct {
	lines, notObjects, badTimes, calls int
	streamErrors                       bool
}

func countRaw(b []byte) rawCounts {
	var c rawCounts
	var prev string
	for _, l := range bytes.Split(bytes.TrimPrefix(b, []byte{0xEF, 0xBB, 0xBF}), []byte{'\n'}) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		c.lines++
		var m map[string]any
		if json.Unmarshal(l, &m) != nil || m == nil {
			c.notObjects++
			continue
		}
		// A hand-trimmed fixture's "[trimmed for fixture]" is no time: the
		// line is a problem, whatever it holds.
		if ts, ok := m["timestamp"].(string); ok {
			if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
				c.badTimes++
				continue
			}
		}
		p, _ := m["payload"].(map[string]any)
		if m["type"] != "event_msg" || p == nil {
			continue
		}
		switch p["type"] {
		case "error":
			c.calls++
		case "stream_error":
			c.streamErrors = true
		case "token_count":
			info, _ := p["info"].(map[string]any)
			if info == nil {
				continue
			}
			total, _ := json.Marshal(info["total_token_usage"])
			if string(total) != prev || info["total_token_usage"] == nil {
				c.calls++
			}
			prev = string(total)
		}
	}
	return c
}

// The real-data check itself, on the fixtures: its raw counts agree with
// what the hand-checked expectations say.
func TestCountRaw(t *testing.T) {
	for name, want := range map[string]rawCounts{
		"normal.jsonl":  {lines: 26, calls: 4},
		"retries.jsonl": {lines: 15, calls: 4, streamErrors: true},
		"legacy.jsonl":  {lines: 9, notObjects: 1},
	} {
		if got := countRaw(read(t, name)); got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
}
