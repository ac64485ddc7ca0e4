package tracegen

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testConfig is small enough for unit tests; escalations are frequent so
// the L2→L3 path is exercised.
func testConfig(runs int) Config {
	cfg := DefaultConfig()
	cfg.Runs = runs
	cfg.Seed = 7
	cfg.Days = 3
	cfg.UnfinishedProb = 0.05
	return cfg
}

func escalatingConfig(runs int) Config {
	cfg := testConfig(runs)
	cfg.VerifyFailProb = 0.9
	cfg.RepairApplyFailProb = 0.6
	cfg.ApplyFailSameSigProb = 0.2
	cfg.RepairNoDiffProb = 0.1
	return cfg
}

type event struct {
	Type      string
	Timestamp string
	RunID     string `json:"runId"`
	Payload   map[string]any
	raw       string
}

func buildAll(t *testing.T, cfg Config) []Run {
	t.Helper()
	runs := make([]Run, cfg.Runs)
	for i := range runs {
		runs[i] = BuildRun(cfg, i)
	}
	return runs
}

// parseTrace checks every line's envelope and returns the events.
func parseTrace(t *testing.T, r Run) []event {
	t.Helper()
	var evs []event
	lines := strings.SplitAfter(string(r.File("trace.jsonl")), "\n")
	for n, line := range lines {
		if line == "" {
			continue
		}
		if !strings.HasSuffix(line, "\n") {
			t.Fatalf("run %s line %d: no trailing newline", r.ID, n+1)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &keys); err != nil {
			t.Fatalf("run %s line %d: %v\n%s", r.ID, n+1, err, line)
		}
		if len(keys) != 5 {
			t.Fatalf("run %s line %d: %d top-level keys, want 5", r.ID, n+1, len(keys))
		}
		if string(keys["schemaVersion"]) != "1" {
			t.Fatalf("run %s line %d: schemaVersion %s", r.ID, n+1, keys["schemaVersion"])
		}
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("run %s line %d: %v", r.ID, n+1, err)
		}
		if e.Type == "" || e.RunID != r.ID || e.Payload == nil {
			t.Fatalf("run %s line %d: bad envelope %s", r.ID, n+1, line)
		}
		e.raw = line
		evs = append(evs, e)
	}
	return evs
}

var isoRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

func TestTraceLines(t *testing.T) {
	cfg := testConfig(300)
	cfg.Chunks = true
	var prevID string
	late := 0
	for _, r := range buildAll(t, cfg) {
		if r.ID <= prevID && len(r.ID) == len(prevID) {
			t.Fatalf("runId %s does not increase after %s", r.ID, prevID)
		}
		prevID = r.ID
		evs := parseTrace(t, r)
		if r.Events != len(evs) {
			t.Errorf("run %s: Events = %d, trace has %d lines", r.ID, r.Events, len(evs))
		}
		if evs[0].Type != "RunStarted" || evs[0].Payload["taskId"] != r.ID {
			t.Errorf("run %s: first line %s", r.ID, evs[0].raw)
		}
		prev := ""
		for _, e := range evs {
			if !isoRE.MatchString(e.Timestamp) {
				t.Fatalf("run %s: timestamp %q", r.ID, e.Timestamp)
			}
			if e.Timestamp < prev {
				t.Fatalf("run %s: timestamp %s after %s", r.ID, e.Timestamp, prev)
			}
			prev = e.Timestamp
			if strings.Index(e.raw, `"payload"`) < strings.Index(e.raw, `"timestamp"`) {
				late++
			}
		}
	}
	if late == 0 {
		t.Error("no line puts payload before timestamp")
	}
}

