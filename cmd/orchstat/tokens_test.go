package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

const realRecords = "../../../shared/testdata-external"

// tokenSums are a system's tokens as the report's calls section gives
// them: four kinds apart, as records.Call means them.
type tokenSums struct {
	Calls            int64    `json:"calls"`
	InputTokens      *float64 `json:"input_tokens"`
	CacheReadTokens  *float64 `json:"cache_read_tokens"`
	CacheWriteTokens *float64 `json:"cache_write_tokens"`
	OutputTokens     *float64 `json:"output_tokens"`
	ReasoningTokens  *float64 `json:"reasoning_tokens"`
	Tokens           *float64 `json:"tokens"`
}

func callTokens(t *testing.T, db string, paths ...string) map[string]tokenSums {
	t.Helper()
	code, stdout, stderr := runCLI(t, "", append([]string{"report", "-f", "json", "-q", "--db", db}, paths...)...)
	if code != 0 {
		t.Fatalf("report: %d %s", code, stderr)
	}
	var r struct {
		Calls struct {
			BySystem []struct {
				System string `json:"system"`
				tokenSums
			} `json:"by_system"`
		} `json:"calls"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	out := map[string]tokenSums{}
	for _, s := range r.Calls.BySystem {
		out[s.System] = s.tokenSums
	}
	return out
}

// eachJSONLine calls f with every line of the .jsonl files under dir,
// decoded on its own, apart from orchstat's parsers.
func eachJSONLine(t *testing.T, dir string, f func(m map[string]any)) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.jsonl"))
	if len(files) == 0 {
		t.Fatalf("no transcripts under %s", dir)
	}
	for _, name := range files {
		fh, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				f(m)
			}
		}
		fh.Close()
	}
}

func num(m map[string]any, k string) float64 { v, _ := m[k].(float64); return v }

func wantTokens(t *testing.T, what string, got *float64, want float64) {
	t.Helper()
	if got == nil || *got != want {
		t.Errorf("%s = %v, want %v", what, ptrText(got), want)
	}
}

func ptrText(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// Claude Code's and Codex's tokens are four kinds kept apart, each equal
// to a count of the raw files made here without orchstat's parsers; the
// total is their sum. Before, a transcript's input held its cache reads
// and writes, and Codex's input held its cached part.
func TestAgentTokensKeptApart(t *testing.T) {
	src := filepath.Join(realRecords, "claude-code")
	if _, err := os.Stat(src); err != nil {
		t.Skip("no real records in ../shared")
	}
	t.Parallel()
	home := t.TempDir()
	copyTree(t, src, filepath.Join(home, ".claude", "projects"))
	copyTree(t, filepath.Join(realRecords, "codex"), filepath.Join(home, ".codex", "sessions", "2026", "02", "23"))
	db := filepath.Join(t.TempDir(), "agents.duckdb")

	// Claude Code: a response is one (message.id, requestId) per session,
	// however many streamed lines or sub-agent copies repeat it; its
	// usage is its last line's; an API error message has none.
	type ccKey struct{ session, msg, req string }
	usage := map[ccKey]map[string]any{}
	eachJSONLine(t, src, func(m map[string]any) {
		msg, _ := m["message"].(map[string]any)
		if m["type"] != "assistant" || m["isApiErrorMessage"] == true || msg == nil {
			return
		}
		u, _ := msg["usage"].(map[string]any)
		if u == nil {
			return
		}
		id, _ := msg["id"].(string)
		req, _ := m["requestId"].(string)
		s, _ := m["sessionId"].(string)
		usage[ccKey{s, id, req}] = u
	})
	var cc [4]float64
	for _, u := range usage {
		cc[0] += num(u, "input_tokens")
		cc[1] += num(u, "cache_read_input_tokens")
		cc[2] += num(u, "cache_creation_input_tokens")
		cc[3] += num(u, "output_tokens")
	}

	// Codex: a response is a token_count whose running total changed; its
	// usage is last_token_usage, whose input includes the cached input.
	var cx [5]float64
	var prev string
	eachJSONLine(t, filepath.Join(realRecords, "codex"), func(m map[string]any) {
		p, _ := m["payload"].(map[string]any)
		if m["type"] == "session_meta" {
			prev = ""
		}
		if m["type"] != "event_msg" || p["type"] != "token_count" || p["info"] == nil {
			return
		}
		info := p["info"].(map[string]any)
		total, _ := json.Marshal(info["total_token_usage"])
		if string(total) == prev {
			return
		}
		prev = string(total)
		last, _ := info["last_token_usage"].(map[string]any)
		cx[0] += num(last, "input_tokens") - num(last, "cached_input_tokens")
		cx[1] += num(last, "cached_input_tokens")
		cx[3] += num(last, "output_tokens")
		cx[4] += num(last, "reasoning_output_tokens")
	})

	got := callTokens(t, db, filepath.Join(home, ".claude"), filepath.Join(home, ".codex"))
	c := got["claude-code"]
	wantTokens(t, "claude-code input", c.InputTokens, cc[0])
	wantTokens(t, "claude-code cache read", c.CacheReadTokens, cc[1])
	wantTokens(t, "claude-code cache write", c.CacheWriteTokens, cc[2])
	wantTokens(t, "claude-code output", c.OutputTokens, cc[3])
	wantTokens(t, "claude-code tokens", c.Tokens, cc[0]+cc[1]+cc[2]+cc[3])
	x := got["codex"]
	wantTokens(t, "codex input", x.InputTokens, cx[0])
	wantTokens(t, "codex cache read", x.CacheReadTokens, cx[1])
	wantTokens(t, "codex output", x.OutputTokens, cx[3])
	wantTokens(t, "codex reasoning", x.ReasoningTokens, cx[4])
	if x.CacheWriteTokens != nil {
		t.Errorf("codex records no cache writes, got %v", *x.CacheWriteTokens)
	}
}
