package otlp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realData holds OTLP JSON captured from real agents, when present; the
// test skips without it.
const realData = "../../../shared/testdata-external/otel-genai"

// Every line of every real file is used, ignored as metrics, or a
// Problem; the counts are taken from the raw lines here, not from the
// parser.
func TestRealSamples(t *testing.T) {
	if _, err := os.Stat(realData); err != nil {
		t.Skipf("real OTLP samples not present: %v", err)
	}
	var files int
	err := filepath.WalkDir(realData, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".jsonl")) {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		checkRealFile(t, p, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no .json or .jsonl under %s", realData)
	}
}

// rawLines counts a file's records and its metrics lines, and lists the
// lines that are not a JSON object with one data key.
func rawLines(b []byte) (lines, metrics int, unreadable []int) {
	var whole map[string]json.RawMessage
	if json.Unmarshal(b, &whole) == nil {
		if ps := wrapped(whole); len(ps) > 0 {
			return countKinds(ps, make([]int, len(ps)))
		}
		chunks := [][]byte{b}
		return countKinds(chunks, []int{1})
	}
	var chunks [][]byte
	var nums []int
	for i, ln := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(ln)) > 0 {
			chunks, nums = append(chunks, ln), append(nums, i+1)
		}
	}
	return countKinds(chunks, nums)
}

func countKinds(chunks [][]byte, nums []int) (lines, metrics int, unreadable []int) {
	for i, c := range chunks {
		lines++
		var m map[string]json.RawMessage
		if json.Unmarshal(c, &m) != nil {
			unreadable = append(unreadable, nums[i])
			continue
		}
		_, s := m["resourceSpans"]
		_, l := m["resourceLogs"]
		_, x := m["resourceMetrics"]
		switch {
		case x && !s && !l:
			metrics++
		case s == l:
			unreadable = append(unreadable, nums[i])
		}
	}
	return lines, metrics, unreadable
}

func checkRealFile(t *testing.T, p string, b []byte) {
	lines, metrics, unreadable := rawLines(b)
	set, st, err := parse(b)
	if err != nil {
		if lines > 0 && len(unreadable) < lines-metrics {
			t.Errorf("%s: %v", p, err)
		}
		return
	}
	checkSet(t, set, nil)
	if st.lines != lines || st.metrics != metrics || st.traces+st.logs+st.metrics+st.bad != lines {
		t.Errorf("%s: %d lines, %d metrics; parser %+v", p, lines, metrics, st)
	}
	problem := map[int]bool{}
	for _, pr := range set.Problems {
		problem[pr.Line] = true
	}
	for _, l := range unreadable {
		if !problem[l] {
			t.Errorf("%s: line %d cannot be read but is no problem", p, l)
		}
	}
	t.Logf("%s: %d lines, %d calls, %d attempts, %d runs, %d problems", p, lines, len(set.Calls), len(set.CallAttempts), len(set.Runs), len(set.Problems))
}

// wrapped lists the OTLP payloads of a store's envelope (xorcise's
// {"records":[{"payload":{...}}]}), none for a plain OTLP object.
func wrapped(top map[string]json.RawMessage) [][]byte {
	for _, k := range []string{"resourceSpans", "resourceLogs", "resourceMetrics"} {
		if _, ok := top[k]; ok {
			return nil
		}
	}
	var out [][]byte
	for _, v := range top {
		var list []struct {
			Payload json.RawMessage `json:"payload"`
		}
		if json.Unmarshal(v, &list) != nil {
			continue
		}
		for _, e := range list {
			if len(e.Payload) > 0 {
				out = append(out, e.Payload)
			}
		}
	}
	return out
}