func TestDeterministic(t *testing.T) {
	cfg := testConfig(120)
	cfg.Chunks = true
	a, b := t.TempDir(), t.TempDir()
	cfg.Workers = 1
	sa, err := Generate(a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workers = 4
	sb, err := Generate(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sa != sb {
		t.Errorf("stats differ: %+v vs %+v", sa, sb)
	}
	if ha, hb := treeHash(t, a), treeHash(t, b); ha != hb {
		t.Errorf("corpus hash differs between runs: %s vs %s", ha, hb)
	}
	if sa.Runs != 120 || sa.Files < 2*120 {
		t.Errorf("stats %+v", sa)
	}

	cfg.Seed++
	c := t.TempDir()
	if _, err := Generate(c, cfg); err != nil {
		t.Fatal(err)
	}
	if treeHash(t, a) == treeHash(t, c) {
		t.Error("a different seed gave the same corpus")
	}
}

func treeHash(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		data, err := os.ReadFile(path)
		h.Write([]byte(rel + "\x00"))
		h.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Chunk lines are extra lines only: the rest of the corpus, and so every
// metric, is the same with and without them.
func TestChunksOnlyAddLines(t *testing.T) {
	cfg := testConfig(150)
	for i := range cfg.Runs {
		cfg.Chunks = false
		plain := BuildRun(cfg, i)
		cfg.Chunks = true
		chunked := BuildRun(cfg, i)
		var kept []string
		n := 0
		for _, line := range strings.SplitAfter(string(chunked.File("trace.jsonl")), "\n") {
			if strings.Contains(line, `"type":"SubprocessOutputChunked"`) {
				n++
				continue
			}
			kept = append(kept, line)
		}
		if got := strings.Join(kept, ""); got != string(plain.File("trace.jsonl")) {
			t.Fatalf("run %d: trace without chunk lines differs from the plain trace", i)
		}
		if n == 0 && len(plain.File("trace.jsonl")) > 4000 {
			t.Errorf("run %d: no chunk lines", i)
		}
		if len(plain.Files) != len(chunked.Files) {
			t.Fatalf("run %d: %d files vs %d", i, len(plain.Files), len(chunked.Files))
		}
		for k := 1; k < len(plain.Files); k++ {
			if !bytes.Equal(plain.Files[k].Data, chunked.Files[k].Data) {
				t.Errorf("run %d: %s differs with chunks", i, plain.Files[k].Name)
			}
		}
	}
}

// checkL2 re-implements runners/l2.ts's counters from the trace and the
// verification reports, and fails when the generator's choices differ.
func checkL2(t *testing.T, r Run, evs []event) (escalated, stopped bool) {
	t.Helper()
	start := slices.IndexFunc(evs, func(e event) bool { return e.Type == "IterationStarted" })
	initial := r.File("verification_report_initial.json")
	if start < 0 {
		if initial != nil && reportSig(t, initial) != "" && evs[len(evs)-1].Type == "RunFinished" &&
			!strings.Contains(evs[len(evs)-1].raw, "Provider request failed") &&
			!strings.Contains(evs[len(evs)-1].raw, "cancelled") {
			t.Errorf("run %s: initial verification failed but no L2 iteration", r.ID)
		}
		return false, false
	}
	if initial == nil {
		t.Fatalf("run %s: L2 loop without an initial report", r.ID)
	}
	cur := reportSig(t, initial)
	failureSig, same, applyFails, escalations, it := cur, 0, 0, 0, 0
	mustStop := false
	for k, e := range evs[start:] {
		if mustStop {
			if e.Type != "RunStopped" || e.Payload["reason"] != "non_improving" {
				t.Fatalf("run %s: want RunStopped non_improving after iteration %d, got %s", r.ID, it, e.raw)
			}
			return false, true
		}
		due := escalations < 1 && (same >= 2 || applyFails >= 2)
		switch e.Type {
		case "IterationStarted":
			if due {
				t.Fatalf("run %s: IterationStarted %v where l2.ts escalates", r.ID, e.Payload["iteration"])
			}
			if n := int(e.Payload["iteration"].(float64)); n != it+1 || n > 5 {
				t.Fatalf("run %s: iteration %d after %d", r.ID, n, it)
			}
			it++
			if failureSig != "" && cur == failureSig {
				same++
				mustStop = same >= 2
			} else {
				same, failureSig = 0, cur
			}
		case "PatchApplyFailed":
			applyFails++
		case "PatchApplied":
			applyFails = 0
		case "IterationFinished":
			rep := r.File("verification_report_iter_" + strconv.Itoa(it) + ".json")
			if rep == nil {
				t.Fatalf("run %s: no report for iteration %d", r.ID, it)
			}
			cur = reportSig(t, rep)
			if (e.Payload["result"] == "success") != (cur == "") {
				t.Fatalf("run %s: IterationFinished %v but report signature %q", r.ID, e.Payload["result"], cur)
			}
		case "RunEscalated":
			if !due {
				t.Fatalf("run %s: RunEscalated when not due (same=%d applyFails=%d)", r.ID, same, applyFails)
			}
			want := "patch_apply_failure"
			if same >= 2 {
				want = "non_improving"
			}
			if e.Payload["reason"] != want || e.Payload["from"] != "L2" || e.Payload["to"] != "L3" {
				t.Fatalf("run %s: %s, want reason %s", r.ID, e.raw, want)
			}
			for _, later := range evs[start+k+1:] {
				if later.Type == "IterationStarted" || later.Type == "RunEscalated" {
					t.Fatalf("run %s: %s after escalation", r.ID, later.Type)
				}
			}
			return true, false
		case "RunStopped":
			switch e.Payload["reason"] {
			case "budget_exceeded":
				if it != 5 {
					t.Fatalf("run %s: budget_exceeded after %d iterations", r.ID, it)
				}
			case "error":
			default:
				t.Fatalf("run %s: unexpected %s in L2 loop", r.ID, e.raw)
			}
			for _, later := range evs[start+k+1:] {
				if later.Type == "IterationStarted" {
					t.Fatalf("run %s: IterationStarted after RunStopped", r.ID)
				}
			}
			return false, true
		}
	}
	return false, false
}

func reportSig(t *testing.T, data []byte) string {
	t.Helper()
	var rep struct {
		Passed bool
		Checks []struct {
			Name   string
			Passed bool
		}
		FailureSignature string
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Passed != (rep.FailureSignature == "") || (!rep.Passed && len(rep.FailureSignature) != 64) {
		t.Fatalf("report passed=%v with signature %q", rep.Passed, rep.FailureSignature)
	}
	return rep.FailureSignature
}

func TestL2Loop(t *testing.T) {
	if testing.Short() {
		t.Skip("scale: two generated 400-run corpora, every L2 loop checked; go test ./... runs it (skipped under -short)")
	}
	for name, cfg := range map[string]Config{"default": testConfig(400), "escalating": escalatingConfig(400)} {
		t.Run(name, func(t *testing.T) {
			escalated, stopped, loops, nonImprovingStops := 0, 0, 0, 0
			for _, r := range buildAll(t, cfg) {
				evs := parseTrace(t, r)
				esc, stop := checkL2(t, r, evs)
				if esc {
					escalated++
				}
				if stop {
					stopped++
				}
				n := 0
				for _, e := range evs {
					switch e.Type {
					case "RunEscalated":
						n++
						if e.Payload["reason"] == "non_improving" {
							// as coded, the non_improving stop always comes first
							t.Errorf("run %s: non_improving escalation", r.ID)
						}
					case "IterationStarted":
						loops++
					case "RunStopped":
						if e.Payload["reason"] == "non_improving" {
							nonImprovingStops++
						}
					}
				}
				if n > 1 {
					t.Errorf("run %s: %d escalations", r.ID, n)
				}
			}
			if escalated == 0 || stopped == 0 || loops == 0 || nonImprovingStops == 0 {
				t.Errorf("corpus too tame: escalated=%d stopped=%d iterations=%d nonImproving=%d",
					escalated, stopped, loops, nonImprovingStops)
			}
		})
	}
}

var (
	retriedRE = regexp.MustCompile(`^(429|5\d\d) |Rate limit|timed out|ETIMEDOUT|ECONNRESET|ECONNREFUSED`)
	fatalRE   = regexp.MustCompile(`^(401|403|400|404) `)
)

func TestProviderRequests(t *testing.T) {
	cfg := testConfig(400)
	var total, retried, interleaved int
	for _, r := range buildAll(t, cfg) {
		open := map[string]int{}
		depth, cancelled := 0, false
		for _, e := range parseTrace(t, r) {
			switch e.Type {
			case "ProviderRequestStarted":
				open[e.Payload["provider"].(string)]++
				depth++
				if depth == 2 {
					interleaved++
				}
			case "ProviderRequestFinished":
				p := e.Payload
				prov := p["provider"].(string)
				if open[prov] == 0 {
					t.Fatalf("run %s: Finished without Started: %s", r.ID, e.raw)
				}
				open[prov]--
				depth--
				total++
				n := int(p["retries"].(float64))
				if n < 0 || n > 3 {
					t.Fatalf("run %s: retries %d", r.ID, n)
				}
				if n > 0 {
					retried++
				}
				// durationMs covers at least the backoff sleeps (−10% jitter)
				minSleep := 0.0
				for k := 1; k <= n; k++ {
					minSleep += 0.9 * float64(backoff(k, 0.5))
				}
				if p["durationMs"].(float64) < minSleep {
					t.Errorf("run %s: %d retries in %vms", r.ID, n, p["durationMs"])
				}
				errMsg, hasErr := p["error"].(string)
				switch {
				case p["success"] == true && hasErr:
					t.Errorf("run %s: success with error: %s", r.ID, e.raw)
				case p["success"] == false && n == 0 && !fatalRE.MatchString(errMsg):
					t.Errorf("run %s: unretried failure with retriable message: %s", r.ID, e.raw)
				case p["success"] == false && n > 0 && (n != 3 || !retriedRE.MatchString(errMsg)):
					t.Errorf("run %s: retried failure: %s", r.ID, e.raw)
				}
			case "RunFinished":
				cancelled = e.Payload["status"] == "cancelled"
			}
		}
		if depth != 0 && !cancelled && r.File("summary.json") != nil {
			t.Errorf("run %s: %d requests never finished", r.ID, depth)
		}
	}
	rate := float64(retried) / float64(total)
	if rate < 0.15 || rate > 0.25 {
		t.Errorf("retry rate %.3f over %d requests, want 0.15..0.25", rate, total)
	}
	if interleaved == 0 {
		t.Error("no interleaved requests")
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int
		u    float64
		want int64
	}{
		{1, 0.5, 1000}, {2, 0.5, 2000}, {3, 0.5, 4000}, {4, 0.5, 8000}, {5, 0.5, 10000},
		{1, 0, 900}, {1, 0.999999, 1100}, {6, 0, 9000},
	} {
		if got := backoff(tc.n, tc.u); got != tc.want {
			t.Errorf("backoff(%d, %v) = %d, want %d", tc.n, tc.u, got, tc.want)
		}
	}
}

func TestRunEndings(t *testing.T) {
	cfg := testConfig(400)
	endings := map[string]int{}
	for _, r := range buildAll(t, cfg) {
		evs := parseTrace(t, r)
		last := evs[len(evs)-1]
		summary := r.File("summary.json")
		var man map[string]any
		if err := json.Unmarshal(r.File("manifest.json"), &man); err != nil {
			t.Fatal(err)
		}
		if last.Type != "RunFinished" {
			endings["unfinished"]++
			if summary != nil || man["finishedAt"] != nil {
				t.Errorf("run %s: unfinished but has summary or finishedAt", r.ID)
			}
			continue
		}
		status := last.Payload["status"].(string)
		endings[status]++
		var s struct {
			SchemaVersion     int
			RunID             string `json:"runId"`
			Status            string
			StopReason        string
			ThinkLevel        int
			Escalated         bool
			DurationMs        int64
			StartedAt         string
			FinishedAt        string
			SelectedProviders map[string]string
			Costs             struct {
				PerProvider map[string]map[string]any
				Totals      map[string]any
			}
			L3 *struct{ BestOfN, CandidatesGenerated int }
		}
		if err := json.Unmarshal(summary, &s); err != nil {
			t.Fatalf("run %s: summary: %v", r.ID, err)
		}
		if s.SchemaVersion != 1 || s.RunID != r.ID || s.Status != status || len(s.SelectedProviders) != 3 {
			t.Errorf("run %s: summary %+v vs RunFinished %s", r.ID, s, status)
		}
		start, _ := time.Parse(time.RFC3339Nano, s.StartedAt)
		end, _ := time.Parse(time.RFC3339Nano, s.FinishedAt)
		if end.Sub(start).Milliseconds() != s.DurationMs || s.FinishedAt < last.Timestamp {
			t.Errorf("run %s: startedAt %s finishedAt %s durationMs %d", r.ID, s.StartedAt, s.FinishedAt, s.DurationMs)
		}
		var stop string
		if len(evs) > 1 && evs[len(evs)-2].Type == "RunStopped" {
			stop = evs[len(evs)-2].Payload["reason"].(string)
			endings["stopped:"+stop]++
		}
		if stop != s.StopReason {
			t.Errorf("run %s: RunStopped %q, summary stopReason %q", r.ID, stop, s.StopReason)
		}
		hasCandidates := slices.ContainsFunc(evs, func(e event) bool { return e.Type == "CandidateGenerated" })
		if hasCandidates && (s.L3 == nil || s.L3.BestOfN != 3 || s.L3.CandidatesGenerated == 0 || s.ThinkLevel != 3) {
			t.Errorf("run %s: L3 run with summary l3=%v thinkLevel=%d", r.ID, s.L3, s.ThinkLevel)
		}
		escalated := slices.ContainsFunc(evs, func(e event) bool { return e.Type == "RunEscalated" })
		if escalated != s.Escalated {
			t.Errorf("run %s: escalated %v in trace, %v in summary", r.ID, escalated, s.Escalated)
		}
		if man["finishedAt"] == nil && !strings.Contains(last.raw, "Planning failed") {
			t.Errorf("run %s: finished run's manifest has no finishedAt", r.ID)
		}
	}
	for _, k := range []string{"success", "failure", "cancelled", "unfinished", "stopped:non_improving", "stopped:error"} {
		if endings[k] == 0 {
			t.Errorf("no run ended %s (endings %v)", k, endings)
		}
	}
}

func TestL3Steps(t *testing.T) {
	cfg := testConfig(300)
	cfg.StartAtL3Prob = 0.6
	cfg.L3ApplyFailProb = 0.4
	var diagnoses, judges int
	for _, r := range buildAll(t, cfg) {
		perStep := map[float64]int{}
		var lastErr string
		repeats := 0
		for _, e := range parseTrace(t, r) {
			switch e.Type {
			case "StepStarted":
				lastErr, repeats = "", 0
			case "CandidateGenerated":
				perStep[e.Payload["iteration"].(float64)]++
				valid := e.Payload["valid"].(bool)
				if _, ok := e.Payload["patchStats"]; ok != valid {
					t.Errorf("run %s: patchStats presence %v for valid=%v", r.ID, ok, valid)
				}
			case "PatchApplyFailed":
				if msg := e.Payload["error"].(string); msg == lastErr {
					repeats++
				} else {
					lastErr, repeats = msg, 1
				}
			case "DiagnosisStarted":
				diagnoses++
				if repeats < 2 || e.Payload["reason"] != "Repeated patch apply failure: "+lastErr {
					t.Errorf("run %s: %s after %d identical failures", r.ID, e.raw, repeats)
				}
				repeats = 0
			case "JudgeInvoked":
				judges++
			}
		}
		for step, n := range perStep {
			if n%3 != 0 {
				// a run cut short can stop mid-step
				if r.File("summary.json") != nil && !strings.Contains(string(r.File("summary.json")), `"stopReason": "error"`) &&
					!strings.Contains(string(r.File("summary.json")), `"cancelled"`) {
					t.Errorf("run %s: step %v has %d candidates", r.ID, step, n)
				}
			}
		}
	}
	if diagnoses == 0 || judges == 0 {
		t.Errorf("diagnoses=%d judges=%d", diagnoses, judges)
	}
}

func TestTornLines(t *testing.T) {
	cfg := testConfig(20)
	cfg.UnfinishedProb, cfg.TornLineProb = 1, 1
	for i := range cfg.Runs {
		r := BuildRun(cfg, i)
		trace := r.File("trace.jsonl")
		if len(trace) == 0 || trace[len(trace)-1] == '\n' {
			t.Fatalf("run %s: trace ends in a whole line", r.ID)
		}
		last := trace[bytes.LastIndexByte(trace, '\n')+1:]
		if json.Valid(last) {
			t.Errorf("run %s: torn line is valid JSON: %s", r.ID, last)
		}
		if r.File("summary.json") != nil {
			t.Errorf("run %s: torn run has a summary", r.ID)
		}
	}
}

func TestAppendJSString(t *testing.T) {
	for _, s := range []string{
		"", "plain", `say "hi"`, `C:\Users\dev`, "a\nb\r\tc", "\x00\x01\x1f\x7f", "\b\f",
		"naïve café — 日本語 ⚠️", "<script>&amp;</script>", "\u2028\u2029",
	} {
		b := appendJSString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil || got != s {
			t.Errorf("appendJSString(%q) = %s, round-trips to %q (%v)", s, b, got, err)
		}
		if strings.ContainsAny(s, "<>&\u2028") && bytes.Contains(b, []byte(`\u`)) && !strings.ContainsAny(s, "\x00\x01") {
			t.Errorf("appendJSString(%q) = %s: JSON.stringify leaves these raw", s, b)
		}
	}
}

func TestSummaryKeyOrder(t *testing.T) {
	r := BuildRun(testConfig(1), 0)
	want := []string{`"schemaVersion"`, `"runId"`, `"command"`, `"goal"`, `"repoRoot"`, `"startedAt"`,
		`"finishedAt"`, `"durationMs"`, `"status"`, `"thinkLevel"`, `"selectedProviders"`, `"budgets"`,
		`"verification"`, `"costs"`, `"perProvider"`, `"totals"`}
	s := string(r.File("summary.json"))
	pos := -1
	for _, k := range want {
		i := strings.Index(s, k)
		if i <= pos {
			t.Fatalf("summary key %s out of order:\n%s", k, s)
		}
		pos = i
	}
	if !strings.HasPrefix(s, "{\n  \"schemaVersion\": 1,\n") || !strings.HasSuffix(s, "}\n") {
		t.Errorf("summary is not JSON.stringify(v, null, 2) + newline:\n%s", s[:80])
	}
}

// File returns the named file's contents, or nil.
func (r Run) File(name string) []byte {
	for _, f := range r.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// TestPayloadBytesOnlyAddFields holds PayloadBytes to its word: requests
// get a prompt and answered ones an output of at least the size asked, and
// with those two fields taken out every line and file is the plain run's.
func TestPayloadBytesOnlyAddFields(t *testing.T) {
	cfg := testConfig(60)
	for i := range cfg.Runs {
		cfg.PayloadBytes = 0
		plain := BuildRun(cfg, i)
		cfg.PayloadBytes = 3000
		big := BuildRun(cfg, i)
		pl := strings.SplitAfter(string(plain.File("trace.jsonl")), "\n")
		bl := strings.SplitAfter(string(big.File("trace.jsonl")), "\n")
		if len(pl) != len(bl) {
			t.Fatalf("run %d: %d lines with payloads, %d without", i, len(bl), len(pl))
		}
		for n := range pl {
			if pl[n] == bl[n] {
				continue
			}
			var p, b map[string]any
			if err := json.Unmarshal([]byte(pl[n]), &p); err != nil {
				t.Fatalf("run %d line %d: %v", i, n+1, err)
			}
			if err := json.Unmarshal([]byte(bl[n]), &b); err != nil {
				t.Fatalf("run %d line %d: %v", i, n+1, err)
			}
			pay := b["payload"].(map[string]any)
			field := map[string]string{"ProviderRequestStarted": "prompt", "ProviderRequestFinished": "output"}[b["type"].(string)]
			if s, _ := pay[field].(string); field == "" || len(s) < 3000 {
				t.Fatalf("run %d line %d: a %s line differs without a %q of 3000 bytes: %.200s", i, n+1, b["type"], field, bl[n])
			}
			delete(pay, field)
			if !reflect.DeepEqual(p, b) {
				t.Fatalf("run %d line %d: differs beyond %q:\n%.300s\n%.300s", i, n+1, field, pl[n], bl[n])
			}
		}
		if len(plain.Files) != len(big.Files) {
			t.Fatalf("run %d: %d files vs %d", i, len(plain.Files), len(big.Files))
		}
		for k := 1; k < len(plain.Files); k++ {
			if !bytes.Equal(plain.Files[k].Data, big.Files[k].Data) {
				t.Errorf("run %d: %s differs with payloads", i, plain.Files[k].Name)
			}
		}
	}
}
