package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Agents' records end to end: each format's hand-made files ingested by
// name or content, then report, check and simulate, with the expected
// figures computed here from the raw files by the formats' documented
// rules, not by the parsers.

// placeFiles copies the named files of src into dir/sub and returns dir.
func placeFiles(t *testing.T, src, sub string, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	to := filepath.Join(dir, sub)
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		dst := n
		if sub != "" && strings.Contains(sub, "sessions") {
			dst = "rollout-2026-05-13T09-00-00-" + n // Codex's file names
		}
		if err := os.WriteFile(filepath.Join(to, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// jsonLines decodes each line of the named files as a JSON object.
func jsonLines(t *testing.T, dir string, names ...string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			out = append(out, m)
		}
		f.Close()
	}
	return out
}

// reportMetrics runs report --format json over path and returns its
// metrics.
func reportMetrics(t *testing.T, db, path string, extra ...string) map[string]struct {
	Value, Numerator, Denominator *float64
} {
	t.Helper()
	args := append([]string{"report", "--db", db, "--format", "json"}, extra...)
	if path != "" {
		args = append(args, path)
	}
	code, out, errOut := runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errOut)
	}
	var r struct {
		Metrics map[string]struct{ Value, Numerator, Denominator *float64 }
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return r.Metrics
}

func wantValue(t *testing.T, name string, got *float64, want float64) {
	t.Helper()
	if got == nil || math.Abs(*got-want) > 1e-9 {
		t.Errorf("%s = %v, want %v", name, showFloat(got), want)
	}
}

