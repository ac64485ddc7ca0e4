package claudecode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realData holds real public transcripts (see its README); the test
// skips when it is absent.
const realData = "../../../shared/testdata-external/claude-code"

// lineCounts is what a transcript's lines hold, counted by decoding each
// line on its own, apart from the parser.
type lineCounts struct {
	lines, undecodable, ignored  int
	responses, failures, retries int
	failureLines                 map[int]bool
}

func countLines(b []byte) lineCounts {
	c := lineCounts{failureLines: map[int]bool{}}
	keys := map[string]bool{}
	lastRetry := 0
	sent := false // an api-request line since the last api_error
	for n, l := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		c.lines++
		var m map[string]any
		if json.Unmarshal(l, &m) != nil {
			c.undecodable++
			continue
		}
		typ, _ := m["type"].(string)
		switch typ {
		case "user":
			lastRetry, sent = 0, false
		case "assistant":
			lastRetry, sent = 0, false
			msg, _ := m["message"].(map[string]any)
			id, _ := msg["id"].(string)
			req, _ := m["requestId"].(string)
			if m["isApiErrorMessage"] == true {
				c.failures++
				c.failureLines[n+1] = true
			} else if id+req == "" || !keys[id+"\x00"+req] {
				keys[id+"\x00"+req] = true
				c.responses++
			}
		case "system":
			if m["subtype"] == "api_error" {
				// The same number again is another attempt only when a
				// request was sent between (an api-request line).
				a, _ := m["retryAttempt"].(float64)
				if int(a) != lastRetry || sent {
					c.retries++
				}
				lastRetry, sent = int(a), false
			}
		case "api-request":
			c.ignored++
			sent = true
		case "":
		default:
			c.ignored++
		}
	}
	return c
}

// Every line of every real transcript is used, ignored or a problem, and
// the calls and attempts match what the lines hold.
func TestRealTranscripts(t *testing.T) {
	if _, err := os.Stat(realData); err != nil {
		t.Skipf("real Claude Code transcripts not present: %v", err)
	}
	var files []string
	filepath.WalkDir(realData, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Skip("no .jsonl under " + realData)
	}
	for _, p := range files {
		checkAccounted(t, p)
	}
}

// The fixtures hold to the same counts.
func TestFixturesAccounted(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	for _, p := range append(files, filepath.Join("testdata", subagentFixture)) {
		checkAccounted(t, p)
	}
}

func checkAccounted(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := countLines(b)
	set, tl, err := parse(p, b)
	if err != nil {
		t.Errorf("%s: %v", p, err)
		return
	}
	checkSet(t, set, nil)
	if tl.used+tl.ignored+tl.problems != want.lines || tl.ignored != want.ignored || tl.problems < want.undecodable {
		t.Errorf("%s: %d lines, %d ignored, %d undecodable; parser: %+v", p, want.lines, want.ignored, want.undecodable, tl)
	}
	if len(set.Problems) > 0 {
		t.Logf("%s: %d problems, first %+v", p, len(set.Problems), set.Problems[0])
	}
	var ok, finalFailures, failedAttempts, finalAttempts int
	for _, c := range set.Calls {
		if *c.Success {
			ok++
		} else if want.failureLines[c.Line] {
			finalFailures++
		}
	}
	for _, a := range set.CallAttempts {
		if !*a.Success {
			failedAttempts++
		}
	}
	for _, c := range set.Calls {
		if !*c.Success && want.failureLines[c.Line] && c.Attempts != nil {
			finalAttempts++
		}
	}
	if tl.problems == want.undecodable && (ok != want.responses || finalFailures != want.failures || failedAttempts-finalAttempts != want.retries) {
		t.Errorf("%s: %d responses, %d final failures, %d retried attempts; want %d, %d, %d",
			p, ok, finalFailures, failedAttempts-finalAttempts, want.responses, want.failures, want.retries)
	}
}