func showFloat(v *float64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

func TestClaudeCodeReportCheckSimulate(t *testing.T) {
	endToEnd(t, "ingests and reports agents' records in a real store")
	t.Parallel()
	src := "../../ingest/claudecode/testdata"
	files := []string{"clean.jsonl", "retry529.jsonl"}
	dir := placeFiles(t, src, ".claude/projects/-w-app", files...)
	db := filepath.Join(t.TempDir(), "cc.duckdb")

	// A call is an assistant response, one per (message.id, requestId)
	// however many streamed lines repeat it; a retried call starts with
	// an api_error line numbered 1, took one attempt more than its last
	// api_error's number, and waited each line's retryInMs.
	responses := map[string]bool{}
	var retried, lastAttempt, backoff float64
	for _, m := range jsonLines(t, src, files...) {
		switch {
		case m["type"] == "assistant":
			msg := m["message"].(map[string]any)
			if msg["model"] != "<synthetic>" {
				responses[msg["id"].(string)+"/"+m["requestId"].(string)] = true
			}
		case m["type"] == "system" && m["subtype"] == "api_error":
			if m["retryAttempt"].(float64) == 1 {
				retried++
			}
			lastAttempt = max(lastAttempt, m["retryAttempt"].(float64))
			backoff += m["retryInMs"].(float64)
		}
	}
	calls := float64(len(responses))
	attempts := calls - retried + (lastAttempt + 1) // the one retried call, and single attempts

	m := reportMetrics(t, db, dir)
	wantValue(t, "calls", m["calls"].Value, calls)
	wantValue(t, "call_retry_rate numerator", m["call_retry_rate"].Numerator, retried)
	wantValue(t, "call_retry_rate denominator", m["call_retry_rate"].Denominator, calls)
	wantValue(t, "attempts_per_call numerator", m["attempts_per_call"].Numerator, attempts)
	wantValue(t, "call_backoff_seconds", m["call_backoff_seconds"].Value, backoff/1000)
	wantValue(t, "calls_attempts_unknown", m["calls_attempts_unknown"].Value, 0)

	// check: the retried model's rate crosses a rule's threshold.
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte(`rules:
  - name: call_retries
    metric: call_retry_rate
    by: [provider, model]
    window: {last: 10}
    threshold: 0.2
    condition: value > threshold && denominator >= 2
    severity: warning
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "check", "--db", db, "--no-ingest", "--rules", rules, "--format", "json")
	if code != 1 {
		t.Fatalf("check: exit %d, want 1 (a warning firing): %s%s", code, out, errOut)
	}
	if !strings.Contains(out, `"state": "firing"`) || !strings.Contains(out, `"model": "claude-sonnet-4-5-20250929"`) {
		t.Errorf("check does not show the retried model firing:\n%s", out)
	}

	// simulate: every call with known attempts is an episode, and Claude
	// Code's own policy reproduces each.
	code, out, errOut = runCLI(t, "", "simulate", "--db", db, "--no-ingest", "--baseline", "claude-code", "--max-retries", "1", "--format", "json")
	if code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errOut)
	}
	var sim struct {
		SelfCheck string `json:"self_check"`
	}
	if err := json.Unmarshal([]byte(out), &sim); err != nil {
		t.Fatal(err)
	}
	n := strconv.Itoa(int(calls))
	if want := "baseline reproduces " + n + " of " + n + " episodes"; !strings.HasPrefix(sim.SelfCheck, want) {
		t.Errorf("self check %q, want it to start %q", sim.SelfCheck, want)
	}

	// Without --baseline, Claude Code's calls alone are replayed against
	// Claude Code's policy.
	_, out, _ = runCLI(t, "", "simulate", "--db", db, "--no-ingest", "--max-retries", "1", "--format", "json")
	var auto struct {
		Baseline struct{ Policy string } `json:"baseline"`
	}
	if err := json.Unmarshal([]byte(out), &auto); err != nil {
		t.Fatal(err)
	}
	if auto.Baseline.Policy != "claude-code" {
		t.Errorf("baseline without --baseline = %q, want claude-code", auto.Baseline.Policy)
	}
}

func TestCodexReportSaysRetriesAreUnknown(t *testing.T) {
	endToEnd(t, "ingests and reports agents' records in a real store")
	t.Parallel()
	src := "../../ingest/codex/testdata"
	dir := placeFiles(t, src, "sessions/2026/05/13", "normal.jsonl")
	// A call is a token_count event with token info whose running total
	// moved; a rollout records no retries.
	var calls float64
	last := ""
	for _, m := range jsonLines(t, src, "normal.jsonl") {
		p, _ := m["payload"].(map[string]any)
		if m["type"] != "event_msg" || p["type"] != "token_count" || p["info"] == nil {
			continue
		}
		total, _ := json.Marshal(p["info"].(map[string]any)["total_token_usage"])
		if string(total) != last {
			calls++
			last = string(total)
		}
	}
	m := reportMetrics(t, filepath.Join(t.TempDir(), "cx.duckdb"), dir)
	wantValue(t, "calls", m["calls"].Value, calls)
	wantValue(t, "calls_attempts_unknown", m["calls_attempts_unknown"].Value, calls)
	if v := m["call_retry_rate"].Value; v != nil {
		t.Errorf("call_retry_rate = %v; a rollout shows no attempts, so there is no rate", *v)
	}
}

func TestOTLPFromStandardInput(t *testing.T) {
	endToEnd(t, "ingests and reports agents' records in a real store")
	t.Parallel()
	src := "../../ingest/otlp/testdata"
	raw, err := os.ReadFile(filepath.Join(src, "http_retries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// A model call is a span with gen_ai.operation.name chat; its
	// attempts are its child spans with an HTTP method, and its backoff
	// the gaps between them.
	type span struct {
		id, parent, op string
		http           bool
		start, end     int64
	}
	var spans []span
	for _, line := range jsonLines(t, src, "http_retries.jsonl") {
		rss, _ := line["resourceSpans"].([]any)
		for _, rs := range rss {
			sss, _ := rs.(map[string]any)["scopeSpans"].([]any)
			for _, ss := range sss {
				sps, _ := ss.(map[string]any)["spans"].([]any)
				for _, sp := range sps {
					s := sp.(map[string]any)
					x := span{id: s["spanId"].(string)}
					x.parent, _ = s["parentSpanId"].(string)
					x.start, _ = strconv.ParseInt(s["startTimeUnixNano"].(string), 10, 64)
					x.end, _ = strconv.ParseInt(s["endTimeUnixNano"].(string), 10, 64)
					attrs, _ := s["attributes"].([]any)
					for _, a := range attrs {
						kv := a.(map[string]any)
						v := kv["value"].(map[string]any)
						switch kv["key"] {
						case "gen_ai.operation.name":
							x.op, _ = v["stringValue"].(string)
						case "http.request.method":
							x.http = true
						}
					}
					spans = append(spans, x)
				}
			}
		}
	}
	var calls, known, attempts, retried, backoffMS float64
	for _, c := range spans {
		if c.op != "chat" {
			continue
		}
		calls++
		var children []span
		for _, s := range spans {
			if s.parent == c.id && s.http {
				children = append(children, s)
			}
		}
		if len(children) == 0 {
			continue
		}
		known++
		attempts += float64(len(children))
		if len(children) > 1 {
			retried++
		}
		for i := 1; i < len(children); i++ {
			backoffMS += float64(children[i].start-children[i-1].end) / 1e6
		}
	}
	db := filepath.Join(t.TempDir(), "ot.duckdb")
	code, _, errOut := runCLI(t, string(raw), "ingest", "--db", db, "--format", "otlp", "--stdin-name", "collector", "-")
	if code != 0 {
		t.Fatalf("ingest -: exit %d: %s", code, errOut)
	}
	m := reportMetrics(t, db, "", "--no-ingest")
	wantValue(t, "calls", m["calls"].Value, calls)
	wantValue(t, "call_retry_rate numerator", m["call_retry_rate"].Numerator, retried)
	wantValue(t, "call_retry_rate denominator", m["call_retry_rate"].Denominator, known)
	wantValue(t, "attempts_per_call numerator", m["attempts_per_call"].Numerator, attempts)
	wantValue(t, "call_backoff_seconds", m["call_backoff_seconds"].Value, backoffMS/1000)
	wantValue(t, "calls_attempts_unknown", m["calls_attempts_unknown"].Value, calls-known)
}
